package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
)

// TestDriverMock answers nodes from a test's mocks: a mocked block node
// never runs (its gate is never opened), a mocked route picks the branch,
// a mocked usage counts, and a mocked error fails the node.
func TestDriverMock(t *testing.T) {
	t.Parallel()
	src := wf(`
  - {id: start, type: trigger.manual}
  - {id: fetch, type: block, gate: never}
  - {id: pick, type: act, route: "no"}
  - {id: yes, type: act, out: {v: 1}}
  - {id: "no", type: act, out: {v: 2}}
`, `
  - {from: start, to: fetch}
  - {from: fetch, to: pick}
  - {from: pick, to: "yes", on: "yes"}
  - {from: pick, to: "no", on: "no"}
`)
	tests := []struct {
		name string
		mock func(q engine.ReuseQuery) (engine.Reused, bool)
		want engine.RunStatus
		ran  string
	}{
		{name: "output and route", want: engine.RunCompleted, ran: "yes", mock: func(q engine.ReuseQuery) (engine.Reused, bool) {
			switch q.Node {
			case "fetch":
				return engine.Reused{Mocked: true, Output: map[string]any{"status": 200},
					Directives: map[string]any{"_token_usage": map[string]any{"total_tokens": 7, "cost_usd": 0.5}}}, true
			case "pick":
				return engine.Reused{Mocked: true, Directives: map[string]any{"_route": "yes"}}, true
			}
			return engine.Reused{}, false
		}},
		{name: "error", want: engine.RunFailed, mock: func(q engine.ReuseQuery) (engine.Reused, bool) {
			if q.Node == "fetch" {
				return engine.Reused{Mocked: true, Err: &node.Error{Code: "mock", Category: node.CategoryExecution, Message: "down"}}, true
			}
			return engine.Reused{}, false
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupDriver(t, src)
			res := result(t, b.execute(context.Background(), engine.Options{Host: engine.Host{Reuse: tt.mock}}))
			require.Equal(t, tt.want, res.Status, "%v", res.Error)
			f := stepsOf(res, "fetch")[0]
			require.True(t, f.Mocked, "fetch is marked mocked")
			require.False(t, f.Cached || f.Pinned)
			if tt.want == engine.RunFailed {
				require.Equal(t, "down", f.Error.Message)
				return
			}
			require.Equal(t, 200, f.Output["status"])
			require.Equal(t, 7, res.Tokens)
			require.Equal(t, 0.5, res.CostUSD)
			require.Equal(t, engine.StatusSuccess, stepsOf(res, tt.ran)[0].Status)
			require.Equal(t, engine.StatusSkipped, stepsOf(res, "no")[0].Status)
		})
	}
}
