package durable_test

import (
	"fmt"
	"runtime"
	"testing"
	"weak"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
)

// TestAResumeOffersEachStepOnceAndLetsGoOfIt: a resume offers each
// completed step of the run once, the first of its node and config hash
// first (a node's steps of the same hash one after the other, another
// node's step of that hash never), and once it has taken a step it holds
// it no more: a resume going over a long run's completed steps does not
// keep them all until it ends.
func TestAResumeOffersEachStepOnceAndLetsGoOfIt(t *testing.T) {
	t.Parallel()
	const n = 100
	var refs []weak.Pointer[store.Step]
	r := func() *durable.Reuser {
		var steps []*store.Step
		for i := range n {
			for _, node := range []string{"a", "b"} {
				s := &store.Step{Node: node, Visit: i + 1, Generation: 1, Status: engine.StatusSuccess, ConfigHash: "same",
					Output: map[string]any{"i": i, "node": node}}
				steps = append(steps, s)
				refs = append(refs, weak.Make(s))
			}
		}
		return durable.ForResume(steps)
	}()

	for i := range n {
		got, ok := r.Reuse(engine.ReuseQuery{Node: "b", Visit: i + 1, Hash: "same"})
		require.True(t, ok, "b's step %d", i+1)
		require.Equal(t, map[string]any{"i": i, "node": "b"}, got.Output, "b's steps in order, each once")
	}
	_, ok := r.Reuse(engine.ReuseQuery{Node: "b", Visit: n + 1, Hash: "same"})
	require.False(t, ok, "every step of b was taken; a's are not b's")

	runtime.GC()
	for i, p := range refs {
		node := []string{"a", "b"}[i%2]
		require.Equal(t, node == "a", p.Value() != nil, fmt.Sprintf("%s's step %d: held while not taken, let go of once taken", node, i/2+1))
	}
	got, ok := r.Reuse(engine.ReuseQuery{Node: "a", Visit: 1, Hash: "same"})
	require.True(t, ok)
	require.Equal(t, 0, got.Output["i"])
	require.Equal(t, n+1, r.Reused)
}
