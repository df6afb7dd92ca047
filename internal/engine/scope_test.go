package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

func runYAML(t *testing.T, src string) *engine.Result {
	t.Helper()
	w, ds := workflow.Decode("t.yaml", []byte(src))
	require.NotNil(t, w, ds.Error())
	ds = append(ds, workflow.Validate(w, node.Default)...)
	require.False(t, ds.HasErrors(), ds.Error())
	plan, err := engine.NewPlan(w, node.Default)
	require.NoError(t, err)
	res, err := engine.NewDriver(node.Default, nil, 4).Execute(context.Background(), plan, engine.Options{RunID: "r"})
	require.NoError(t, err)
	return res
}

// A foreach item must not see another item's outputs: a node skipped in
// this item reads as nil, not as what it output for another item.
func TestForEachItemsDoNotShareOutputs(t *testing.T) {
	t.Parallel()
	res := runYAML(t, `version: 1
name: t
nodes:
  - {id: each, type: foreach, items: "{{ [1, 2, 3, 4] }}", concurrency: 4}
  - {id: odd, type: if, condition: "loop.item % 2 == 1"}
  - {id: mark, type: set, values: {v: "odd {{ loop.item }}"}}
  - {id: meet, type: merge}
  - {id: label, type: set, values: {v: "{{ mark.v ?? 'none' }}"}}
  - {id: back, type: endloop, loop: each}
edges:
  - {from: each, to: odd, on: body}
  - {from: odd, to: mark, on: "true"}
  - {from: odd, to: meet, on: "false"}
  - {from: mark, to: meet}
  - {from: meet, to: label}
  - {from: label, to: back}
outputs:
  labels: "{{ map(each.results, .v) }}"
`)
	require.Equal(t, engine.RunCompleted, res.Status, "%v", res.Error)
	require.Equal(t, []any{"odd 1", "none", "odd 3", "none"}, res.Outputs["labels"])
}

// A merge outputs the outputs of the inputs that fired, by node id.
func TestMergeOutputsItsInputs(t *testing.T) {
	t.Parallel()
	res := runYAML(t, `version: 1
name: t
nodes:
  - {id: a, type: set, values: {x: 1}}
  - {id: b, type: set, values: {y: 2}}
  - {id: meet, type: merge}
edges:
  - {from: a, to: meet}
  - {from: b, to: meet}
outputs:
  got: "{{ meet.inputs }}"
`)
	require.Equal(t, engine.RunCompleted, res.Status)
	require.Equal(t, map[string]any{"a": map[string]any{"x": 1}, "b": map[string]any{"y": 2}}, res.Outputs["got"])
}

// A foreach over a range expression gets a []int, not a []any.
func TestForEachOverRange(t *testing.T) {
	t.Parallel()
	res := runYAML(t, `version: 1
name: t
nodes:
  - {id: each, type: foreach, items: "{{ 1..3 }}"}
  - {id: sq, type: set, values: {v: "{{ loop.item * loop.item }}"}}
  - {id: back, type: endloop, loop: each}
edges:
  - {from: each, to: sq, on: body}
  - {from: sq, to: back}
outputs:
  squares: "{{ map(each.results, .v) }}"
`)
	require.Equal(t, engine.RunCompleted, res.Status, "%v", res.Error)
	require.Equal(t, []any{1, 4, 9}, res.Outputs["squares"])
}

// A workflow that declares no outputs outputs those of the nodes that end
// a path and succeeded, without their success and error fields: not a
// node with an out-edge, not one that failed (on_error: continue).
func TestOutputsOfTheLastNodes(t *testing.T) {
	t.Parallel()
	res := runYAML(t, `version: 1
name: t
nodes:
  - {id: a, type: set, values: {x: 1}}
  - {id: b, type: set, values: {y: "{{ a.x + 1 }}"}}
  - {id: c, type: set, values: {z: 3}}
  - {id: bad, type: set, values: {v: "{{ int(\"abc\") }}"}, on_error: continue}
edges:
  - {from: a, to: b}
  - {from: a, to: bad}
`)
	require.Equal(t, engine.RunCompleted, res.Status)
	require.Equal(t, map[string]any{
		"b": map[string]any{"y": 2},
		"c": map[string]any{"z": 3},
	}, res.Outputs)
}
