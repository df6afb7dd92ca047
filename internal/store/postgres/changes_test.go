package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// TestStepsSinceReadsWhatWasWrittenSinceTheLastLook: a follower's first
// look reads every step and plan of the generation; each later look reads
// exactly the step rows written (new, or saved again) and the plans made
// since, whatever the order in which their transactions began and
// committed: a transaction that had not committed at a look is read at
// the next one.
func TestStepsSinceReadsWhatWasWrittenSinceTheLastLook(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, pgtest.URL(t))
	owner := store.Owner{Host: "h", PID: 1, Token: "t1"}
	require.NoError(t, s.CreateRun(ctx, &store.Run{ID: "r1", Workflow: "w", Status: "running", Owner: owner, LeaseTTL: time.Hour}))
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	step := func(order int, node, status string) *store.Step {
		return &store.Step{Generation: 1, StepOrder: order, Node: node, Type: "set", Visit: 1, Attempts: 1, Status: record.Status(status), StartedAt: &at}
	}
	planned := func(order int, node string) *store.Step {
		return &store.Step{Generation: 1, StepOrder: order, Node: node, Type: "set", Visit: 1, Status: "pending"}
	}
	save := func(steps []*store.Step, plan ...*store.Step) {
		t.Helper()
		require.NoError(t, s.SaveBatch(ctx, []store.Batch{{RunID: "r1", Token: "t1", Steps: steps, Plan: plan,
			Events: []store.Event{{Time: at, Type: "node_finished"}}}}))
	}
	list := func(steps []*store.Step) []string {
		out := []string{}
		for _, st := range steps {
			out = append(out, fmt.Sprintf("%d:%s %s", st.StepOrder, st.Node, st.Status))
		}
		return out
	}
	look := func(seen string) *postgres.Changes {
		t.Helper()
		ch, err := s.StepsSince(ctx, "r1", 1, seen)
		require.NoError(t, err)
		require.NotEmpty(t, ch.Seen)
		return ch
	}

	save([]*store.Step{step(1, "start", "success"), step(2, "a", "running")}, planned(3, "b"), planned(4, "c"))
	first := look("")
	require.Equal(t, []string{"1:start success", "2:a running"}, list(first.Saved))
	require.Equal(t, []string{"3:b pending", "4:c pending"}, list(first.Planned))

	same := look(first.Seen)
	require.Empty(t, same.Saved, "nothing was written since")
	require.Empty(t, same.Planned)

	// a ends (its row saved again), b starts, d is planned.
	save([]*store.Step{step(2, "a", "success"), step(3, "b", "running")}, planned(5, "d"))
	second := look(same.Seen)
	require.Equal(t, []string{"2:a success", "3:b running"}, list(second.Saved))
	require.Equal(t, []string{"5:d pending"}, list(second.Planned))

	// A transaction that writes b's end is open while the follower looks:
	// that look does not see it, the next one reads it.
	var during *postgres.Changes
	require.NoError(t, s.Tx(ctx, func(tx store.Tx) error {
		_, last, err := tx.LockRun(ctx, "r1")
		require.NoError(t, err)
		require.NoError(t, tx.SaveBatch(ctx, store.Batch{RunID: "r1", Token: "t1", Steps: []*store.Step{step(3, "b", "success")}}, last))
		during = look(second.Seen)
		return nil
	}))
	require.Empty(t, during.Saved, "not committed when the follower looked")
	after := look(during.Seen)
	require.Equal(t, []string{"3:b success"}, list(after.Saved), "the write that committed after the look is read by the next")
	require.Empty(t, look(after.Seen).Saved)

	// Another generation's look starts over, and a run that is not there
	// says so.
	other, err := s.StepsSince(ctx, "r1", 2, "")
	require.NoError(t, err)
	require.Empty(t, other.Saved)
	_, err = s.StepsSince(ctx, "nope", 1, "")
	require.ErrorIs(t, err, store.ErrNotFound)
}
