package control

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/skeinhq/skein/node"
)

// ifKind follows true or false.
type ifKind struct{}

func (ifKind) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	ok, err := evalBool(c, "condition")
	if err != nil {
		return nil, err
	}
	return map[string]any{"result": ok, "_route": fmt.Sprint(ok)}, nil
}

func evalBool(c *node.Call, param string) (bool, error) {
	code, _ := c.Params[param].(string)
	v, err := c.Eval(code)
	if err != nil {
		return false, node.Failf(node.CategoryTemplate, "expression", "%s %q: %v", param, code, err)
	}
	switch b := v.(type) {
	case bool:
		return b, nil
	case nil:
		return false, nil
	}
	return false, node.Failf(node.CategoryTemplate, "expression", "%s %q gave %T, not true or false", param, code, v)
}

// switchKind follows the first case whose condition holds.
type switchKind struct{}

func (switchKind) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	cases, _ := c.Params["cases"].([]any)
	for _, cs := range cases {
		m, _ := cs.(map[string]any)
		name, _ := m["name"].(string)
		code, _ := m["condition"].(string)
		v, err := c.Eval(code)
		if err != nil {
			return nil, node.Failf(node.CategoryTemplate, "expression", "case %s condition %q: %v", name, code, err)
		}
		if b, ok := v.(bool); ok && b {
			return map[string]any{"case": name, "_route": name}, nil
		}
	}
	return map[string]any{"case": "default", "_route": "default"}, nil
}

// loopKind decides whether the body runs again.
type loopKind struct{}

func (loopKind) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	out := map[string]any{"iteration": c.Passes}
	if c.Passes == 0 {
		out["_route"] = "body"
		return out, nil
	}
	if code, _ := c.Params["exit"].(string); code != "" {
		done, err := evalBool(c, "exit")
		if err != nil {
			return nil, err
		}
		if done {
			out["_route"] = "done"
			return out, nil
		}
	}
	out["_route"] = "body"
	return out, nil
}

// forEachKind evaluates the items; the scheduler runs the body per item.
type forEachKind struct{}

func (forEachKind) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	items := c.Params["items"]
	switch x := items.(type) {
	case []any:
		return map[string]any{"items": x}, nil
	case nil:
		return map[string]any{"items": []any{}}, nil
	case map[string]any:
		// A normalised list output ({items, count, found}) is accepted.
		if l, ok := x["items"].([]any); ok {
			return map[string]any{"items": l}, nil
		}
	}
	// Other slices, such as the []int of a range `{{ 1..10 }}`.
	if rv := reflect.ValueOf(items); rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		l := make([]any, rv.Len())
		for i := range l {
			l[i] = rv.Index(i).Interface()
		}
		return map[string]any{"items": l}, nil
	}
	return nil, node.Failf(node.CategoryTemplate, "foreach_items", "items must be a list, got %T", items)
}

// guardrailKind passes or fails by a condition. Judging with a model is done
// by the AI kinds.
type guardrailKind struct{}

// valueJudge is what the AI kinds offer a guardrail with judge:.
type valueJudge interface {
	JudgeValue(ctx context.Context, model, prompt string, value any) (bool, string, map[string]any, error)
}

func (guardrailKind) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	if _, ok := c.Params["condition"]; !ok {
		j, ok := c.Services["llm.models"].(valueJudge)
		if !ok {
			return nil, node.Failf(node.CategoryInternal, "judge_unavailable", "guardrail with judge: needs models, which this host does not configure")
		}
		if b, ok := c.Services["budget"].(interface{ Check() error }); ok {
			if err := b.Check(); err != nil {
				return nil, err
			}
		}
		prompt, _ := c.Params["judge"].(string)
		model, _ := c.Params["model"].(string)
		pass, reason, usage, err := j.JudgeValue(ctx, model, prompt, c.Params["value"])
		if err != nil {
			return nil, err
		}
		route := "fail"
		if pass {
			route = "pass"
		}
		return map[string]any{"passed": pass, "reason": reason, "_route": route, "_token_usage": usage}, nil
	}
	ok, err := evalBool(c, "condition")
	if err != nil {
		return nil, err
	}
	route := "fail"
	if ok {
		route = "pass"
	}
	return map[string]any{"passed": ok, "_route": route}, nil
}

// waitKind waits by asking the scheduler to hold its successors.
type waitKind struct{}

func (waitKind) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	var d time.Duration
	switch v := c.Params["duration"].(type) {
	case string:
		dd, err := time.ParseDuration(v)
		if err != nil {
			return nil, node.Failf(node.CategoryValidation, "duration", "duration %q: %v", v, err)
		}
		d = dd
	case int:
		d = time.Duration(v) * time.Second
	case float64:
		d = time.Duration(v * float64(time.Second))
	}
	if u, ok := c.Params["until"].(string); ok {
		t, err := time.Parse(time.RFC3339, u)
		if err != nil {
			return nil, node.Failf(node.CategoryValidation, "until", "until %q is not an RFC 3339 time: %v", u, err)
		}
		d = max(0, t.Sub(c.Now()))
	}
	return map[string]any{"waited_ms": d.Milliseconds(), "_delay_seconds": d.Seconds()}, nil
}

// failKind fails the run with its message.
type failKind struct{}

func (failKind) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	msg, _ := c.Params["message"].(string)
	e := node.Failf(node.CategoryExecution, "fail_node", "%s", msg)
	e.Permanent = true
	return nil, e
}

// childRunner is what the engine offers subworkflow nodes.
type childRunner interface {
	RunChild(ctx context.Context, path string, inputs map[string]any) (map[string]any, error)
}

// subworkflowKind runs a child workflow and outputs its outputs.
type subworkflowKind struct{}

func (subworkflowKind) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	r, ok := c.Services["subworkflow"].(childRunner)
	if !ok {
		return nil, node.Failf(node.CategoryInternal, "subworkflow_unavailable", "this host cannot run subworkflows")
	}
	path, _ := c.Params["workflow"].(string)
	inputs, _ := c.Params["inputs"].(map[string]any)
	return r.RunChild(ctx, path, inputs)
}
