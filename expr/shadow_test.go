package expr

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// shadowScope has nodes named like built-in functions.
func shadowScope() *Scope {
	return &Scope{Nodes: map[string]any{
		"join":   map[string]any{"x": "J", "parts": []any{"a", "b"}, "success": true},
		"filter": map[string]any{"items": []any{1, 2, 3}},
		"count":  map[string]any{"n": 2},
		"type":   map[string]any{"kind": "t"},
		"upper":  map[string]any{"text": "up"},
	}}
}

func TestNodeShadowsBuiltin(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		code string
		want any
	}{
		{name: "member of a guarded builtin's name", code: "join.x", want: "J"},
		{name: "member of a predicate's name", code: "filter.items", want: []any{1, 2, 3}},
		{name: "arithmetic on a node named count", code: "count.n + 1", want: 3},
		{name: "member of a plain builtin's name", code: "type.kind", want: "t"},
		{name: "the whole output", code: "join", want: map[string]any{"x": "J", "parts": []any{"a", "b"}, "success": true}},
		{name: "index by string", code: `join["x"]`, want: "J"},
		{name: "a call is the function", code: `join(join.parts, "-")`, want: "a-b"},
		{name: "predicate over a node named filter", code: "filter(filter.items, # > count.n)", want: []any{3}},
		{name: "count builtin beside count node", code: "count(filter.items, # >= count.n)", want: 2},
		{name: "type builtin of the type node", code: "type(type.kind)", want: "string"},
		{name: "forced builtin", code: `::upper(upper.text)`, want: "UP"},
		{name: "pipe calls the function", code: "upper.text | upper()", want: "UP"},
		{name: "inside a predicate", code: "map([1, 2], # + count.n)", want: []any{3, 4}},
		{name: "explicit env", code: `$env.join.x + string($env["count"].n)`, want: "J2"},
		{name: "negated", code: "!join.success", want: false},
		{name: "a node that has not run is nil", code: "first.x", want: nil},
		{name: "a builtin with no node still works", code: "first([7, 8])", want: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Eval(tt.code, shadowScope())
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestNodeShadowsBuiltinInTemplates(t *testing.T) {
	t.Parallel()

	tmpl, err := ParseTemplate("{{ join.x }}/{{ len(filter.items) }}/{{ count.n + 1 }}")
	require.NoError(t, err)
	got, err := tmpl.Render(shadowScope())
	require.NoError(t, err)
	require.Equal(t, "J/3/3", got)
}

func TestReferencesOfShadowedBuiltins(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		code string
		want []Ref
	}{
		{name: "member", code: "join.x", want: []Ref{{Root: "join", Path: []string{"x"}}}},
		{name: "bare", code: "count", want: []Ref{{Root: "count"}}},
		{name: "in arithmetic", code: "count.n + 1", want: []Ref{{Root: "count", Path: []string{"n"}}}},
		{name: "call is not a reference", code: "count([1], # > 0)", want: nil},
		{name: "guarded call is not a reference", code: `join(["a"], ",")`, want: nil},
		{
			name: "call reading a node of its name", code: `join(join.parts, ",")`,
			want: []Ref{{Root: "join", Path: []string{"parts"}, Offset: 5}},
		},
		{
			name: "let shadows the node", code: "let n = count.n; n + 1",
			want: []Ref{{Root: "count", Path: []string{"n"}, Offset: 8}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := References(tt.code)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
