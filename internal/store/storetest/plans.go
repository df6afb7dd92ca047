package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// testPlans checks the planned steps of a batch (Batch.Plan): listed
// pending, in step order among the steps saved, until a step of the same
// key is saved.
func testPlans(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()

	planned := func(gen, order int, nodeID string, visit, iteration int, typ string) *store.Step {
		return &store.Step{Generation: gen, StepOrder: order, Node: nodeID, Visit: visit, Iteration: iteration, Type: typ, Status: "pending"}
	}
	list := func(steps []*store.Step) []string {
		var out []string
		for _, s := range steps {
			out = append(out, fmt.Sprintf("g%d %d:%s#%d/%d %s %s", s.Generation, s.StepOrder, s.Node, s.Visit, s.Iteration, s.Type, s.Status))
		}
		return out
	}

	t.Run("PlannedStepsReadPendingUntilSaved", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)
		started := base.Add(time.Second)
		require.NoError(t, b.s.SaveBatch(b.ctx, []store.Batch{{RunID: "r1",
			Steps: []*store.Step{{Generation: 1, StepOrder: 1, Node: "start", Type: "trigger.manual", Visit: 1, Attempts: 1,
				Status: "success", StartedAt: &started, FinishedAt: &started}},
			Plan: []*store.Step{planned(1, 2, "a", 1, 0, "set"), planned(1, 3, `b "quoted" é`, 1, 0, "http")},
		}}))

		steps, err := b.s.Steps(b.ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, []string{
			"g1 1:start#1/0 trigger.manual success",
			"g1 2:a#1/0 set pending",
			`g1 3:b "quoted" é#1/0 http pending`,
		}, list(steps))
		require.Equal(t, &store.Step{RunID: "r1", Generation: 1, StepOrder: 2, Node: "a", Type: "set", Visit: 1, Status: "pending"},
			steps[1], "a planned step reads as the pending step row it stands for")

		// The step starts, and a loop's later pass is planned.
		require.NoError(t, b.s.SaveBatch(b.ctx, []store.Batch{{RunID: "r1",
			Steps: []*store.Step{{Generation: 1, StepOrder: 2, Node: "a", Type: "set", Visit: 1, Attempts: 1, Status: "running", StartedAt: &started}},
			Plan:  []*store.Step{planned(1, 4, "a", 2, 1, "set")},
		}}))
		steps, err = b.s.Steps(b.ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, []string{
			"g1 1:start#1/0 trigger.manual success",
			"g1 2:a#1/0 set running",
			`g1 3:b "quoted" é#1/0 http pending`,
			"g1 4:a#2/1 set pending",
		}, list(steps), "a saved step stands in the place of its plan")
	})

	t.Run("GenerationsOfPlans", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)
		require.NoError(t, b.s.SaveBatch(b.ctx, []store.Batch{{RunID: "r1",
			Steps: []*store.Step{{Generation: 1, StepOrder: 1, Node: "a", Visit: 1, Status: "failed"}},
			Plan:  []*store.Step{planned(1, 2, "b", 1, 0, "set")},
		}}))
		// A resume plans the run again: its generation has only a plan.
		require.NoError(t, b.s.SaveBatch(b.ctx, []store.Batch{{RunID: "r1",
			Plan: []*store.Step{planned(2, 1, "a", 1, 0, "set"), planned(2, 2, "b", 1, 0, "set")},
		}}))

		steps, err := b.s.Steps(b.ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, []string{"g2 1:a#1/0 set pending", "g2 2:b#1/0 set pending"}, list(steps),
			"a generation with only planned steps is the latest")
		hist, err := b.s.StepHistory(b.ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, []string{
			"g1 1:a#1/0  failed", "g1 2:b#1/0 set pending",
			"g2 1:a#1/0 set pending", "g2 2:b#1/0 set pending",
		}, list(hist))
		hist, err = b.s.StepHistory(b.ctx, "r1", "b")
		require.NoError(t, err)
		require.Equal(t, []string{"g1 2:b#1/0 set pending", "g2 2:b#1/0 set pending"}, list(hist),
			"given nodes, only their saved and planned steps")
	})

	t.Run("PlansInATransaction", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		err := b.s.Tx(b.ctx, func(tx store.Tx) error {
			if err := tx.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "w", Status: "running", StartedAt: base}); err != nil {
				return err
			}
			_, last, err := tx.LockRun(b.ctx, "r1")
			if err != nil {
				return err
			}
			return tx.SaveBatch(b.ctx, store.Batch{RunID: "r1", Plan: []*store.Step{planned(1, 1, "a", 1, 0, "set")}}, last)
		})
		require.NoError(t, err)
		steps, err := b.s.Steps(b.ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, []string{"g1 1:a#1/0 set pending"}, list(steps))
	})

	t.Run("DeletedWithTheirRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)
		require.NoError(t, b.s.SaveBatch(b.ctx, []store.Batch{{RunID: "r1", Plan: []*store.Step{planned(1, 1, "a", 1, 0, "set")}}}))
		deleted, err := b.s.DeleteRuns(b.ctx, base.Add(time.Hour), false)
		require.NoError(t, err)
		require.Len(t, deleted, 1)
		createRun(t, b.s, "r1", "w", base)
		steps, err := b.s.Steps(b.ctx, "r1")
		require.NoError(t, err)
		require.Empty(t, steps, "a run made again under a deleted run's id has none of its plan")
	})
}
