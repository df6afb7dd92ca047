package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// queueChild runs the child workflow of a subworkflow node of a queued run
// in the worker's process that runs the node: the child is a run of its
// own (id <parent>.<node><visit>, its parent recorded), executed here as a
// local run is, and the node's output is its outputs. A node taken again
// after its worker stopped finds the child: a completed one answers at
// once, another is resumed, reusing what it completed.
type queueChild struct {
	r        *Runner
	parentID string
	// parentFile is the parent workflow's file: a child's path is read
	// relative to its folder, so the worker needs the files there.
	parentFile string
	nodeID     string
	visit      int
	opts       Options
	// budget is the parent run's: the child's own limits hold, and what
	// it spends counts against the parent's too.
	budget *engine.Budget
	// waiting marks the parent step waiting while its child runs, as a
	// local run's is (engine's subRunner).
	waiting func()
}

var _ node.NamedChildren = (*queueChild)(nil)

// RunChild implements node.Children.
func (c *queueChild) RunChild(ctx context.Context, path string, inputs map[string]any) (map[string]any, error) {
	return c.runChild(ctx, fmt.Sprintf("%s.%s%d", c.parentID, c.nodeID, c.visit), path, inputs, true)
}

// RunNamedChild implements node.NamedChildren: the child's id is
// <parent>.<node><visit>.<name>. The step stays running meanwhile (its
// kind goes on after the child), as a local run's does.
func (c *queueChild) RunNamedChild(ctx context.Context, name, path string, inputs map[string]any) (map[string]any, error) {
	return c.runChild(ctx, fmt.Sprintf("%s.%s%d.%s", c.parentID, c.nodeID, c.visit, name), path, inputs, false)
}

// InputSchema implements node.NamedChildren.
func (c *queueChild) InputSchema(path string) (map[string]any, string, error) {
	cw, ds := workflow.Load(c.file(path), c.r.cfg.Registry)
	if ds.HasErrors() {
		return nil, "", fmt.Errorf("child workflow %s is invalid on this worker:\n%s", path, ds.Error())
	}
	return cw.InputSchema(), cw.Description, nil
}

func (c *queueChild) file(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(filepath.Dir(c.parentFile), path)
}

func (c *queueChild) runChild(ctx context.Context, id, path string, inputs map[string]any, wait bool) (map[string]any, error) {
	cw, ds := workflow.Load(c.file(path), c.r.cfg.Registry)
	if ds.HasErrors() {
		return nil, &node.Error{Code: "subworkflow_invalid", Category: node.CategoryValidation, Permanent: true,
			Message: fmt.Sprintf("child workflow %s is invalid on this worker:\n%s", path, ds.Error())}
	}
	for _, n := range cw.Nodes {
		if spec, ok := c.r.cfg.Registry.Lookup(n.Type); ok && spec.Role == node.RoleSubworkflow {
			return nil, &node.Error{Code: "subworkflow_depth", Category: node.CategoryValidation, Permanent: true,
				Message: fmt.Sprintf("child workflow %s has a subworkflow node (%s): queued runs run one level of subworkflows", path, n.ID)}
		}
	}
	in, err := cw.ResolveInputs(inputs)
	if err != nil {
		return nil, &node.Error{Code: "subworkflow_inputs", Category: node.CategoryValidation, Permanent: true,
			Message: fmt.Sprintf("child workflow %s: %v", path, err)}
	}
	if wait && c.waiting != nil {
		c.waiting()
	}
	res, err := c.run(ctx, cw, id, in)
	if err != nil {
		return nil, node.Fail(node.CategoryInternal, "subworkflow", err)
	}
	out, err := engine.ChildOutput(path, id, engine.RunStatus(res.Status), res.Outputs, res.Error)
	// What the child spent, all its executions, is the node's: the parent
	// run's history counts it (no attempt before this one recorded it).
	usage := map[string]any{"total_tokens": res.Tokens, "cost_usd": res.CostUSD}
	if err != nil {
		e := *node.AsError(err)
		e.Details = maps.Clone(e.Details)
		if e.Details == nil {
			e.Details = map[string]any{}
		}
		e.Details["token_usage"] = usage
		return nil, &e
	}
	out["_token_usage"] = usage
	return out, nil
}

// run runs the child run id, or goes on with the one a stopped worker
// left, and returns its final record.
func (c *queueChild) run(ctx context.Context, cw *workflow.Workflow, id string, in map[string]any) (*store.Run, error) {
	// The node's context ends when its run's cancel stops running nodes,
	// or its worker stops them: the child's running nodes stop with it,
	// as a local child's stop with its parent's (Options.Hard).
	o := c.opts
	o.Hard = ctx.Done()
	prev, err := c.r.st.Run(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		res, err := c.r.execute(ctx, job{w: cw, inputs: in, runID: id, parent: c.parentID, budget: c.budget}, o)
		if err != nil {
			return nil, err
		}
		return res.Run, nil
	case err != nil:
		return nil, err
	case engine.RunStatus(prev.Status) == engine.RunCompleted:
		return prev, nil
	}
	if live, err := c.r.liveOwner(prev); err != nil {
		return nil, err
	} else if live {
		return nil, ownedError(prev)
	}
	hist, err := c.r.st.StepHistory(ctx, id)
	if err != nil {
		return nil, err
	}
	claimed, err := c.r.claim(ctx, prev)
	if err != nil {
		return nil, err
	}
	// The parent's history does not hold what earlier executions of the
	// child spent; the child goes on from it.
	spent := engine.Spent{Tokens: claimed.Tokens, CostUSD: claimed.CostUSD}
	c.budget.Add(spent.Tokens, spent.CostUSD)
	res, err := c.r.execute(ctx, job{w: cw, inputs: claimed.Inputs, runID: id, parent: c.parentID,
		resume: claimed, reuse: durable.ForResume(hist), wakes: durable.Wakes(hist), spent: spent, budget: c.budget}, o)
	if err != nil {
		return nil, err
	}
	return res.Run, nil
}
