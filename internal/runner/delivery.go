package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/delivery"
	"github.com/skeinhq/skein/internal/engine"
	httpkind "github.com/skeinhq/skein/internal/nodes/http"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Events of a run's delivery (the workflow's delivery: block), recorded on
// the run after it ended.
const (
	EventDeliveryAttempt   = "delivery_attempt"
	EventDeliverySucceeded = "delivery_succeeded"
	EventDeliveryFailed    = "delivery_failed"
)

// DeliveryBody is what a delivery POSTs: a Standard Webhooks payload whose
// type is run.<status> and whose data is the run without its steps.
type DeliveryBody struct {
	Type      string       `json:"type"`
	Timestamp time.Time    `json:"timestamp"`
	Data      DeliveryData `json:"data"`
}

// DeliveryData is the run a delivery is about: its summary and outputs
// (secret values masked).
type DeliveryData struct {
	ExecutionID string         `json:"execution_id"`
	Workflow    string         `json:"workflow"`
	Status      string         `json:"status"`
	Trigger     string         `json:"trigger,omitempty"`
	Generation  int            `json:"generation"`
	Outputs     map[string]any `json:"outputs"`
	Error       *node.Error    `json:"error"`
	StartedAt   time.Time      `json:"started_at"`
	FinishedAt  *time.Time     `json:"finished_at"`
	DurationMS  int64          `json:"duration_ms"`
	Tokens      int            `json:"tokens"`
	CostUSD     float64        `json:"cost_usd"`
}

// deliver posts a run that ended to its workflow's delivery URL, when the
// workflow has one for the run's status, and records every attempt as an
// event of the run. It returns when the receiver took it, refused it, the
// retries ran out, or the execution was told to stop at once (Hard) or
// leave (Leave: a server shutting down).
func (r *Runner) deliver(ctx context.Context, w *workflow.Workflow, run *store.Run, j job, secrets map[string]string, o Options) {
	d := w.Delivery
	if !d.Delivers(run.Status) {
		return
	}
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		select {
		case <-o.Hard:
			stop()
		case <-o.Leave:
			stop()
		case <-ctx.Done():
		}
	}()
	redact := engine.Redactor(secrets)
	record := func(typ string, data map[string]any) {
		if err := r.st.AppendEvents(ctx, run.ID, []store.Event{{Time: r.clock.Now(), Type: typ, Data: data}}); err != nil {
			r.note(o, "problem", "recording the delivery of run %s: %v", run.ID, err)
		}
	}
	target, secret, err := deliveryTarget(d, run, j, secrets)
	if err != nil {
		record(EventDeliveryFailed, map[string]any{"attempts": 0, "error": redact(err.Error())})
		r.note(o, "problem", "delivery: %s", redact(err.Error()))
		return
	}
	shown := redact(target)
	fin := run.FinishedAt
	data := DeliveryData{ExecutionID: run.ID, Workflow: run.Workflow, Status: run.Status, Trigger: run.Trigger, Generation: run.Generation,
		Outputs: outputsOrEmpty(node.RedactValue(run.Outputs, redact)), Error: run.Error, StartedAt: run.StartedAt, FinishedAt: fin,
		Tokens: run.Tokens, CostUSD: run.CostUSD}
	if fin != nil {
		data.DurationMS = fin.Sub(run.StartedAt).Milliseconds()
	}
	body, err := json.Marshal(DeliveryBody{Type: "run." + run.Status, Timestamp: r.clock.Now().UTC(), Data: data})
	if err != nil {
		record(EventDeliveryFailed, map[string]any{"attempts": 0, "error": "encoding the delivery: " + err.Error()})
		return
	}
	msg := delivery.Message{ID: "skein_" + run.ID + "_" + strconv.Itoa(run.Generation), Body: body}
	sender := &delivery.Sender{Client: httpkind.Policy{DenyPrivate: o.DenyPrivate}.Client()}
	var last delivery.Attempt
	err = sender.Send(ctx, target, secret, msg, delivery.Policy{Retries: d.Retries, Backoff: d.RetryBackoff, Timeout: d.Timeout},
		func(a delivery.Attempt) {
			last = a
			ev := map[string]any{"attempt": a.N, "url": shown, "duration_ms": a.Duration.Milliseconds()}
			if a.Status != 0 {
				ev["status"] = a.Status
			}
			if a.Err != nil {
				ev["error"] = redact(a.Err.Error())
			}
			if a.Retry > 0 {
				ev["retry_in_ms"] = a.Retry.Milliseconds()
				r.note(o, "detail", "delivery to %s: attempt %d: %s; again in %s", shown, a.N, redact(delivery.Describe(a)), a.Retry.Round(time.Millisecond))
			}
			record(EventDeliveryAttempt, ev)
		})
	if err == nil {
		record(EventDeliverySucceeded, map[string]any{"attempts": last.N, "status": last.Status, "url": shown})
		r.note(o, "detail", "delivered to %s (%s)", shown, delivery.Describe(last))
		return
	}
	record(EventDeliveryFailed, map[string]any{"attempts": last.N, "error": redact(err.Error()), "url": shown})
	r.note(o, "problem", "delivery to %s failed: %s", shown, redact(err.Error()))
}

// deliveryTarget renders the delivery's URL and secret; they may read the
// run's inputs, its secrets, execution and trigger.
func deliveryTarget(d *workflow.Delivery, run *store.Run, j job, secrets map[string]string) (string, string, error) {
	scope := &expr.Scope{Inputs: j.inputs, Trigger: j.payload, Secrets: make(map[string]any, len(secrets)),
		Execution: map[string]any{"id": run.ID, "workflow": run.Workflow, "started_at": run.StartedAt.UTC().Format(time.RFC3339)}}
	if scope.Trigger == nil {
		scope.Trigger = map[string]any{}
	}
	for k, v := range secrets {
		scope.Secrets[k] = v
	}
	render := func(what, s string) (string, error) {
		if !expr.HasTemplate(s) {
			return s, nil
		}
		v, err := expr.RenderValue(s, scope)
		if err != nil {
			return "", fmt.Errorf("delivery %s: %w", what, err)
		}
		return node.Text(v)
	}
	target, err := render("url", d.URL)
	if err != nil {
		return "", "", err
	}
	if u, err := url.Parse(target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", fmt.Errorf("delivery url %q is not an http or https URL", target)
	}
	secret, err := render("secret", d.Secret)
	return target, secret, err
}

func outputsOrEmpty(v any) map[string]any {
	if m, ok := v.(map[string]any); ok && m != nil {
		return m
	}
	return map[string]any{}
}

// note tells the execution's observer, if any, a line about the run.
func (r *Runner) note(o Options, kind, format string, args ...any) {
	if o.Observer != nil {
		o.Observer.Note(Note{Kind: kind, Text: fmt.Sprintf(format, args...)})
	}
}
