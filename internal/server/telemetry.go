package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/node"
)

// TracerFromEnv returns the tracer provider of skein serve: spans sent by
// OTLP over HTTP when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (the exporter reads the other
// OTEL_EXPORTER_OTLP_* variables too), else nil: no tracing. Call the
// returned shutdown, when not nil, to send the spans still buffered.
func TracerFromEnv(ctx context.Context, lookupEnv func(string) (string, bool), version string) (trace.TracerProvider, func(context.Context) error, error) {
	_, all := lookupEnv("OTEL_EXPORTER_OTLP_ENDPOINT")
	_, traces := lookupEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if !all && !traces {
		return nil, nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, err
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName("skein"), semconv.ServiceVersion(version)))
	if err != nil {
		return nil, nil, errors.Join(err, exp.Shutdown(ctx))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// telemetry sees one execution for the metrics and the traces: a span for
// the run (this execution of it) and, in it, one per node step. It passes
// everything on to the next observer.
type telemetry struct {
	next   runner.Observer
	m      *Metrics
	tracer trace.Tracer
	// trigger tells the node types that are triggers: their steps are
	// the run's start, not work, and are not timed.
	trigger func(nodeType string) bool
	ctx     context.Context
	source  string
	mu      sync.Mutex
	run     *record.Run
	span    trace.Span
	spanCtx context.Context
}

// observe makes the telemetry of an execution about to be launched; it is
// queued until its run is recorded.
func (s *Server) observe(ctx context.Context, next runner.Observer) *telemetry {
	s.cfg.Metrics.queueDepth.Inc()
	return &telemetry{next: next, m: s.cfg.Metrics, tracer: s.tracer, ctx: context.WithoutCancel(ctx), source: sourceOf(ctx),
		trigger: func(nodeType string) bool {
			spec, ok := s.registry().Lookup(nodeType)
			return ok && spec.Role == node.RoleTrigger
		}}
}

var _ runner.Observer = (*telemetry)(nil)

func (t *telemetry) Started(run *record.Run, resumed bool) {
	t.mu.Lock()
	prev, prevSpan := t.run, t.span
	t.mu.Unlock()
	if prev != nil {
		// A second execution in one launch: the first parked the run while
		// a signal for it was saved, and it was resumed at once. The first
		// ended with the run waiting.
		t.m.runsRunning.Dec()
		t.m.RunFinished(prev.Workflow, string(record.RunWaiting))
		prevSpan.SetAttributes(attribute.String("skein.run.status", string(record.RunWaiting)))
		prevSpan.End()
	} else {
		t.m.queueDepth.Dec()
	}
	t.m.runsRunning.Inc()
	t.m.RunStarted(run.Workflow, t.source)
	ctx, span := t.tracer.Start(t.ctx, "run "+run.Workflow, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String("skein.run.id", run.ID),
		attribute.String("skein.workflow", run.Workflow),
		attribute.Int("skein.run.generation", run.Generation),
		attribute.String("skein.run.trigger", run.Trigger),
		attribute.String("skein.run.source", t.source),
		attribute.Bool("skein.run.resumed", resumed),
	))
	t.mu.Lock()
	t.run, t.span, t.spanCtx = run, span, ctx
	t.mu.Unlock()
	t.next.Started(run, resumed)
}

func (t *telemetry) Step(rec record.Step) {
	switch rec.Status {
	case record.StatusSuccess, record.StatusFailed, record.StatusCancelled:
		if rec.StartedAt != nil && rec.FinishedAt != nil {
			if !rec.Cached && !rec.Pinned && !t.trigger(rec.Type) {
				t.m.NodeFinished(rec.Type, string(rec.Status), rec.FinishedAt.Sub(*rec.StartedAt))
			}
			t.nodeSpan(rec)
		}
	}
	t.next.Step(rec)
}

// nodeSpan records a finished step as a span of the run's, with its own
// start and end times (the step is seen once committed, a little later).
func (t *telemetry) nodeSpan(rec record.Step) {
	t.mu.Lock()
	ctx := t.spanCtx
	t.mu.Unlock()
	if ctx == nil {
		return
	}
	_, span := t.tracer.Start(ctx, "node "+rec.Node, trace.WithTimestamp(*rec.StartedAt), trace.WithAttributes(
		attribute.String("skein.node.id", rec.Node),
		attribute.String("skein.node.type", rec.Type),
		attribute.Int("skein.node.visit", rec.Visit),
		attribute.Int("skein.node.iteration", rec.Iteration),
		attribute.Int("skein.node.attempts", rec.Attempts),
		attribute.String("skein.node.status", string(rec.Status)),
		attribute.Bool("skein.node.cached", rec.Cached),
		attribute.Bool("skein.node.pinned", rec.Pinned),
	))
	if rec.Status == record.StatusFailed && rec.Error != nil {
		span.SetStatus(codes.Error, rec.Error.Message)
		span.SetAttributes(attribute.String("skein.error.code", rec.Error.Code), attribute.String("skein.error.category", string(rec.Error.Category)))
	}
	span.End(trace.WithTimestamp(*rec.FinishedAt))
}

func (t *telemetry) Event(ev record.TimedEvent) { t.next.Event(ev) }
func (t *telemetry) Note(n runner.Note)         { t.next.Note(n) }

// statusQueued is the status label of an execution that ended by handing
// its run to the queue's workers (runner.StartRequest.Detach).
const statusQueued = "queued"

// end counts the execution's end and ends its span; res is nil when it
// failed before its run was recorded.
func (t *telemetry) end(res *runner.Result) {
	t.mu.Lock()
	run, span := t.run, t.span
	t.mu.Unlock()
	if run == nil {
		t.m.queueDepth.Dec()
		return
	}
	t.m.runsRunning.Dec()
	status := "error" // it failed without a result
	switch {
	case res != nil && res.Detached:
		status = statusQueued
	case res != nil && res.Run != nil:
		status = string(res.Run.Status)
	}
	t.m.RunFinished(run.Workflow, status)
	span.SetAttributes(attribute.String("skein.run.status", status))
	switch {
	case res != nil && res.Run != nil && res.Run.Error != nil:
		span.SetStatus(codes.Error, res.Run.Error.Message)
	case res != nil && res.Err != nil:
		span.SetStatus(codes.Error, res.Err.Error())
	case status == string(record.RunCompleted):
		span.SetStatus(codes.Ok, "")
	}
	end := time.Now()
	if res != nil && res.Run != nil && res.Run.FinishedAt != nil {
		end = *res.Run.FinishedAt
	}
	span.End(trace.WithTimestamp(end))
}
