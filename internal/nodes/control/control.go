// Package control declares the control-flow kinds. Their behaviour lives
// in the scheduler (internal/engine); here they declare their parameters and
// handles.
package control

import (
	"fmt"
	"strings"
	"time"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/node"
)

// Kind names.
const (
	If          = "if"
	Switch      = "switch"
	Loop        = "loop"
	EndLoop     = "endloop"
	ForEach     = "foreach"
	Merge       = "merge"
	Guardrail   = "guardrail"
	Wait        = "wait"
	Fail        = "fail"
	Subworkflow = "subworkflow"
)

// maxIterations is the largest max_iterations of a loop, as large as the
// largest max_visits (workflow.MaxVisitLimit).
const maxIterations = 1_000_000

// SwitchCases returns the case names of a switch's parameters.
func SwitchCases(params map[string]any) []string {
	cases, _ := params["cases"].([]any)
	var names []string
	for _, c := range cases {
		if m, ok := c.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				names = append(names, n)
			}
		}
	}
	return names
}

// UntilSignal is the until: of a wait for a signal.
const UntilSignal = "signal"

// waitHandles: a wait for a signal may follow timeout (when the node has a
// timeout:, which the validator checks).
func waitHandles(p map[string]any) []string {
	if p["until"] == UntilSignal {
		return []string{"timeout"}
	}
	return nil
}

func checkWait(p map[string]any) []node.ParamError {
	if errs := oneOf(p, "duration", "until"); errs != nil {
		return errs
	}
	u, ok := p["until"].(string)
	if !ok || u == UntilSignal || strings.Contains(u, "{{") {
		return nil
	}
	if _, err := time.Parse(time.RFC3339, u); err != nil {
		return []node.ParamError{{Param: "until", Message: fmt.Sprintf("until %q is neither an RFC 3339 time (like 2026-01-02T15:04:05Z) nor signal", u)}}
	}
	return nil
}

// oneOf checks that exactly one of names is set; null is no value, as
// Coerce reads it.
func oneOf(p map[string]any, names ...string) []node.ParamError {
	n := 0
	for _, k := range names {
		if v, ok := p[k]; ok && v != nil {
			n++
		}
	}
	if n == 1 {
		return nil
	}
	msg := "set exactly one of " + names[0]
	for _, k := range names[1:] {
		msg += " or " + k
	}
	return []node.ParamError{{Param: names[0], Message: msg}}
}

func init() {
	node.MustRegister(node.Spec{
		Kind: If, Category: node.Control, Pure: true, Role: node.RoleBranch,
		Description: "Follows `true` or `false` by a condition.",
		Params: []node.Param{
			{Name: "condition", Type: node.String, Expr: true, Required: true, Description: "Expression; true follows the `true` handle."},
		},
		Handles: []string{"true", "false"}, FallThrough: "false",
		Outputs: []string{"result"},
	}, func() node.Kind { return ifKind{} })
	node.MustRegister(node.Spec{
		Kind: Switch, Category: node.Control, Pure: true, Role: node.RoleBranch,
		Description: "Follows the first case whose condition holds, else `default`.",
		Params: []node.Param{
			{Name: "cases", Type: node.List, Required: true, NoTemplate: true, Description: "Cases in order: [{name, condition}].", Items: []node.Param{
				{Name: "name", Type: node.String, Required: true, NoTemplate: true, Description: "The handle this case follows."},
				{Name: "condition", Type: node.String, Expr: true, Required: true, Description: "Expression; the first true case wins."},
			}},
		},
		Handles: []string{"default"}, DynamicHandles: SwitchCases, DynamicHandlesDoc: "one per case name", FallThrough: "default",
		Outputs: []string{"case"},
		Check: func(p map[string]any) []node.ParamError {
			seen := map[string]bool{}
			var errs []node.ParamError
			cases, _ := p["cases"].([]any)
			for i, c := range cases {
				m, _ := c.(map[string]any)
				n, ok := m["name"].(string)
				if !ok {
					continue // not a case: the item's own check says so
				}
				at := fmt.Sprintf("cases[%d].name", i)
				switch {
				case seen[n]:
					errs = append(errs, node.ParamError{Param: at, Message: "case name " + n + " is used twice; each case needs its own handle"})
				case n == "":
					errs = append(errs, node.ParamError{Param: at, Message: "a case needs a name: the handle its edges name with on:"})
				case n == "default":
					errs = append(errs, node.ParamError{Param: at, Message: "a case may not be called default: that handle is taken when no case matches"})
				}
				seen[n] = true
			}
			return errs
		},
	}, func() node.Kind { return switchKind{} })
	node.MustRegister(node.Spec{
		Kind: Loop, Category: node.Control, Pure: true, Role: node.RoleLoop,
		Description: "Do-while loop: runs `body`, then after each pass checks `exit`; true (or max_iterations reached) follows `done`.",
		Params: []node.Param{
			{Name: "exit", Type: node.String, Expr: true, Description: "Expression checked after each pass; true leaves the loop."},
			{Name: "max_iterations", Type: node.Int, Default: 10, Min: 1, Max: maxIterations, NoTemplate: true, Description: "The most times the body runs (read before the run starts: no template)."},
		},
		Handles: []string{"body", "done"}, FallThrough: "done",
		Outputs: []string{"iteration", "iterations"},
	}, func() node.Kind { return loopKind{} })
	node.MustRegister(node.Spec{
		Kind: EndLoop, Category: node.Control, Pure: true, Role: node.RoleLoopEnd,
		Description: "Ends one pass of a loop or foreach body and jumps back to it.",
		Params: []node.Param{
			{Name: "loop", Type: node.String, Required: true, NoTemplate: true, Description: "Id of the loop or foreach this body belongs to."},
		},
		Handles: []string{},
		Outputs: []string{}, // what the body made is its loop's output
	}, nil)
	node.MustRegister(node.Spec{
		Kind: ForEach, Category: node.Control, Pure: true, Role: node.RoleForEach,
		Description: "Runs `body` once per item, then follows `done`; its output is the list of body results.",
		Params: []node.Param{
			{Name: "items", Type: node.Any, Required: true, Description: "A list, usually a template such as \"{{ fetch.body.items }}\"."},
			{Name: "concurrency", Type: node.Int, Default: 1, Min: 1, Max: 10000, NoTemplate: true, Description: "How many items run at once (1 to 10,000; read before the run starts: no template)."},
		},
		Handles: []string{"body", "done"}, FallThrough: "done",
		Check: func(p map[string]any) []node.ParamError {
			if msg := itemsProblem(p["items"]); msg != "" {
				return []node.ParamError{{Param: "items", Message: msg}}
			}
			return nil
		},
	}, func() node.Kind { return forEachKind{} })
	node.MustRegister(node.Spec{
		Kind: Merge, Category: node.Control, Pure: true, Role: node.RoleJoin,
		Description: "Joins branches: waits for all live inputs (or the first, with wait: any).",
		Params: []node.Param{
			{Name: "wait", Type: node.String, Default: "all", Enum: []string{"all", "any"}, NoTemplate: true, Description: "all: every live input, whose outputs are the node's inputs; any: the first, and no inputs (which came first depends on timing)."},
		},
		Outputs: []string{"inputs"},
	}, nil)
	node.MustRegister(node.Spec{
		Kind: Guardrail, Category: node.Control, Role: node.RoleBranch,
		Description: "Follows `pass` or `fail` by a condition or an LLM judge.",
		Params: []node.Param{
			{Name: "condition", Type: node.String, Expr: true, Description: "Expression; true passes."},
			{Name: "judge", Type: node.String, Description: "A prompt for the judge model, asking whether `value` passes."},
			{Name: "value", Type: node.Any, Description: "What the judge looks at."},
			{Name: "model", Type: node.String, NoTemplate: true, Ref: node.RefModel, Description: "Name of a model from llm: (default: judge, then default)."},
		},
		Handles: []string{"pass", "fail"}, FallThrough: "pass",
		Outputs: []string{"passed", "reason"},
		Check:   func(p map[string]any) []node.ParamError { return oneOf(p, "condition", "judge") },
	}, func() node.Kind { return guardrailKind{} })
	node.MustRegister(node.Spec{
		Kind: Wait, Category: node.Control, Role: node.RoleWait,
		Description: "Waits for a duration, until a time, or until a signal (`until: signal`: `skein signal` or " +
			"POST /api/runs/{id}/signals/{node}; the signal's data is the output `data`; with the node's own " +
			"`timeout:` it follows `timeout` when no signal came in time). A long wait outlives the process.",
		Params: []node.Param{
			{Name: "duration", Type: node.Duration, Description: "How long to wait, e.g. 30s."},
			{Name: "until", Type: node.String, Description: "An RFC 3339 time to wait for, or `signal` to wait for a signal."},
		},
		DynamicHandles:    waitHandles,
		DynamicHandlesDoc: "`timeout` (with `until: signal` and the node's own `timeout:`)",
		Outputs:           []string{"waited_ms", "data", "signaled_at", "timed_out"},
		Check:             checkWait,
	}, func() node.Kind { return waitKind{} })
	node.MustRegister(node.Spec{
		Kind: Fail, Category: node.Control, Pure: true, Role: node.RoleFail,
		Description: "Fails the run with a message.",
		Params: []node.Param{
			{Name: "message", Type: node.String, Required: true, Description: "The error message."},
		},
		Handles: []string{},
		Outputs: []string{}, // it fails: error is all it has
	}, func() node.Kind { return failKind{} })
	node.MustRegister(node.Spec{
		Kind: Subworkflow, Category: node.Control, Role: node.RoleSubworkflow,
		Description: "Runs another workflow as a child run; its outputs become this step's output.",
		Params: []node.Param{
			{Name: "workflow", Type: node.String, Required: true, NoTemplate: true, Ref: node.RefWorkflow, Description: "Path of the child workflow file, relative to this one; it must stay inside this file's folder or a folder of `files:`, symlinks resolved."},
			{Name: "inputs", Type: node.Map, Description: "The child's inputs (templates)."},
		},
		Routes: true,
	}, func() node.Kind { return subworkflowKind{} })
}

// itemsProblem is what is wrong with a foreach's items as written, "" when
// nothing is known to be: a list, null (no items), a list output
// ({items: [...]}) or a template, which only the run knows.
func itemsProblem(items any) string {
	switch x := items.(type) {
	case nil, []any:
		return ""
	case string:
		if expr.HasTemplate(x) {
			return ""
		}
	case map[string]any:
		if _, ok := x["items"].([]any); ok {
			return ""
		}
	}
	return notAList(items)
}

// notAList is the problem of items that are no list.
func notAList(items any) string {
	return fmt.Sprintf("items must be a list, or a template that makes one such as \"{{ fetch.body.items }}\", not %s", node.Describe(items))
}
