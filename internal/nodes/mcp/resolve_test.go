package mcp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	mcpclient "github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/internal/mcp/mcptest"
	mcpkind "github.com/skeinhq/skein/internal/nodes/mcp"
	"github.com/skeinhq/skein/node"
)

// picker is a fake model that answers PickItem with a fixed pick, or an
// error, and records the items it was shown.
type picker struct {
	index    int
	err      error
	items    []any
	unpriced bool
}

func (p *picker) Priced(name string) (string, string, bool) { return name, "fake-model", !p.unpriced }

func (p *picker) PickItem(_ context.Context, _, _ string, items []any) (int, string, string, map[string]any, error) {
	p.items = items
	used := map[string]any{"input_tokens": 10, "output_tokens": 2, "total_tokens": 12, "cost_usd": 0.5, "priced": !p.unpriced}
	return p.index, "because", "fake-model", used, p.err
}

// resolveRun runs the kind once with a picker and the run's budget.
func (b *bundle) resolveRun(t *testing.T, args map[string]any, p *picker, budget node.Budget) result {
	t.Helper()
	var r result
	services := mcpclient.Service.Provide(nil, b.pool)
	services = mcpkind.PickerService.Provide(services, p)
	services = node.BudgetService.Provide(services, budget)
	call := &node.Call{
		RunID: "r", NodeID: "n", Attempt: 1, Params: map[string]any{"server": "test", "tool": "use", "arguments": args},
		Emit:   func(kind string, data map[string]any) { r.events = append(r.events, event{kind, data}) },
		Redact: engine.Redactor(nil), Now: time.Now, Services: services,
	}
	out, err := (&mcpkind.MCP{}).Run(context.Background(), call)
	r.out, r.err = out, node.AsError(err)
	return r
}

func TestResolveCases(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.AddTool("use", nil, func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
		return mcptest.Text(`{"got": ` + jsonOf(args["x"]) + `}`), nil
	})
	b.srv.AddTool("lines", nil, returns(mcptest.Text("alpha\n\n beta \ngamma")))
	b.srv.AddTool("wrapped", nil, returns(&sdk.CallToolResult{StructuredContent: map[string]any{"apps": []any{map[string]any{"name": "Mail"}}, "total": 1}}))
	b.srv.AddTool("empty", nil, returns(mcptest.Text("[]")))

	from := func(tool string) map[string]any { return map[string]any{"tool": tool} }
	cases := []struct {
		name     string
		arg      map[string]any
		index    int
		pickErr  error
		budget   node.Budget
		unpriced bool
		want     any    // the argument the tool got
		code     string // else the error's code
		message  string
		charged  bool // the error carries the pick's tokens
	}{
		{name: "text lines", arg: map[string]any{"resolve": "the second", "from": from("lines")}, index: 2, want: "beta"},
		{name: "the one list of an object, with field", arg: map[string]any{"resolve": "the email app", "from": from("wrapped"), "field": "name"}, index: 1, want: "Mail"},
		{name: "no item matches", arg: map[string]any{"resolve": "delta", "from": from("lines")}, index: 0,
			code: "resolve_no_match", message: `argument x: no item that tool "lines" listed matches "delta" (of 3; the model said: because)`, charged: true},
		{name: "a number past the list", arg: map[string]any{"resolve": "x", "from": from("lines")}, index: 9, code: "resolve_no_match", charged: true},
		{name: "a missing field", arg: map[string]any{"resolve": "the email app", "from": from("wrapped"), "field": "id"}, index: 1,
			code: "resolve_no_field", message: `argument x: the item picked for "the email app" has no field "id": {"name":"Mail"}`, charged: true},
		{name: "nothing listed", arg: map[string]any{"resolve": "x", "from": from("empty")}, code: "resolve_no_items"},
		{name: "unknown listing tool", arg: map[string]any{"resolve": "x", "from": from("list")}, code: "unknown_tool"},
		{name: "the model fails", arg: map[string]any{"resolve": "x", "from": from("lines")}, pickErr: &node.Error{Code: "llm_http", Message: "boom"}, code: "llm_http", charged: true},
		{name: "over budget", arg: map[string]any{"resolve": "x", "from": from("lines")}, budget: spentBudget{}, code: "budget"},
		{name: "an unpriced model under a cost limit", arg: map[string]any{"resolve": "x", "from": from("lines")}, index: 1, unpriced: true,
			budget: &engine.Budget{MaxCostUSD: 1}, code: "model_unpriced",
			message: "argument x: model fake-model has no known price, so limits.max_cost_usd cannot count what resolving costs; set one in the workflow: llm: {default: {…, price: {input_per_mtok: 1.0, output_per_mtok: 2.0}}}"},
		{name: "no from", arg: map[string]any{"resolve": "x"}, code: "invalid_params", message: `argument x: from must name the tool that lists the items; write {resolve: "the invoice window", from: {tool: list_windows, args: {…}, server: …}, field: id}`},
		{name: "unknown key", arg: map[string]any{"resolve": "x", "from": from("lines"), "pick": 1}, code: "invalid_params"},
		{name: "empty description", arg: map[string]any{"resolve": " ", "from": from("lines")}, code: "invalid_params"},
		{name: "from.args not a map", arg: map[string]any{"resolve": "x", "from": map[string]any{"tool": "lines", "args": "a"}}, code: "invalid_params"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			budget := tc.budget
			if budget == nil {
				budget = &engine.Budget{}
			}
			p := &picker{index: tc.index, err: tc.pickErr, unpriced: tc.unpriced}
			r := b.resolveRun(t, map[string]any{"x": tc.arg}, p, budget)
			if tc.code == "" {
				require.Nil(t, r.err)
				require.Equal(t, tc.want, r.out["got"])
				require.Equal(t, map[string]any{"input_tokens": 10, "output_tokens": 2, "total_tokens": 12, "cost_usd": 0.5, "priced": true}, r.out["_token_usage"])
				return
			}
			require.NotNil(t, r.err)
			require.Equal(t, tc.code, r.err.Code, r.err.Message)
			if tc.message != "" {
				require.Equal(t, tc.message, r.err.Message)
			}
			if tc.charged {
				require.NotNil(t, r.err.Details["token_usage"], "the pick's tokens are charged")
			} else {
				require.Nil(t, r.err.Details["token_usage"])
			}
		})
	}
}

// spentBudget is a run whose budget is spent.
type spentBudget struct{}

func (spentBudget) CheckExtra(int, float64) error {
	return &node.Error{Code: "budget", Category: "budget_exceeded", Permanent: true, Message: "spent", Err: errors.New("spent")}
}
func (spentBudget) CostLimited() bool { return true }

func jsonOf(v any) string {
	switch v := v.(type) {
	case string:
		return `"` + v + `"`
	}
	return "null"
}

// Without a cost limit an unpriced model resolves, with a warning that
// its cost counts as $0.
func TestResolveUnpricedWarns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.AddTool("use", nil, returns(mcptest.Text("ok")))
	b.srv.AddTool("lines", nil, returns(mcptest.Text("alpha\nbeta")))
	r := b.resolveRun(t, map[string]any{"x": map[string]any{"resolve": "b", "from": map[string]any{"tool": "lines"}}},
		&picker{index: 2, unpriced: true}, &engine.Budget{})
	require.Nil(t, r.err)
	warning := r.event(t, "warning")
	require.Equal(t, true, warning["unpriced"])
	require.Contains(t, warning["message"], "model fake-model has no known price, so resolving argument x counts as $0")
	require.Equal(t, "beta", r.event(t, "resolved")["value"])
}
