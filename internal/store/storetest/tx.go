package storetest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// testTx checks the store's transaction: what is written through it is
// committed together, or not at all.
func testTx(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()

	t.Run("WritesCommitTogether", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		run := &store.Run{ID: "r1", Workflow: "w", Status: "running", StartedAt: base}
		evs := []store.Event{{Time: base, Type: "execution_started"}, {Time: base, Type: "step_started", Node: "a", Visit: 1}}
		err := b.s.Tx(b.ctx, func(tx store.Tx) error {
			if err := tx.CreateRun(b.ctx, run); err != nil {
				return err
			}
			got, last, err := tx.LockRun(b.ctx, "r1")
			if err != nil {
				return err
			}
			require.Equal(t, "running", string(got.Status))
			require.Zero(t, last, "a new run has no events")
			return tx.SaveBatch(b.ctx, store.Batch{RunID: "r1",
				Steps:  []*store.Step{{StepOrder: 1, Node: "a", Visit: 1, Status: "success"}},
				Events: evs,
				Finish: &store.Run{Status: "completed", Outputs: map[string]any{"n": 7}},
			}, last)
		})
		require.NoError(t, err)
		require.Equal(t, []int64{1, 2}, seqs(evs), "SaveBatch numbers the events")
		require.Equal(t, "r1", evs[0].RunID)

		got, err := b.s.Run(b.ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, "completed", string(got.Status), "the final record was written")
		require.Equal(t, map[string]any{"n": 7}, got.Outputs)
		steps, err := b.s.Steps(b.ctx, "r1")
		require.NoError(t, err)
		require.Len(t, steps, 1)
		stored, err := b.s.Events(b.ctx, "r1", 0, 0)
		require.NoError(t, err)
		require.Equal(t, []int64{1, 2}, seqs(stored))
	})

	t.Run("AnErrorWritesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		stop := errors.New("stop")
		err := b.s.Tx(b.ctx, func(tx store.Tx) error {
			if err := tx.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "w", StartedAt: base}); err != nil {
				return err
			}
			return stop
		})
		require.ErrorIs(t, err, stop, "the error of fn comes back")
		_, err = b.s.Run(b.ctx, "r1")
		require.ErrorIs(t, err, store.ErrNotFound, "the run created in the transaction was rolled back")
	})

	t.Run("EventsFollowTheRunsLast", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)
		require.NoError(t, b.s.AppendEvents(b.ctx, "r1", []store.Event{{Time: base, Type: "a"}, {Time: base, Type: "b"}}))

		evs := []store.Event{{Time: base, Type: "c"}}
		require.NoError(t, b.s.Tx(b.ctx, func(tx store.Tx) error {
			_, last, err := tx.LockRun(b.ctx, "r1")
			if err != nil {
				return err
			}
			require.Equal(t, int64(2), last, "LockRun reads the run's last event")
			return tx.SaveBatch(b.ctx, store.Batch{RunID: "r1", Events: evs}, last)
		}))
		require.Equal(t, []int64{3}, seqs(evs))
		stored, err := b.s.Events(b.ctx, "r1", 0, 0)
		require.NoError(t, err)
		require.Equal(t, []int64{1, 2, 3}, seqs(stored))
	})

	t.Run("MissingAndTakenRuns", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)

		err := b.s.Tx(b.ctx, func(tx store.Tx) error {
			_, _, err := tx.LockRun(b.ctx, "nope")
			return err
		})
		require.ErrorIs(t, err, store.ErrNotFound, "LockRun of a missing run")
		err = b.s.Tx(b.ctx, func(tx store.Tx) error {
			return tx.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "w", StartedAt: base})
		})
		require.ErrorIs(t, err, store.ErrExists, "CreateRun of a run id used already")
	})
}
