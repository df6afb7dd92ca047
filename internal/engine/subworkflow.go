package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// MaxDepth is how deep subworkflows may nest.
const MaxDepth = workflow.MaxChildDepth

// SubRunner runs the child workflow of a subworkflow node. The driver hands
// one to each subworkflow task through Call.Services["subworkflow"].
type SubRunner interface {
	RunChild(ctx context.Context, path string, inputs map[string]any) (map[string]any, error)
}

// ChildRun is how a child run is recorded: the runner stores each child as
// a run of its own, with its own folder.
type ChildRun struct {
	Recorder Recorder
	// ArtifactDir returns the artifacts folder of the child's node.
	ArtifactDir func(nodeID string) string
	// Files is the child's file-access policy (its own run folder and
	// files:); nil allows the child workflow's files: only.
	Files *node.Files
	// Reuse answers from an earlier execution of the same child run (the
	// parent was resumed), like Options.Reuse.
	Reuse func(ReuseQuery) (Reused, bool)
	// Finish records the child's result.
	Finish func(*Result) error
	// Signals and SignalCh bring the child's signals, like Options'.
	Signals  []Signal
	SignalCh <-chan Signal
	// Blobs keeps the child's big values in its own run folder; nil keeps
	// them with the parent's.
	Blobs *blob.Store
	// Spent is what earlier executions of the child run spent (the parent
	// was resumed); the parent's own spend includes it already.
	Spent Spent
}

// ChildFactory prepares the recording of a child run of w, given inputs
// (resolved against w's inputs).
type ChildFactory func(w *workflow.Workflow, runID string, inputs map[string]any) (*ChildRun, error)

var _ node.NamedChildren = (*subRunner)(nil)

type subRunner struct {
	rs   *runState
	task *Task
}

// RunChild loads, checks and runs a child workflow to its end. The parent
// step is waiting meanwhile, and gives its task slot back so the child can
// use it.
func (s *subRunner) RunChild(ctx context.Context, path string, inputs map[string]any) (map[string]any, error) {
	return s.run(ctx, fmt.Sprintf("%s.%s%d", s.rs.opts.RunID, s.task.Node.ID, s.task.Visit), path, inputs, true)
}

// RunNamedChild implements node.NamedChildren: the child run's id is
// <run>.<node><visit>.<name>. The step stays running meanwhile (its kind
// goes on after the child), but gives its task slot back too.
func (s *subRunner) RunNamedChild(ctx context.Context, name, path string, inputs map[string]any) (map[string]any, error) {
	return s.run(ctx, fmt.Sprintf("%s.%s%d.%s", s.rs.opts.RunID, s.task.Node.ID, s.task.Visit, name), path, inputs, false)
}

// InputSchema implements node.NamedChildren.
func (s *subRunner) InputSchema(path string) (map[string]any, string, error) {
	full, err := s.childFile(path)
	if err != nil {
		return nil, "", err
	}
	w, ds := workflow.Load(full, s.rs.d.Registry)
	if ds.HasErrors() {
		return nil, "", fmt.Errorf("child workflow %s is invalid:\n%s", path, ds.Error())
	}
	return w.InputSchema(), w.Description, nil
}

// childFile is the file of the child workflow at path, which must stay
// inside the parent's folder or its files: (workflow.ChildFile).
func (s *subRunner) childFile(path string) (string, error) {
	full, err := s.rs.plan.W.ChildFile(s.task.Node.Node, childParam(s.task.Node.Node), path)
	if err != nil {
		return "", &node.Error{Code: "subworkflow_path", Category: node.CategoryValidation, Permanent: true, Message: err.Error(), Err: err}
	}
	return full, nil
}

// childParam is the parameter of n that names its child workflows: a
// subworkflow's workflow, else an agent's tools.
func childParam(n *workflow.Node) string {
	if _, ok := n.Params["workflow"]; ok {
		return "workflow"
	}
	return "tools"
}

func (s *subRunner) run(ctx context.Context, childID, path string, inputs map[string]any, wait bool) (map[string]any, error) {
	rs := s.rs
	depth := len(rs.opts.Stack) + 1
	if depth > MaxDepth {
		return nil, &node.Error{Code: "subworkflow_depth", Category: node.CategoryValidation, Permanent: true,
			Message: fmt.Sprintf("subworkflows nest deeper than %d levels (%s)", MaxDepth, strings.Join(append(rs.opts.Stack, rs.plan.W.File), " → "))}
	}
	full, err := s.childFile(path)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(full)
	if err != nil {
		abs = full
	}
	self, _ := filepath.Abs(rs.plan.W.File)
	chain := append(append([]string(nil), rs.opts.Stack...), self)
	for _, p := range chain {
		if p == abs {
			return nil, &node.Error{Code: "subworkflow_recursion", Category: node.CategoryValidation, Permanent: true,
				Message: fmt.Sprintf("subworkflow recursion: %s → %s", strings.Join(chain, " → "), abs)}
		}
	}
	w, ds := workflow.Load(full, rs.d.Registry)
	if ds.HasErrors() {
		return nil, &node.Error{Code: "subworkflow_invalid", Category: node.CategoryValidation, Permanent: true,
			Message: fmt.Sprintf("child workflow %s is invalid:\n%s", path, ds.Error())}
	}
	in, err := w.ResolveInputs(inputs)
	if err != nil {
		return nil, &node.Error{Code: "subworkflow_inputs", Category: node.CategoryValidation, Permanent: true,
			Message: fmt.Sprintf("child workflow %s: %v", path, err)}
	}
	plan, err := NewPlan(w, rs.d.Registry)
	if err != nil {
		return nil, &node.Error{Code: "subworkflow_invalid", Category: node.CategoryValidation, Permanent: true,
			Message: fmt.Sprintf("child workflow %s: %v", path, err)}
	}
	opts := Options{
		RunID: childID, Inputs: in, Secrets: rs.opts.Secrets, Concurrency: rs.opts.Concurrency,
		Host:        Host{Services: rs.opts.Services, Child: rs.opts.Child, ChildServices: rs.opts.ChildServices},
		CancelGrace: rs.opts.CancelGrace, Hard: rs.opts.Hard, Stack: chain,
		Blobs: rs.opts.Blobs, Memory: rs.opts.Memory, Instant: rs.opts.Instant, DryRun: rs.opts.DryRun,
	}
	if rs.opts.ChildServices != nil {
		services, release := rs.opts.ChildServices(w, in)
		defer release()
		opts.Services = services
	}
	var finish func(*Result) error
	if rs.opts.Child != nil {
		cr, err := rs.opts.Child(w, childID, in)
		if err != nil {
			return nil, node.Fail(node.CategoryInternal, "subworkflow_record", err)
		}
		opts.Recorder, opts.ArtifactDir, opts.Reuse, opts.Files, finish = cr.Recorder, cr.ArtifactDir, cr.Reuse, cr.Files, cr.Finish
		opts.Signals, opts.SignalCh = cr.Signals, cr.SignalCh
		if cr.Blobs != nil {
			opts.Blobs = cr.Blobs
		}
		opts.Spent = cr.Spent
	}
	// The child's own limits hold, and what it spends counts against the
	// parent's too.
	opts.Budget = NewBudget(w.Limits.MaxTokens, w.Limits.MaxCostUSD, rs.opts.Budget, opts.Spent.Tokens, opts.Spent.CostUSD)
	if wait {
		rs.waiting(s.task)
	}
	<-rs.d.slots // give the slot back while the child runs
	res, runErr := rs.d.Execute(ctx, plan, opts)
	rs.d.slots <- struct{}{}
	if finish != nil && res != nil {
		if err := finish(res); err != nil && runErr == nil {
			runErr = err
		}
	}
	if runErr != nil {
		return nil, node.Fail(node.CategoryInternal, "subworkflow", runErr)
	}
	if len(res.Open) > 0 {
		// A dry run of the child stopped at tasks it did not call: what
		// the child gives back is not known.
		return nil, &node.Error{Code: codeOpen, Category: node.CategoryInternal, Permanent: true,
			Message: fmt.Sprintf("child workflow %s: %d node(s) would run again", path, len(res.Open))}
	}
	rs.post(func() {
		// The child's usage is already in the parent's budget; the
		// parent's totals include it too (what an earlier execution of the
		// child spent, they include already).
		rs.tokens += res.Tokens - opts.Spent.Tokens
		rs.cost += res.CostUSD - opts.Spent.CostUSD
	})
	return ChildOutput(path, childID, res.Status, res.Outputs, res.Error)
}

// ChildOutput is what a subworkflow node gives back for its child run
// that ended: the child's outputs and its id when it completed, else the
// node's error (cancelled; failed, naming the child's error; a spent
// budget, which no retry or repair mends).
func ChildOutput(path, childID string, status RunStatus, outputs map[string]any, runErr *node.Error) (map[string]any, error) {
	switch status {
	case RunCompleted:
		out := make(map[string]any, len(outputs)+1)
		for k, v := range outputs {
			out[k] = v
		}
		out["execution_id"] = childID
		return out, nil
	case RunCancelled:
		return nil, &node.Error{Code: "cancelled", Category: node.CategoryCancelled, Message: "child workflow " + path + " was cancelled"}
	}
	e := &node.Error{Code: "subworkflow_failed", Category: node.CategoryExecution, Message: fmt.Sprintf("child workflow %s failed", path),
		Details: map[string]any{"execution_id": childID}}
	if runErr != nil {
		e.Message += ": " + runErr.Message
		e.Details["category"] = runErr.Category
		if runErr.Category == CategoryBudget {
			// A spent budget is no bug of the workflow: no retry, no
			// repair.
			e.Code, e.Category, e.Permanent = "budget_exceeded", CategoryBudget, true
		}
	}
	return nil, e
}
