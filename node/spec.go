package node

import (
	"fmt"
	"sort"
)

// Type is the type of a parameter value as written in a workflow file.
type Type string

// Parameter types.
const (
	String   Type = "string"   // a string; a template unless the parameter is an Expr
	Int      Type = "integer"  // a whole number
	Number   Type = "number"   // any number
	Bool     Type = "boolean"  // true or false
	Duration Type = "duration" // a Go duration string such as "1m30s"
	Strings  Type = "strings"  // a list of strings
	List     Type = "list"     // a list of anything
	Map      Type = "map"      // a map with string keys
	Any      Type = "any"      // anything
)

// Category groups kinds for documentation and for the engine.
type Category string

// Categories of node kinds.
const (
	Trigger Category = "trigger"
	Control Category = "control"
	Data    Category = "data"
	Action  Category = "action"
	AI      Category = "ai"
)

// Role is what a kind is to the engine, the validator and the resume
// planner: they look at a kind's role, never at its name. Most kinds are
// actions (the zero Role). A role implies the parameters the engine reads
// itself, named below.
type Role string

// Roles of kinds.
const (
	RoleAction      Role = ""            // runs, then follows its default or error handle
	RoleTrigger     Role = "trigger"     // starts a run; its output is the run's payload
	RoleBranch      Role = "branch"      // routes to one of its handles (if, switch, guardrail)
	RoleLoop        Role = "loop"        // repeats a body; reads max_iterations
	RoleForEach     Role = "foreach"     // runs a body per item; reads concurrency
	RoleLoopEnd     Role = "loop_end"    // closes the body of the loop its `loop` parameter names
	RoleJoin        Role = "join"        // waits for its inputs; reads wait (all or any)
	RoleFail        Role = "fail"        // fails the run
	RoleWait        Role = "wait"        // holds its successors for a while
	RoleSubworkflow Role = "subworkflow" // runs a child workflow, given node.ChildrenService
)

// Ref says what a parameter's value names, so that validation checks it
// against the workflow.
type Ref string

// Things a parameter may name.
const (
	RefNone      Ref = ""
	RefMCPServer Ref = "mcp_server" // a server of mcp_servers:
	RefMCPTools  Ref = "mcp_tools"  // server.tool or server.* patterns
	RefModel     Ref = "model"      // a model of llm:
	RefWorkflow  Ref = "workflow"   // a workflow file, relative to this one
)

// Param declares one parameter of a kind.
type Param struct {
	Name        string
	Type        Type
	Required    bool
	Default     any
	Description string
	// Enum lists the allowed values of a String parameter.
	Enum []string
	// Min and Max bound an Int parameter, both included, when Max is not
	// 0: validation refuses other numbers and the JSON Schema states them.
	Min, Max int
	// Expr marks a bare expression (condition, exit): it is compiled, not
	// rendered as a template.
	Expr bool
	// Items describes the elements of a List whose elements are objects
	// with declared fields (for example the cases of a switch).
	Items []Param
	// Ref says what the value names (a server, a model, a file), for
	// validation to check.
	Ref Ref
	// Template reports whether a string value may contain {{ }} parts.
	// Every String and Strings parameter is a template unless NoTemplate is
	// set.
	NoTemplate bool
}

// Handles of the default action shape.
const (
	HandleDefault = ""
	HandleError   = "error"
)

// Spec is everything Skein knows about a kind before running it.
type Spec struct {
	Kind     string
	Category Category
	// Role is what the kind is to the engine (RoleAction when zero).
	Role Role
	// StartsByDefault marks a trigger that starts a run when none is
	// named (the manual trigger).
	StartsByDefault bool
	// Pure marks a kind whose run has no effect outside the run: it
	// computes its output from its parameters (set, template, if…).
	// Running it twice is harmless, so a queue worker does not record
	// that it began before running it. A pure kind does no I/O and does
	// not block: a local run calls it on its scheduling goroutine, not a
	// goroutine of its own, so it must return quickly without waiting for
	// its context, and call Call.Emit only before it returns.
	Pure        bool
	Description string
	Params      []Param
	// Outputs lists the output ports the kind promises. When it is not
	// nil, a template reference to another port of a node of this kind is
	// a validation error.
	Outputs []string
	// Handles lists the handles an out-edge may carry. Nil means the
	// action shape: the default handle, and `error` with on_error: route.
	Handles []string
	// DynamicHandles computes the handles from the node's parameters (the
	// case names of a switch); its result is added to Handles.
	DynamicHandles func(params map[string]any) []string
	// DynamicHandlesDoc says in a few words which handles DynamicHandles
	// adds, for the reference docs ("one per case name").
	DynamicHandlesDoc string
	// FallThrough is the handle followed when the node is disabled.
	FallThrough string
	// OutputsFrom computes further declared ports from the parameters (the
	// keys of a set node's values).
	OutputsFrom func(params map[string]any) []string
	// Check validates parameters beyond their declared types (a cron
	// expression, one-of rules). Values that hold templates are not known
	// before the run and should be let through. It gets the parameters as
	// written; a ParamError with Warning set is reported as a warning.
	Check func(params map[string]any) []ParamError
	// Routes reports that the kind may choose any handle at run time by
	// returning _route, so edges with other labels are allowed.
	Routes bool
	// RoutesWhen, when set on a kind that Routes, reports whether a node
	// with these parameters (as written) may return _route at all: a set
	// node whose values are a map without a _route key never does. The
	// validator's cycle check counts only such nodes as a way a cycle may
	// end that no edge was written for.
	RoutesWhen func(params map[string]any) bool
	// RunsChildren marks a kind that may run child workflows without the
	// subworkflow role (an agent whose tools are workflows): the host gives
	// it ChildrenService, whose value also implements NamedChildren.
	RunsChildren bool
	// Parks, when set, reports whether a node of this kind with these
	// parameters (as written) may park its step waiting for a signal, as
	// a wait node does: its Run returns the _await directive ("signal"),
	// _await_name (what it waits for, told from the step's other waits:
	// its signal is recorded as <node>#<name>) and _resume (any state to
	// go on from). The signal, when it comes, runs the kind again
	// for the same step with Call.Resume set (an agent whose tool call
	// needs a person's approval).
	Parks func(params map[string]any) bool
}

// Param returns the declared parameter with the given name.
func (s *Spec) Param(name string) (Param, bool) {
	for _, p := range s.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// ParamError is a problem with one parameter, found by Spec.Check. Param
// may name an element, as in "command[2]" or "cases[1].name".
type ParamError struct {
	Param   string
	Message string
	// Warning marks a risk rather than a mistake: it is reported, but the
	// workflow stays valid.
	Warning bool
}

// DeclaredOutputs returns the output ports a node of this kind with these
// parameters promises, or nil when the kind does not declare them.
func (s *Spec) DeclaredOutputs(params map[string]any) []string {
	if s.Outputs == nil && s.OutputsFrom == nil {
		return nil
	}
	out := append(make([]string, 0, len(s.Outputs)), s.Outputs...) // none declared is not nil
	if s.OutputsFrom != nil {
		out = append(out, s.OutputsFrom(params)...)
	}
	return out
}

// AllHandles returns the handles a node of this kind with the given
// parameters may use, in a stable order.
func (s *Spec) AllHandles(params map[string]any) []string {
	var hs []string
	if s.Handles == nil {
		hs = []string{HandleDefault, HandleError}
	} else {
		hs = append(hs, s.Handles...)
	}
	if s.DynamicHandles != nil {
		hs = append(hs, s.DynamicHandles(params)...)
	}
	return hs
}

func (s *Spec) check() error {
	if s.Kind == "" {
		return fmt.Errorf("node: spec without a kind")
	}
	seen := map[string]bool{}
	for _, p := range s.Params {
		if p.Name == "" {
			return fmt.Errorf("node: kind %q declares a parameter without a name", s.Kind)
		}
		if seen[p.Name] {
			return fmt.Errorf("node: kind %q declares parameter %q twice", s.Kind, p.Name)
		}
		seen[p.Name] = true
		if p.Type == "" {
			return fmt.Errorf("node: kind %q parameter %q has no type", s.Kind, p.Name)
		}
	}
	return nil
}

// sortedKinds returns the kinds of m in order.
func sortedKinds[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
