package control

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
)

// A foreach takes a list, a list output ({items: [...]}), a range or
// null (no items); anything else its template makes fails the node with
// a message that names what it got, in the words of JSON.
func TestForEachItems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		items any
		want  []any
	}{
		{"a list", []any{"a", 1}, []any{"a", 1}},
		{"null", nil, []any{}},
		{"a list output", map[string]any{"items": []any{true}, "count": 1}, []any{true}},
		{"a range", []int{1, 2}, []any{1, 2}},
	} {
		out, err := forEachKind{}.Run(t.Context(), &node.Call{Params: map[string]any{"items": tc.items}})
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, out["items"], tc.name)
	}
	for items, got := range map[string]any{
		"an object {a, b}":  map[string]any{"a": 1, "b": 2},
		`the string "abc"`:  "abc",
		"the number 3":      3,
		"the boolean false": false,
	} {
		_, err := forEachKind{}.Run(t.Context(), &node.Call{Params: map[string]any{"items": got}})
		var ne *node.Error
		require.ErrorAs(t, err, &ne, items)
		require.Equal(t, "foreach_items", ne.Code)
		require.EqualError(t, err, `items must be a list, or a template that makes one such as "{{ fetch.body.items }}", not `+items)
	}
}

// What a foreach's items are as written is checked before the run: a
// template passes (only the run knows what it makes), the rest as Run
// would take it.
func TestForEachItemsChecked(t *testing.T) {
	t.Parallel()
	require.Empty(t, itemsProblem("{{ fetch.body.items }}"))
	require.Empty(t, itemsProblem([]any{1}))
	require.Empty(t, itemsProblem(nil))
	require.Empty(t, itemsProblem(map[string]any{"items": []any{}}))
	require.Equal(t, `items must be a list, or a template that makes one such as "{{ fetch.body.items }}", not the string "north"`, itemsProblem("north"))
	require.Contains(t, itemsProblem(map[string]any{"north": 1}), "not an object {north}")
}
