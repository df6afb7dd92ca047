package check

import (
	"context"
	"fmt"
	"github.com/skeinhq/skein/expr"
	"path/filepath"
	"time"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/workflow"
)

// Verify runs the evaluation pass of a finished run and writes its
// verdict files in its folder dir; it returns nil when the workflow has no
// checks. run is the run's scope (Input.Run). events gives a node's
// events (durable.NodeEvents). The verdict
// it returns and writes has the run's secrets masked with red: a judge may
// quote one it read in a screenshot.
func Verify(ctx context.Context, w *workflow.Workflow, res *engine.Result, run *expr.Scope, dir string, events func(string) []map[string]any, judge Judge, red *redact.Redactor) (*RunVerdict, error) {
	if !Has(w) {
		return nil, nil
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	v := Evaluate(ctx, Input{
		Workflow: w, Result: res, Run: run,
		Events: events,
		Images: func(node string) []string {
			files, _ := filepath.Glob(filepath.Join(dir, node, "artifacts", "*.png"))
			jpgs, _ := filepath.Glob(filepath.Join(dir, node, "artifacts", "*.jp*g"))
			return append(files, jpgs...)
		},
		Files: runlog.Files(w, dir),
		Judge: judge,
		// The judge spends from the run's budget.
		Budget: engine.NewBudget(w.Limits.MaxTokens, w.Limits.MaxCostUSD, nil, res.Tokens, res.CostUSD),
	})
	v, err := redact.Into(red, v)
	if err != nil {
		return nil, fmt.Errorf("masking secrets in the verdict: %w", err)
	}
	if err := Write(dir, v, red); err != nil {
		return v, err
	}
	return v, nil
}

// Has reports whether any node of w has checks or an expect:.
func Has(w *workflow.Workflow) bool {
	for _, n := range w.Nodes {
		if len(n.Checks) > 0 || n.Expect != "" {
			return true
		}
	}
	return false
}

// Events turns a verdict into check_verdict events.
func Events(v *RunVerdict, now time.Time) []engine.TimedEvent {
	var out []engine.TimedEvent
	for _, n := range v.Nodes {
		for _, c := range n.Checks {
			out = append(out, engine.TimedEvent{Time: now, Event: engine.Event{
				Type: "check_verdict", Node: n.Node, Visit: n.Visit,
				Data: map[string]any{"check": c.Check, "type": c.Type, "verdict": string(c.Verdict), "reasoning": c.Reasoning},
			}})
		}
	}
	return out
}
