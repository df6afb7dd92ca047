package queue

import (
	"context"
	"fmt"
	"maps"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Child runs the child workflow of a subworkflow node of a queued run in
// the worker's process that runs the node: the child is a run of its own
// (id <parent>.<node><visit>, its parent recorded), executed here as a
// local run is (Run), and the node's output is its outputs. A node taken
// again after its worker stopped finds the child: a completed one answers
// at once, another is resumed, reusing what it completed.
type Child struct {
	// Run executes the child run id of cw with inputs in, or goes on
	// with the one a stopped worker left, and returns its final record.
	Run      func(ctx context.Context, cw *workflow.Workflow, id string, in map[string]any) (*store.Run, error)
	Registry *node.Registry
	ParentID string
	// Parent is the parent workflow: a child's path is read relative to
	// its file's folder, so the worker needs the files there, and must
	// stay inside it or its files: (workflow.ChildFile).
	Parent *workflow.Workflow
	// Node is the parent's node that runs the child.
	Node   *workflow.Node
	NodeID string
	Visit  int
	// Waiting marks the parent step waiting while its child runs, as a
	// local run's is (engine's subRunner).
	Waiting func()
}

var _ node.NamedChildren = (*Child)(nil)

// RunChild implements node.Children.
func (c *Child) RunChild(ctx context.Context, path string, inputs map[string]any) (map[string]any, error) {
	return c.runChild(ctx, fmt.Sprintf("%s.%s%d", c.ParentID, c.NodeID, c.Visit), path, inputs, true)
}

// RunNamedChild implements node.NamedChildren: the child's id is
// <parent>.<node><visit>.<name>. The step stays running meanwhile (its
// kind goes on after the child), as a local run's does.
func (c *Child) RunNamedChild(ctx context.Context, name, path string, inputs map[string]any) (map[string]any, error) {
	return c.runChild(ctx, fmt.Sprintf("%s.%s%d.%s", c.ParentID, c.NodeID, c.Visit, name), path, inputs, false)
}

// InputSchema implements node.NamedChildren.
func (c *Child) InputSchema(path string) (map[string]any, string, error) {
	file, err := c.file(path)
	if err != nil {
		return nil, "", err
	}
	cw, ds := workflow.Load(file, c.Registry)
	if ds.HasErrors() {
		return nil, "", fmt.Errorf("child workflow %s is invalid on this worker:\n%s", path, ds.Error())
	}
	return cw.InputSchema(), cw.Description, nil
}

func (c *Child) file(path string) (string, error) {
	param := "tools"
	if _, ok := c.Node.Params["workflow"]; ok || c.Node == nil {
		param = "workflow"
	}
	full, err := c.Parent.ChildFile(c.Node, param, path)
	if err != nil {
		return "", &node.Error{Code: "subworkflow_path", Category: node.CategoryValidation, Permanent: true, Message: err.Error(), Err: err}
	}
	return full, nil
}

func (c *Child) runChild(ctx context.Context, id, path string, inputs map[string]any, wait bool) (map[string]any, error) {
	file, err := c.file(path)
	if err != nil {
		return nil, err
	}
	cw, ds := workflow.Load(file, c.Registry)
	if ds.HasErrors() {
		return nil, &node.Error{Code: "subworkflow_invalid", Category: node.CategoryValidation, Permanent: true,
			Message: fmt.Sprintf("child workflow %s is invalid on this worker:\n%s", path, ds.Error())}
	}
	in, err := cw.ResolveInputs(inputs)
	if err != nil {
		return nil, &node.Error{Code: "subworkflow_inputs", Category: node.CategoryValidation, Permanent: true,
			Message: fmt.Sprintf("child workflow %s: %v", path, err)}
	}
	if wait && c.Waiting != nil {
		c.Waiting()
	}
	res, err := c.Run(ctx, cw, id, in)
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
