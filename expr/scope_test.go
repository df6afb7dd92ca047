package expr

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNormalize(t *testing.T) {
	t.Parallel()

	type point struct{ X int }
	tests := []struct {
		name string
		in   any
		want map[string]any
	}{
		{
			name: "object keeps its keys",
			in:   map[string]any{"status": 200, "body": "ok"},
			want: map[string]any{"status": 200, "body": "ok"},
		},
		{
			name: "object with other value type",
			in:   map[string]string{"a": "b"},
			want: map[string]any{"a": "b"},
		},
		{
			name: "nil object is empty",
			in:   map[string]any(nil),
			want: map[string]any{},
		},
		{
			name: "array of objects adds the first element's fields",
			in: []any{
				map[string]any{"name": "a", "count": 99, "items": "x", "_id": 1},
				map[string]any{"name": "b"},
			},
			want: map[string]any{
				"items": []any{
					map[string]any{"name": "a", "count": 99, "items": "x", "_id": 1},
					map[string]any{"name": "b"},
				},
				"found": true,
				"count": 2,
				"name":  "a",
			},
		},
		{
			name: "array of scalars",
			in:   []any{1, 2, 3},
			want: map[string]any{"items": []any{1, 2, 3}, "found": true, "count": 3},
		},
		{
			name: "typed slice",
			in:   []string{"a"},
			want: map[string]any{"items": []string{"a"}, "found": true, "count": 1},
		},
		{
			name: "typed slice of objects",
			in:   []map[string]any{{"id": 7}},
			want: map[string]any{"items": []map[string]any{{"id": 7}}, "found": true, "count": 1, "id": 7},
		},
		{
			name: "empty array",
			in:   []any{},
			want: map[string]any{"items": []any{}, "found": false, "count": 0},
		},
		{name: "string", in: "hi", want: map[string]any{"value": "hi"}},
		{name: "number", in: 2.5, want: map[string]any{"value": 2.5}},
		{name: "bool", in: true, want: map[string]any{"value": true}},
		{name: "nil", in: nil, want: map[string]any{"value": nil}},
		{name: "bytes are a scalar", in: []byte("x"), want: map[string]any{"value": []byte("x")}},
		{name: "struct is a scalar", in: point{1}, want: map[string]any{"value": point{1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, Normalize(tt.in))
		})
	}
}

func TestNormalizeCopies(t *testing.T) {
	t.Parallel()

	in := map[string]any{"a": 1}
	out := Normalize(in)
	out["b"] = 2
	require.Equal(t, map[string]any{"a": 1}, in, "Normalize must not return its argument")
}

func TestSplitDirectives(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name           string
		in             map[string]any
		wantOut        map[string]any
		wantDirectives map[string]any
	}{
		{
			name:           "routes and patches",
			in:             map[string]any{"_route": "b", "_state_patch": map[string]any{"n": 1}, "text": "hi"},
			wantOut:        map[string]any{"text": "hi"},
			wantDirectives: map[string]any{"_route": "b", "_state_patch": map[string]any{"n": 1}},
		},
		{
			name:    "no directives",
			in:      map[string]any{"text": "hi", "a_b": 1},
			wantOut: map[string]any{"text": "hi", "a_b": 1},
		},
		{
			name:           "only top-level keys",
			in:             map[string]any{"body": map[string]any{"_route": "x"}, "_delay_seconds": 3},
			wantOut:        map[string]any{"body": map[string]any{"_route": "x"}},
			wantDirectives: map[string]any{"_delay_seconds": 3},
		},
		{
			name:    "nil",
			in:      nil,
			wantOut: map[string]any{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, directives := SplitDirectives(tt.in)
			require.Equal(t, tt.wantOut, out)
			require.Equal(t, tt.wantDirectives, directives)
		})
	}
}

func TestScopeEnv(t *testing.T) {
	t.Parallel()

	s := &Scope{
		Inputs: map[string]any{"city": "Paris"},
		Nodes: map[string]any{
			"fetch":  map[string]any{"status": 200},
			"inputs": map[string]any{"shadowed": true},
		},
	}
	env := s.Env()
	require.Equal(t, map[string]any{
		"inputs":    map[string]any{"city": "Paris"},
		"trigger":   map[string]any{},
		"vars":      map[string]any{},
		"secrets":   map[string]any{},
		"execution": map[string]any{},
		"loop":      nil,
		"messages":  []any{},
		"fetch":     map[string]any{"status": 200},
	}, env)
	require.Len(t, (*Scope)(nil).Env(), len(ScopeRoots))

	withLoop := &Scope{Loop: map[string]any{"index": 2}}
	require.Equal(t, map[string]any{"index": 2}, withLoop.Env()["loop"])
}
