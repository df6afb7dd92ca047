package workflow_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/workflow"
)

// TestNullInputs: a null given for an input whose type is not any is no
// value of its type, and counts as not given — its default, or missing
// when it is required — as a client that writes every field means it; an
// input of type any keeps its null.
func TestNullInputs(t *testing.T) {
	t.Parallel()
	w, diags := workflow.Decode("nulls.yaml", []byte(`version: 1
name: nulls
inputs:
  n: {type: number, default: 1.5}
  s: {type: string}
  l: {type: list, default: [1]}
  m: {type: map, default: {k: v}}
  b: {type: boolean, default: true}
  need: {type: integer, required: true}
  free: {type: any, default: 7}
nodes:
  - {id: a, type: set, values: {x: 1}}
`))
	require.False(t, diags.HasErrors(), diags.Error())

	got, err := w.ResolveInputs(map[string]any{"n": nil, "s": nil, "l": nil, "m": nil, "b": nil, "need": 3, "free": nil})
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"n": 1.5, "l": []any{1}, "m": map[string]any{"k": "v"}, "b": true, // the defaults
		"need": 3, "free": nil, // s has no default: left out, as if not given
	}, got)

	_, err = w.ResolveInputs(map[string]any{"need": nil})
	var ie *workflow.InputError
	require.ErrorAs(t, err, &ie)
	require.Equal(t, []string{"need"}, ie.Missing, "a required input given null is missing")
	require.Equal(t, "missing required input need", err.Error())

	_, err = w.ResolveInputs(map[string]any{"need": 1, "n": "x"})
	require.EqualError(t, err, `input n: expected a number, got string "x"`, "a value of the wrong type is still refused")
}
