package schema

import (
	"github.com/skeinhq/skein/node"
)

// Kind is one node kind as an editor sees it (GET /api/kinds): the third
// view of the kinds' specs beside the JSON Schema and docs/nodes.md, made
// from the same declarations.
type Kind struct {
	Kind string `json:"kind"`
	// Category is the kind's group in the palette and the docs: trigger,
	// control, data, action or ai; Group is its heading there.
	Category    string `json:"category"`
	Group       string `json:"group"`
	Role        string `json:"role,omitempty"`
	Description string `json:"description,omitempty"`
	// Pure: running the node has no effect outside the run.
	Pure   bool        `json:"pure,omitempty"`
	Params []KindParam `json:"params"`
	// Handles are the handles an out-edge of the node may carry ("" is
	// the default one: an edge without on:). ErrorHandle adds `error` when
	// the node has on_error: route. DynamicHandles tells that the node's
	// parameters add handles (a switch: one per case name), as
	// DynamicHandlesDoc says; the handles of a node as written are in the
	// answer of POST /api/workflows/validate. AnyHandle: the node may
	// choose any handle at run time.
	Handles           []string `json:"handles"`
	ErrorHandle       bool     `json:"error_handle,omitempty"`
	DynamicHandles    bool     `json:"dynamic_handles,omitempty"`
	DynamicHandlesDoc string   `json:"dynamic_handles_doc,omitempty"`
	AnyHandle         bool     `json:"any_handle,omitempty"`
	// HandlesDoc is the docs' sentence on the handles.
	HandlesDoc string `json:"handles_doc"`
	// FallThrough is the handle a disabled node follows.
	FallThrough string `json:"fall_through,omitempty"`
	// Outputs are the output ports the kind promises; OutputsDeclared is
	// false when it promises none (any port may be referenced), and
	// OutputsFromParams true when its parameters add ports (a set node's
	// values).
	Outputs           []string `json:"outputs"`
	OutputsDeclared   bool     `json:"outputs_declared"`
	OutputsFromParams bool     `json:"outputs_from_params,omitempty"`
}

// KindParam is one declared parameter of a kind (node.Param).
type KindParam struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Required    bool     `json:"required"`
	Default     any      `json:"default,omitempty"`
	Description string   `json:"description,omitempty"`
	Enum        []string `json:"enum,omitempty"`
	// Min and Max bound an integer when Max is set.
	Min int `json:"min,omitempty"`
	Max int `json:"max,omitempty"`
	// Expr: a bare expression, not a template. Plain: no templates.
	Expr  bool `json:"expr,omitempty"`
	Plain bool `json:"plain,omitempty"`
	// Ref says what the value names: mcp_server, mcp_tools, model or
	// workflow.
	Ref string `json:"ref,omitempty"`
	// Items are the fields of the elements of a list of objects (a
	// switch's cases).
	Items []KindParam `json:"items,omitempty"`
}

// CommonField is a field every node has beside its kind's parameters.
type CommonField struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description"`
}

// Kinds returns the kinds of reg (node.Default when nil) in the order of
// docs/nodes.md: by category (triggers, control, data, actions, AI, then
// others by name), then by kind.
func Kinds(reg *node.Registry) []Kind {
	if reg == nil {
		reg = node.Default
	}
	titles := map[node.Category]string{}
	rank := map[node.Category]int{}
	for i, c := range categories {
		titles[c.cat], rank[c.cat] = c.title, i
	}
	var known, rest []*node.Spec
	for _, s := range reg.Specs() {
		if _, ok := rank[s.Category]; ok {
			known = append(known, s)
		} else {
			rest = append(rest, s)
		}
	}
	var out []Kind
	for _, c := range categories {
		for _, s := range known {
			if s.Category == c.cat {
				out = append(out, kindOf(s, c.title))
			}
		}
	}
	for _, s := range rest { // Specs is sorted by kind
		title := string(s.Category)
		if title == "" {
			title = "Uncategorised"
		}
		out = append(out, kindOf(s, title))
	}
	return out
}

// CommonFields returns the fields every node has, as docs/nodes.md lists
// them.
func CommonFields() []CommonField {
	var out []CommonField
	for _, f := range commonFields() {
		out = append(out, CommonField{Name: f.name, Type: f.typ, Description: f.desc})
	}
	return out
}

func kindOf(s *node.Spec, group string) Kind {
	k := Kind{
		Kind: s.Kind, Category: string(s.Category), Group: group, Role: string(s.Role),
		Description: s.Description, Pure: s.Pure, Params: []KindParam{},
		Handles: append([]string{}, s.Handles...), DynamicHandles: s.DynamicHandles != nil,
		DynamicHandlesDoc: s.DynamicHandlesDoc, AnyHandle: s.Routes, HandlesDoc: handles(s),
		FallThrough: s.FallThrough, Outputs: append([]string{}, s.Outputs...),
		OutputsDeclared: s.Outputs != nil || s.OutputsFrom != nil, OutputsFromParams: s.OutputsFrom != nil,
	}
	if s.Handles == nil { // the action shape
		k.Handles, k.ErrorHandle = []string{node.HandleDefault}, true
	}
	for _, p := range s.Params {
		k.Params = append(k.Params, paramOf(p))
	}
	return k
}

func paramOf(p node.Param) KindParam {
	kp := KindParam{Name: p.Name, Type: string(p.Type), Required: p.Required, Default: p.Default,
		Description: p.Description, Enum: p.Enum, Min: p.Min, Max: p.Max, Expr: p.Expr,
		Plain: p.NoTemplate && !p.Expr, Ref: string(p.Ref)}
	for _, ip := range p.Items {
		kp.Items = append(kp.Items, paramOf(ip))
	}
	return kp
}
