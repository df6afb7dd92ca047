package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestMetricsAndTraces runs two workflows through the server and reads
// what it counted at /metrics and the spans it made: one per run, and in
// it one per node.
func TestMetricsAndTraces(t *testing.T) {
	t.Parallel()
	p := newInproc(t, inprocOpts{})
	ids := []string{p.start("quick", `{"who": "A"}`), p.start("quick", `{"who": "B"}`)}
	for _, id := range ids {
		require.Equal(t, "completed", p.waitEnd(id))
	}
	p.srv.Metrics().Webhook("quick", "hook", "accepted")
	p.stop() // every execution has ended and told its telemetry

	m := p.metrics()
	for _, line := range []string{
		`skein_runs_started_total{source="api",workflow="quick"} 2`,
		`skein_runs_finished_total{status="completed",workflow="quick"} 2`,
		`skein_node_duration_seconds_count{status="success",type="template"} 2`,
		`skein_runs_running 0`,
		`skein_queue_depth 0`,
		`skein_webhook_deliveries_total{outcome="accepted",trigger="hook",workflow="quick"} 1`,
		`# TYPE skein_node_duration_seconds histogram`,
		`# TYPE go_goroutines gauge`,
	} {
		require.Contains(t, m, line+"\n")
	}
	require.NotContains(t, m, `type="trigger.manual"`, "a trigger's step is the run's start, not work to time")

	spans := p.spans.GetSpans()
	runs := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		if s.Name == "run quick" {
			runs[attr(s, "skein.run.id")] = s
		}
	}
	require.Len(t, runs, 2, "a span per run")
	for _, id := range ids {
		run, ok := runs[id]
		require.True(t, ok, "the span of run %s", id)
		require.Equal(t, "completed", attr(run, "skein.run.status"))
		require.Equal(t, "api", attr(run, "skein.run.source"))
		var nodes []string
		for _, s := range spans {
			if s.Parent.SpanID() == run.SpanContext.SpanID() {
				require.Equal(t, run.SpanContext.TraceID(), s.SpanContext.TraceID())
				require.False(t, s.EndTime.Before(s.StartTime))
				nodes = append(nodes, s.Name+" "+attr(s, "skein.node.type")+" "+attr(s, "skein.node.status"))
			}
		}
		require.ElementsMatch(t, []string{"node start trigger.manual success", "node greet template success"}, nodes)
	}
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == attribute.Key(key) {
			return kv.Value.String()
		}
	}
	return ""
}
