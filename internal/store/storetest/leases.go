package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// testLeases checks run ownership: claims, leases and cancel requests.
func testLeases(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()
	owner := func(tok string) store.Owner { return store.Owner{Host: "h1", PID: 100, Token: tok} }

	t.Run("CreateWithOwnerHoldsALease", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r := &store.Run{ID: "r1", Workflow: "w", Status: "running", StartedAt: base, Owner: owner("t1"), LeaseTTL: time.Hour}
		require.NoError(t, b.s.CreateRun(b.ctx, r))
		require.Equal(t, 1, r.Generation)
		require.WithinDuration(t, time.Now().Add(time.Hour), r.LeaseUntil, time.Minute, "the lease runs from the database's now")

		got, err := b.s.Run(b.ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, owner("t1"), got.Owner)
		require.False(t, got.LeaseExpired)
		require.Equal(t, r.LeaseUntil, got.LeaseUntil)

		_, err = b.s.ClaimRun(b.ctx, "r1", owner("t2"), time.Hour, "")
		require.ErrorIs(t, err, store.ErrOwned, "a live lease cannot be claimed")
		var oe *store.OwnedError
		require.ErrorAs(t, err, &oe)
		require.Equal(t, owner("t1"), oe.Owner, "the refusal names the owner")

		c, err := b.s.ClaimRun(b.ctx, "r1", owner("t2"), time.Hour, "t1")
		require.NoError(t, err, "the caller that found t1 dead takes over")
		require.Equal(t, owner("t2"), c.Owner)
		require.Equal(t, 2, c.Generation, "a claim starts the next generation")
	})

	t.Run("AnExpiredLeaseIsInterruptedAndClaimedOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "w", Status: "running", StartedAt: base,
			Owner: owner("t1"), LeaseTTL: -time.Second}))
		got, err := b.s.Run(b.ctx, "r1")
		require.NoError(t, err)
		require.True(t, got.LeaseExpired)
		runs, err := b.s.ListRuns(b.ctx, store.RunFilter{Status: "interrupted"})
		require.NoError(t, err)
		require.Equal(t, []string{"r1"}, runIDs(runs))

		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, errs[i] = b.s.ClaimRun(b.ctx, "r1", owner(fmt.Sprint("c", i)), time.Hour, "")
			}(i)
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
			} else {
				require.ErrorIs(t, err, store.ErrOwned)
			}
		}
		require.Equal(t, 1, won, "exactly one of the claims at once proceeds")
		runs, err = b.s.ListRuns(b.ctx, store.RunFilter{Status: "interrupted"})
		require.NoError(t, err)
		require.Empty(t, runs)
	})

	t.Run("RenewAndCancel", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "w", Status: "running", StartedAt: base,
			Owner: owner("t1"), LeaseTTL: time.Second}))
		cancel, err := b.s.RenewLease(b.ctx, "r1", "t1", time.Hour)
		require.NoError(t, err)
		require.False(t, cancel)
		got, err := b.s.Run(b.ctx, "r1")
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(time.Hour), got.LeaseUntil, time.Minute)

		r, err := b.s.RequestCancel(b.ctx, "r1", false)
		require.NoError(t, err)
		require.NotNil(t, r.CancelRequested)
		require.False(t, r.CancelLetFinish)
		cancel, err = b.s.RenewLease(b.ctx, "r1", "t1", time.Hour)
		require.NoError(t, err)
		require.True(t, cancel, "the owner sees the cancel request")

		_, err = b.s.RenewLease(b.ctx, "r1", "other", time.Hour)
		require.ErrorIs(t, err, store.ErrLeaseLost)
		_, err = b.s.RenewLease(b.ctx, "nope", "t1", time.Hour)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = b.s.RequestCancel(b.ctx, "nope", false)
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("CancelModes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for _, id := range []string{"soft", "hard"} {
			require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: id, Workflow: "w", Status: "running", StartedAt: base,
				Owner: owner("t-" + id), LeaseTTL: time.Hour}))
		}
		r, err := b.s.RequestCancel(b.ctx, "soft", true)
		require.NoError(t, err)
		require.NotNil(t, r.CancelRequested)
		require.True(t, r.CancelLetFinish, "the request lets running nodes finish")
		first := *r.CancelRequested
		got, err := b.s.Run(b.ctx, "soft")
		require.NoError(t, err)
		require.True(t, got.CancelLetFinish)

		r, err = b.s.RequestCancel(b.ctx, "soft", false)
		require.NoError(t, err)
		require.False(t, r.CancelLetFinish, "a request that stops running nodes replaces one that lets them finish")
		require.Equal(t, first, *r.CancelRequested, "the request keeps its first time")

		_, err = b.s.RequestCancel(b.ctx, "hard", false)
		require.NoError(t, err)
		r, err = b.s.RequestCancel(b.ctx, "hard", true)
		require.NoError(t, err)
		require.False(t, r.CancelLetFinish, "a request that lets nodes finish never softens one that stops them")
	})

	t.Run("FencedBatchAndFinishCommitTogether", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "w", Status: "running", StartedAt: base,
			Owner: owner("t1"), LeaseTTL: time.Hour}))
		err := b.s.SaveBatch(b.ctx, []store.Batch{{RunID: "r1", Token: "stale",
			Steps:  []*store.Step{{StepOrder: 1, Node: "a", Visit: 1, Status: "success"}},
			Events: []store.Event{{Time: base, Type: "x"}}}})
		require.ErrorIs(t, err, store.ErrLeaseLost)
		steps, err := b.s.Steps(b.ctx, "r1")
		require.NoError(t, err)
		require.Empty(t, steps, "a stale owner writes nothing")

		fin := base.Add(time.Minute)
		require.NoError(t, b.s.SaveBatch(b.ctx, []store.Batch{{RunID: "r1", Token: "t1",
			Steps:  []*store.Step{{StepOrder: 1, Node: "a", Visit: 1, Status: "success"}},
			Finish: &store.Run{Status: "completed", Outputs: map[string]any{"x": 1}, FinishedAt: &fin, Tokens: 7}}}))
		got, err := b.s.Run(b.ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, "completed", string(got.Status))
		require.Equal(t, map[string]any{"x": 1}, got.Outputs)
		require.Equal(t, 7, got.Tokens)
		require.Equal(t, store.Owner{}, got.Owner, "finishing releases the run")
		require.True(t, got.LeaseExpired)

		c, err := b.s.ClaimRun(b.ctx, "r1", owner("t2"), time.Hour, "")
		require.NoError(t, err, "a finished run can be claimed")
		require.Equal(t, "running", string(c.Status))
		require.Nil(t, c.FinishedAt)
	})

	t.Run("PruneSparesLiveRunsAndTakesChildren", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "live", Workflow: "w", Status: "running", StartedAt: base,
			Owner: owner("t1"), LeaseTTL: time.Hour}))
		require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "livechild", ParentID: "live", Workflow: "c", Status: "completed", StartedAt: base}))
		createRun(t, b.s, "old", "w", base)
		require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "old.sub1", ParentID: "old", Workflow: "c", Status: "completed",
			StartedAt: base.Add(2 * time.Hour)}))
		createRun(t, b.s, "new", "w", base.Add(2*time.Hour))

		cutoff := base.Add(time.Hour)
		would, err := b.s.DeleteRuns(b.ctx, cutoff, true)
		require.NoError(t, err)
		require.Equal(t, []string{"old", "old.sub1"}, runIDs(would), "a child goes with its parent, a live run stays")
		_, err = b.s.Run(b.ctx, "old")
		require.NoError(t, err, "a dry run deletes nothing")

		gone, err := b.s.DeleteRuns(b.ctx, cutoff, false)
		require.NoError(t, err)
		require.Equal(t, runIDs(would), runIDs(gone))
		runs, err := b.s.ListRuns(b.ctx, store.RunFilter{})
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"live", "livechild", "new"}, runIDs(runs))
		kids, err := b.s.ListRuns(b.ctx, store.RunFilter{Parent: "live"})
		require.NoError(t, err)
		require.Equal(t, []string{"livechild"}, runIDs(kids))
	})
}
