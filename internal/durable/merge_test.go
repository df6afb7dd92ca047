package durable

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// merge folds a transaction's submissions into a batch per run: a run's
// step written in two submissions is written once, as its latest state; a
// step planned in one and saved in the next is written as saved; events
// keep their order. A run with one submission is written as submitted.
func TestMergeOneBatchPerRun(t *testing.T) {
	t.Parallel()
	planned := &store.Step{Node: "b", Visit: 1, Status: "pending"}
	running := &store.Step{Node: "a", Visit: 1, Status: "running", Attempts: 1}
	done := &store.Step{Node: "a", Visit: 1, Status: "success", Attempts: 1}
	savedB := &store.Step{Node: "b", Visit: 1, Status: "success", Attempts: 1}
	lone := store.Batch{RunID: "r2", Token: "t2", Steps: []*store.Step{{Node: "x", Visit: 1, Status: "success"}},
		Plan: []*store.Step{{Node: "y", Visit: 1, Status: "pending"}}, Events: []store.Event{{Type: "node_finished", Node: "x"}},
		Finish: &store.Run{ID: "r2", Status: "completed"}}
	out := merge([]submission{
		{batch: store.Batch{RunID: "r1", Token: "t1", Steps: []*store.Step{running}, Plan: []*store.Step{planned},
			Events: []store.Event{{Type: "node_started", Node: "a"}}}},
		{batch: lone},
		{batch: store.Batch{RunID: "r1", Steps: []*store.Step{done, savedB},
			Events: []store.Event{{Type: "node_finished", Node: "a"}, {Type: "node_finished", Node: "b"}}}},
	})
	require.Len(t, out, 2)
	r1 := out[0]
	require.Equal(t, "r1", r1.RunID)
	require.Equal(t, "t1", r1.Token)
	require.Equal(t, []*store.Step{done, savedB}, r1.Steps)
	require.Empty(t, r1.Plan, "a step planned and saved in one transaction is written as saved")
	require.Equal(t, []string{"node_started", "node_finished", "node_finished"},
		[]string{r1.Events[0].Type, r1.Events[1].Type, r1.Events[2].Type})
	require.Equal(t, lone, out[1])
}
