package data

import (
	"context"

	"github.com/skeinhq/skein/node"
)

// setKind outputs its rendered values and assigns its rendered vars.
type setKind struct{}

func (setKind) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, node.AsError(err) // the run is cancelled: do nothing
	}
	out := map[string]any{}
	for k, v := range c.Map("values") {
		out[k] = v
	}
	if vars := c.Map("vars"); len(vars) > 0 {
		out["_state_patch"] = vars
	}
	return out, nil
}

// templateKind renders text.
type templateKind struct{}

func (templateKind) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, node.AsError(err) // the run is cancelled: do nothing
	}
	return map[string]any{"text": c.String("text")}, nil
}
