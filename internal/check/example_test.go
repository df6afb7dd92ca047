package check_test

import (
	"context"
	"fmt"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/workflow"
)

// A run's checks are evaluated after it ends; Bar and Details show the
// verdict.
func ExampleEvaluate() {
	w := &workflow.Workflow{Nodes: []*workflow.Node{{
		ID: "fetch", Type: "http",
		Checks: []*workflow.Check{
			{Name: "status ok", Type: "http_status", OnFail: "fail", Params: map[string]any{"status": "2xx"}},
			{Name: "has items", Type: "expr", Expr: "len(fetch.body.items) > 0", OnFail: "fail"},
			{Name: "mentions beta", Type: "contains", OnFail: "warn", Params: map[string]any{"value": "beta", "target": "body.items"}},
		},
	}}}
	res := &engine.Result{Steps: []*engine.StepRecord{{
		Node: "fetch", Visit: 1, Status: engine.StatusSuccess,
		Output: map[string]any{"success": true, "status": 200, "body": map[string]any{"items": []any{"alpha"}}},
	}}}

	v := check.Evaluate(context.Background(), check.Input{Workflow: w, Result: res})
	fmt.Println(check.Bar(v, false))
	fmt.Print(check.Details(v))
	// Output:
	// PASSED WITH WARNINGS · 2 passed, 1 warning
	// ✓ fetch › status ok (http_status): status 200 matches 2xx
	// ✓ fetch › has items (expr): `len(fetch.body.items) > 0` is true
	// ⚠ fetch › mentions beta (contains): body.items does not contain "beta" (among 1 item)
}
