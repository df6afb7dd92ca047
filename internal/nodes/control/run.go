package control

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"time"

	"github.com/skeinhq/skein/node"
)

// ended returns the error of a call whose context has ended (category
// cancelled, or timeout past a deadline), so that a kind does nothing once
// its run is cancelled; nil while ctx is live.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return node.AsError(err)
	}
	return nil
}

// ifKind follows true or false.
type ifKind struct{}

func (ifKind) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	if err := ended(ctx); err != nil {
		return nil, err
	}
	ok, err := evalBool(c, "condition")
	if err != nil {
		return nil, err
	}
	return map[string]any{"result": ok, "_route": fmt.Sprint(ok)}, nil
}

func evalBool(c *node.Call, param string) (bool, error) {
	code := c.String(param)
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
	return false, node.Failf(node.CategoryTemplate, "expression", "%s %q gave %s, not true or false", param, code, node.Describe(v))
}

// switchKind follows the first case whose condition holds.
type switchKind struct{}

func (switchKind) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	if err := ended(ctx); err != nil {
		return nil, err
	}
	for _, cs := range c.List("cases") {
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

func (loopKind) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	if err := ended(ctx); err != nil {
		return nil, err
	}
	out := map[string]any{"iteration": c.Passes}
	if c.Passes == 0 {
		out["_route"] = "body"
		return out, nil
	}
	if c.String("exit") != "" {
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

func (forEachKind) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	if err := ended(ctx); err != nil {
		return nil, err
	}
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
	return nil, node.Failf(node.CategoryTemplate, "foreach_items", "%s", notAList(items))
}

// guardrailKind passes or fails by a condition. Judging with a model is done
// by the AI kinds.
type guardrailKind struct{}

func (guardrailKind) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	if err := ended(ctx); err != nil {
		return nil, err
	}
	if !c.Has("condition") {
		j, err := node.JudgeService.Get(c)
		if err != nil {
			return nil, err
		}
		b, err := node.BudgetService.Get(c)
		if err != nil {
			return nil, err
		}
		if err := b.CheckExtra(0, 0); err != nil {
			return nil, err
		}
		pass, reason, usage, err := j.JudgeValue(ctx, c.String("model"), c.String("judge"), c.Params["value"])
		if err != nil {
			if usage == nil {
				return nil, err
			}
			// What the judge was billed counts, as a failed step's.
			e := *node.AsError(err)
			e.Details = maps.Clone(e.Details)
			if e.Details == nil {
				e.Details = map[string]any{}
			}
			e.Details["token_usage"] = usage
			return nil, &e
		}
		if priced, ok := usage["priced"].(bool); ok && !priced {
			c.Emit("warning", map[string]any{"unpriced": true, "message": "the judge model has no known price, so its cost counts as $0; " +
				"set one on its llm: entry: price: {input_per_mtok: 1.0, output_per_mtok: 2.0} (US dollars per million tokens)"})
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
	route, reason := "fail", "the condition is false"
	if ok {
		route, reason = "pass", "the condition is true"
	}
	return map[string]any{"passed": ok, "reason": reason, "_route": route}, nil
}

// waitKind waits by asking the scheduler to hold its successors.
type waitKind struct{}

func (waitKind) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	if err := ended(ctx); err != nil {
		return nil, err
	}
	d := c.Duration("duration")
	u := c.String("until")
	if u == UntilSignal {
		// The scheduler holds the step until the signal, or its timeout.
		return map[string]any{"_await": UntilSignal}, nil
	}
	if u != "" {
		t, err := time.Parse(time.RFC3339, u)
		if err != nil {
			return nil, node.Failf(node.CategoryValidation, "until", "until %q is neither an RFC 3339 time nor signal: %v", u, err)
		}
		d = max(0, t.Sub(c.Now()))
	}
	return map[string]any{"waited_ms": d.Milliseconds(), "_delay_seconds": d.Seconds()}, nil
}

// failKind fails the run with its message.
type failKind struct{}

func (failKind) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	if err := ended(ctx); err != nil {
		return nil, err
	}
	msg := c.String("message")
	if msg == "" {
		msg = "node " + c.NodeID + " failed the run"
	}
	e := node.Failf(node.CategoryExecution, "fail_node", "%s", msg)
	e.Permanent = true
	return nil, e
}

// subworkflowKind runs a child workflow and outputs its outputs.
type subworkflowKind struct{}

func (subworkflowKind) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	if err := ended(ctx); err != nil {
		return nil, err
	}
	r, err := node.ChildrenService.Get(c)
	if err != nil {
		return nil, err
	}
	return r.RunChild(ctx, c.String("workflow"), c.Map("inputs"))
}
