package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
)

// Both drivers prepare a task the same way: its parameters rendered in
// the run's scope and coerced to their types, its hash over the node's
// definition, those parameters and what fed it; a parameter that does
// not coerce fails the task.
func TestPrepareRendersCoercesAndHashes(t *testing.T) {
	t.Parallel()
	s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: a, type: act, fail: "{{ trigger.n }}", out: {who: "{{ trigger.who }}"}}
  - {id: b, type: act, fail: "{{ trigger.who }}"}
`, `
  - {from: start, to: a}
  - {from: start, to: b}
`))
	s.start("")
	scope := engine.RunScope("run-1", "t", time.Unix(0, 0), nil, map[string]any{"n": "2", "who": "Ada"}, nil)

	a, _ := s.task("a")
	params, hash, err := engine.Prepare(scope, a, engine.NodeDef(a.Node), []string{"up"}, nil)
	require.Nil(t, err)
	assert.Equal(t, 2, params["fail"], "coerced to its type")
	assert.Equal(t, map[string]any{"who": "Ada"}, params["out"])
	assert.Equal(t, engine.ConfigHash(engine.NodeDef(a.Node), params, a.Loop, []string{"up"}), hash)
	_, other, _ := engine.Prepare(scope, a, engine.NodeDef(a.Node), []string{"changed"}, nil)
	assert.NotEqual(t, hash, other, "a change upstream changes the hash")

	b, _ := s.task("b")
	params, hash, err = engine.Prepare(scope, b, engine.NodeDef(b.Node), nil, nil)
	require.NotNil(t, err)
	assert.Equal(t, "param_type", err.Code)
	assert.Nil(t, params)
	assert.Empty(t, hash)
}

// TestPlanKeepsNodeDefs: a plan made by the engine's NewPlan keeps each
// node's canonical definition, so the runs of a cached plan share it; it
// is the definition a plan without it makes at each call.
func TestPlanKeepsNodeDefs(t *testing.T) {
	t.Parallel()
	src := wf(`
  - {id: start, type: trigger.manual}
  - {id: a, type: act, retries: 2, timeout: 3s, out: {who: "{{ trigger.who }}"}}
`, `
  - {from: start, to: a}
`)
	kept := mustPlan(t, src)
	bare := mustPlan(t, src)
	for _, pn := range bare.Nodes {
		pn.Def = nil
	}
	for i, pn := range kept.Nodes {
		require.NotEmpty(t, pn.Def, pn.ID)
		require.Equal(t, string(engine.NodeDef(bare.Nodes[i])), string(engine.NodeDef(pn)), pn.ID)
		require.Same(t, &pn.Def[0], &engine.NodeDef(pn)[0], "the plan's own, not made again")
	}
	require.JSONEq(t, `{"id": "a", "type": "act", "retries": 2, "timeout": "3s", "out": {"who": "{{ trigger.who }}"}}`,
		string(engine.NodeDef(kept.Nodes[1])))
}

// A big plan's node definitions, made on several cores while the scheduler
// plans, are each node's own, as NodeDef makes them one by one.
func TestBigPlanKeepsEachNodesDefinition(t *testing.T) {
	t.Parallel()
	var src strings.Builder
	src.WriteString("version: 1\nname: big\nnodes:\n  - {id: start, type: trigger.manual}\n")
	for i := range 600 {
		fmt.Fprintf(&src, "  - {id: n%d, type: set, values: {i: %d, s: \"v%d\"}}\n", i, i, i)
	}
	src.WriteString("edges:\n  - {from: start, to: n0}\n")
	for i := 1; i < 600; i++ {
		fmt.Fprintf(&src, "  - {from: n%d, to: n%d}\n", i-1, i)
	}
	p := mustPlan(t, src.String())
	require.Len(t, p.Nodes, 601)
	for _, pn := range p.Nodes {
		alone := *pn
		alone.Def = nil
		require.Equal(t, string(engine.NodeDef(&alone)), string(pn.Def))
		require.Contains(t, string(pn.Def), `"id":"`+pn.ID+`"`)
	}
}
