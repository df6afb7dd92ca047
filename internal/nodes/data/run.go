package data

import (
	"context"

	"github.com/skeinhq/skein/node"
)

// setKind outputs its rendered values and assigns its rendered vars.
type setKind struct{}

func (setKind) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	out := map[string]any{}
	if vals, ok := c.Params["values"].(map[string]any); ok {
		for k, v := range vals {
			out[k] = v
		}
	}
	if vars, ok := c.Params["vars"].(map[string]any); ok && len(vars) > 0 {
		out["_state_patch"] = vars
	}
	return out, nil
}

// templateKind renders text.
type templateKind struct{}

func (templateKind) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	text, _ := c.Params["text"].(string)
	return map[string]any{"text": text}, nil
}
