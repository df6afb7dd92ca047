package workflow_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
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

// TestGoValuesAsInputs: a program's Go values are taken as the JSON they
// encode as — any integer type, float32, json.Number, a typed slice or
// map, a struct — and a value that is not of the input's type is still
// refused.
func TestGoValuesAsInputs(t *testing.T) {
	t.Parallel()
	w, diags := workflow.Decode("go.yaml", []byte(`version: 1
name: go
inputs:
  i: {type: integer}
  u: {type: integer}
  big: {type: integer}
  x: {type: number}
  j: {type: number}
  l: {type: list}
  m: {type: map}
  s: {type: map}
nodes:
  - {id: a, type: set, values: {x: 1}}
`))
	require.False(t, diags.HasErrors(), diags.Error())
	type point struct {
		X int    `json:"x"`
		Y string `json:"y"`
	}
	got, err := w.ResolveInputs(map[string]any{
		"i": int64(3), "u": uint8(7), "big": int64(1) << 60, "x": float32(1.5), "j": json.Number("2.25"),
		"l": []string{"a", "b"}, "m": map[string]int{"k": 1}, "s": point{X: 1, Y: "up"},
	})
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"i": 3, "u": 7, "big": 1 << 60, "x": 1.5, "j": 2.25,
		"l": []any{"a", "b"}, "m": map[string]any{"k": 1}, "s": map[string]any{"x": 1, "y": "up"},
	}, got)

	_, err = w.ResolveInputs(map[string]any{"i": float32(1.5)})
	require.EqualError(t, err, "input i: expected an integer, got number 1.5")
	_, err = w.ResolveInputs(map[string]any{"l": map[string]int{"k": 1}})
	require.ErrorContains(t, err, "input l: expected a list")
	_, err = w.ResolveInputs(map[string]any{"m": make(chan int)})
	require.ErrorContains(t, err, "input m: expected a map", "a value JSON cannot encode is refused by its type")
}

// TestBuiltNodeWithoutAnID: a workflow a program builds, whose node has
// no id, is invalid (a file's is told of when it is decoded).
func TestBuiltNodeWithoutAnID(t *testing.T) {
	t.Parallel()
	w := &workflow.Workflow{Version: 1, Name: "built", Nodes: []*workflow.Node{{ID: "a", Type: "fail"}, {Type: "fail"}}}
	ds := workflow.Validate(w, node.Default)
	require.True(t, ds.HasErrors())
	require.Contains(t, ds.Error(), "node 1 has no id")
}
