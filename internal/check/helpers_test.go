package check_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// fakeJudge is a hand-written Judge: it records every request and answers
// with the reply scripted for that call, or, past the script, passes every
// check it is asked about.
type fakeJudge struct {
	mu       sync.Mutex
	requests []check.JudgeRequest
	// replies[i] answers call i; a nil func passes everything.
	replies []func(req check.JudgeRequest) ([]check.JudgeVerdict, error)
}

var _ check.Judge = (*fakeJudge)(nil)

func (f *fakeJudge) Judge(_ context.Context, req check.JudgeRequest) ([]check.JudgeVerdict, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := len(f.requests)
	f.requests = append(f.requests, req)
	if call < len(f.replies) && f.replies[call] != nil {
		return f.replies[call](req)
	}
	return answerAll(req, "pass"), nil
}

func (f *fakeJudge) calls() []check.JudgeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]check.JudgeRequest(nil), f.requests...)
}

// answerAll gives every check of req the same verdict.
func answerAll(req check.JudgeRequest, verdict string) []check.JudgeVerdict {
	out := make([]check.JudgeVerdict, len(req.Checks))
	for i, c := range req.Checks {
		out[i] = check.JudgeVerdict{CheckName: c.Name, Verdict: verdict, Reasoning: fmt.Sprintf("%s: %s", c.Name, verdict)}
	}
	return out
}

// reply returns a scripted reply that always gives vs.
func reply(vs ...check.JudgeVerdict) func(check.JudgeRequest) ([]check.JudgeVerdict, error) {
	return func(check.JudgeRequest) ([]check.JudgeVerdict, error) { return vs, nil }
}

// chk returns a check with on_fail fail.
func chk(typ, name string, params map[string]any) *workflow.Check {
	return &workflow.Check{Name: name, Type: typ, OnFail: "fail", Params: params}
}

func exprChk(name, src string) *workflow.Check {
	return &workflow.Check{Name: name, Type: "expr", Expr: src, OnFail: "fail"}
}

func warn(c *workflow.Check) *workflow.Check {
	c.OnFail = "warn"
	return c
}

func nd(id string, checks ...*workflow.Check) *workflow.Node {
	return &workflow.Node{ID: id, Type: "shell", Checks: checks}
}

func withExpect(n *workflow.Node, text string) *workflow.Node {
	n.Expect = text
	return n
}

// ok is a successful step; its output carries success as the scheduler
// adds it.
func ok(nodeID string, order, visit int, out map[string]any) *engine.StepRecord {
	o := map[string]any{"success": true}
	for k, v := range out {
		o[k] = v
	}
	return &engine.StepRecord{StepOrder: order, Node: nodeID, Type: "shell", Status: engine.StatusSuccess, Visit: visit, Output: o}
}

func failed(nodeID string, order, visit int, msg string) *engine.StepRecord {
	return &engine.StepRecord{
		StepOrder: order, Node: nodeID, Type: "shell", Status: engine.StatusFailed, Visit: visit,
		Output: map[string]any{"success": false, "error": msg},
		Error:  &node.Error{Code: "exit_status", Category: node.CategoryExecution, Message: msg},
	}
}

func skipped(nodeID string, order, visit int) *engine.StepRecord {
	return &engine.StepRecord{StepOrder: order, Node: nodeID, Type: "shell", Status: engine.StatusSkipped, Visit: visit}
}

func result(steps ...*engine.StepRecord) *engine.Result {
	return &engine.Result{RunID: "run1", Workflow: "demo", Status: engine.RunCompleted, Steps: steps}
}

// nodeVerdict returns the verdict of one node.
func nodeVerdict(t *testing.T, v *check.RunVerdict, id string) check.NodeVerdict {
	t.Helper()
	for _, nv := range v.Nodes {
		if nv.Node == id {
			return nv
		}
	}
	require.Failf(t, "no verdict", "the verdict has no node %q: %+v", id, v.Nodes)
	return check.NodeVerdict{}
}

// only returns the verdict of the one check of the one node of v.
func only(t *testing.T, v *check.RunVerdict) check.CheckResult {
	t.Helper()
	require.Len(t, v.Nodes, 1, "one checked node")
	require.Len(t, v.Nodes[0].Checks, 1, "one check")
	return v.Nodes[0].Checks[0]
}

// verdicts lists node:check=verdict for a compact comparison.
func verdicts(v *check.RunVerdict) []string {
	var out []string
	for _, nv := range v.Nodes {
		for _, r := range nv.Checks {
			out = append(out, fmt.Sprintf("%s:%s=%s", nv.Node, r.Check, r.Verdict))
		}
	}
	return out
}
