package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// testSignals checks signals.
func testSignals(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()

	t.Run("RecordedOncePerVisitInOrder", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)
		createRun(t, b.s, "r2", "w", base)

		first := &store.Signal{RunID: "r1", Node: "approve", Visit: 1,
			Data: map[string]any{"approved": true, "by": "Ada", "n": 2, "tags": []any{"a", 1.5}}, CreatedAt: base}
		require.NoError(t, b.s.SaveSignal(b.ctx, first))
		require.Equal(t, int64(1), first.Seq)
		before := time.Now().Add(-time.Second)
		second := &store.Signal{RunID: "r1", Node: "approve", Visit: 2, Data: "yes"}
		require.NoError(t, b.s.SaveSignal(b.ctx, second))
		require.Equal(t, int64(2), second.Seq)
		require.WithinRange(t, second.CreatedAt, before, time.Now().Add(time.Second), "a zero CreatedAt becomes now")
		other := &store.Signal{RunID: "r2", Node: "approve", Visit: 1}
		require.NoError(t, b.s.SaveSignal(b.ctx, other))
		require.Equal(t, int64(1), other.Seq, "each run counts its own signals")

		err := b.s.SaveSignal(b.ctx, &store.Signal{RunID: "r1", Node: "approve", Visit: 1, Data: "again"})
		require.ErrorIs(t, err, store.ErrExists, "a visit takes one signal")

		sigs, err := b.s.Signals(b.ctx, "r1", 0)
		require.NoError(t, err)
		require.Len(t, sigs, 2)
		require.Equal(t, store.Signal{RunID: "r1", Node: "approve", Visit: 1, Seq: 1, CreatedAt: base,
			Data: map[string]any{"approved": true, "by": "Ada", "n": 2, "tags": []any{"a", 1.5}}}, sigs[0],
			"the first signal is kept, its data round-trips")
		require.Equal(t, "yes", sigs[1].Data)
		require.WithinDuration(t, second.CreatedAt, sigs[1].CreatedAt, time.Microsecond)

		after, err := b.s.Signals(b.ctx, "r1", 1)
		require.NoError(t, err)
		require.Len(t, after, 1)
		require.Equal(t, int64(2), after[0].Seq)
		none, err := b.s.Signals(b.ctx, "r1", 2)
		require.NoError(t, err)
		require.Empty(t, none)
		nilData, err := b.s.Signals(b.ctx, "r2", 0)
		require.NoError(t, err)
		require.Nil(t, nilData[0].Data)
	})

	t.Run("UnknownRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		err := b.s.SaveSignal(b.ctx, &store.Signal{RunID: "nope", Node: "a", Visit: 1})
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = b.s.Signals(b.ctx, "nope", 0)
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("GoWithTheirRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)
		require.NoError(t, b.s.SaveSignal(b.ctx, &store.Signal{RunID: "r1", Node: "a", Visit: 1}))
		_, err := b.s.DeleteRuns(b.ctx, base.Add(time.Hour), false)
		require.NoError(t, err)
		createRun(t, b.s, "r1", "w", base)
		sigs, err := b.s.Signals(b.ctx, "r1", 0)
		require.NoError(t, err)
		require.Empty(t, sigs, "a recreated run starts without signals")
	})
}

// testWaits checks waiting runs and their wake-up times.
func testWaits(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()
	owner := store.Owner{Host: "h1", PID: 100, Token: "t1"}

	t.Run("StepsKeepTheirWakeUpTime", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)
		wake := base.Add(time.Hour)
		require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{
			{StepOrder: 1, Node: "pause", Visit: 1, Status: "waiting", WakeAt: &wake},
			{StepOrder: 2, Node: "other", Visit: 1, Status: "success"},
		}))
		steps, err := b.s.Steps(b.ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, &wake, steps[0].WakeAt)
		require.Nil(t, steps[1].WakeAt)
	})

	t.Run("AWaitingRunIsDueAtItsWakeUpTime", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		park := func(id string, wake *time.Time) {
			require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: id, Workflow: "w", Status: "running", StartedAt: base,
				Owner: owner, LeaseTTL: time.Hour}))
			require.NoError(t, b.s.SaveBatch(b.ctx, []store.Batch{{RunID: id, Token: owner.Token,
				Finish: &store.Run{Status: "waiting", WakeAt: wake}}}))
		}
		soon, later := base.Add(time.Minute), base.Add(time.Hour)
		park("soon", &soon)
		park("later", &later)
		park("signal", nil)
		require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "running", Workflow: "w", Status: "running", StartedAt: base,
			Owner: owner, LeaseTTL: -time.Second}))

		got, err := b.s.Run(b.ctx, "soon")
		require.NoError(t, err)
		require.Equal(t, "waiting", string(got.Status))
		require.Equal(t, &soon, got.WakeAt)
		require.Equal(t, store.Owner{}, got.Owner, "a waiting run has no owner")

		for _, tc := range []struct {
			name string
			by   time.Time
			want []string
		}{
			{"none yet", base, nil},
			{"at its time", soon, []string{"soon"}},
			{"both", later.Add(time.Second), []string{"later", "soon"}},
		} {
			runs, err := b.s.ListRuns(b.ctx, store.RunFilter{DueBy: tc.by})
			require.NoError(t, err)
			require.ElementsMatch(t, tc.want, runIDs(runs), tc.name)
		}
		runs, err := b.s.ListRuns(b.ctx, store.RunFilter{Status: "interrupted"})
		require.NoError(t, err)
		require.Equal(t, []string{"running"}, runIDs(runs), "a waiting run is not interrupted")
		runs, err = b.s.ListRuns(b.ctx, store.RunFilter{Status: "waiting"})
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"soon", "later", "signal"}, runIDs(runs))

		require.NoError(t, b.s.SaveSignal(b.ctx, &store.Signal{RunID: "signal", Node: "approve", Visit: 1, CreatedAt: base.Add(time.Second)}))
		require.NoError(t, b.s.SaveSignal(b.ctx, &store.Signal{RunID: "later", Node: "approve", Visit: 1, CreatedAt: base.Add(2 * time.Second)}))
		require.NoError(t, b.s.SaveSignal(b.ctx, &store.Signal{RunID: "running", Node: "approve", Visit: 1, CreatedAt: base}))
		runs, err = b.s.ListRuns(b.ctx, store.RunFilter{DueBy: base.Add(2 * time.Second)})
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"signal", "later"}, runIDs(runs), "a signal makes a waiting run due at once")
		got, err = b.s.Run(b.ctx, "running")
		require.NoError(t, err)
		require.Nil(t, got.WakeAt, "a run that is not waiting is left alone")

		c, err := b.s.ClaimRun(b.ctx, "soon", store.Owner{Host: "h2", PID: 7, Token: "t2"}, time.Hour, "")
		require.NoError(t, err, "a waiting run is claimed to resume it")
		require.Equal(t, "running", string(c.Status))
		require.Nil(t, c.WakeAt, "the claim clears the wake-up time")
		runs, err = b.s.ListRuns(b.ctx, store.RunFilter{DueBy: later.Add(time.Second)})
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"later", "signal"}, runIDs(runs), "a claimed run is no longer due")
	})
}
