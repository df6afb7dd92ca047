package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
	"github.com/skeinhq/skein/workflow"
)

func TestSmokeHello(t *testing.T) {
	src := `
version: 1
name: hello
inputs:
  who: {type: string, default: world}
nodes:
  - {id: start, type: trigger.manual}
  - {id: greet, type: template, text: "Hello, {{ inputs.who }}!"}
  - id: pick
    type: if
    condition: "len(inputs.who) > 3"
  - {id: long, type: set, values: {kind: long}}
  - {id: short, type: set, values: {kind: short}}
  - {id: meet, type: merge}
  - id: lp
    type: loop
    exit: "vars.n >= 3"
    max_iterations: 10
  - {id: inc, type: set, vars: {n: "{{ (vars.n ?? 0) + 1 }}"}}
  - {id: back, type: endloop, loop: lp}
  - {id: each, type: foreach, items: "{{ [1,2,3] }}", concurrency: 2}
  - {id: dbl, type: set, values: {v: "{{ loop.item * 2 }}"}}
  - {id: eback, type: endloop, loop: each}
edges:
  - {from: start, to: greet}
  - {from: greet, to: pick}
  - {from: pick, to: long, on: "true"}
  - {from: pick, to: short, on: "false"}
  - {from: long, to: meet}
  - {from: short, to: meet}
  - {from: meet, to: lp}
  - {from: lp, to: inc, on: body}
  - {from: inc, to: back}
  - {from: lp, to: each, on: done}
  - {from: each, to: dbl, on: body}
  - {from: dbl, to: eback}
outputs:
  greeting: "{{ greet.text }}"
  kind: "{{ long.kind ?? short.kind }}"
  n: "{{ vars.n }}"
  doubled: "{{ map(each.items, .v) }}"
`
	w, ds := workflow.Decode("hello.yaml", []byte(src))
	require.NotNil(t, w, ds.Error())
	ds = append(ds, workflow.Validate(w, node.Default)...)
	require.False(t, ds.HasErrors(), ds.Error())
	plan, err := engine.NewPlan(w, node.Default)
	require.NoError(t, err)
	d := engine.NewDriver(node.Default, nil, 4)
	res, err := d.Execute(context.Background(), plan, engine.Options{RunID: "r1", Inputs: map[string]any{"who": "world"}})
	require.NoError(t, err)
	for _, s := range res.Steps {
		t.Logf("%d %s v%d it%d %s %v %v", s.StepOrder, s.Node, s.Visit, s.Iteration, s.Status, s.Output, s.Error)
	}
	require.Equal(t, engine.RunCompleted, res.Status, "%v", res.Error)
	require.Equal(t, "Hello, world!", res.Outputs["greeting"])
	require.Equal(t, "long", res.Outputs["kind"])
	require.Equal(t, 3, res.Outputs["n"])
	require.Equal(t, []any{2, 4, 6}, res.Outputs["doubled"])
}
