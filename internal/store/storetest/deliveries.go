package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// testDeliveries checks owed deliveries.
func testDeliveries(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()
	owner := func(tok string) store.Owner { return store.Owner{Host: "h1", PID: 100, Token: tok} }

	t.Run("OwedUntilEndedAndHeldByOne", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "w", Status: "completed", StartedAt: base}))
		require.NoError(t, b.s.OweDelivery(b.ctx, "r1", 1, owner("t1"), time.Hour))
		require.NoError(t, b.s.OweDelivery(b.ctx, "r1", 1, owner("t9"), time.Hour), "owing it again changes nothing")
		ds, err := b.s.Deliveries(b.ctx)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Equal(t, "r1", ds[0].RunID)
		require.Equal(t, 1, ds[0].Generation)
		require.Zero(t, ds[0].Attempts)
		require.Equal(t, owner("t1"), ds[0].Owner)
		require.False(t, ds[0].LeaseExpired)

		_, err = b.s.ClaimDelivery(b.ctx, "r1", 1, owner("t2"), time.Hour, "")
		require.ErrorIs(t, err, store.ErrOwned, "a live lease cannot be claimed")
		var oe *store.OwnedError
		require.ErrorAs(t, err, &oe)
		require.Equal(t, owner("t1"), oe.Owner)

		next := time.Now().Add(time.Minute).UTC().Truncate(time.Microsecond)
		require.NoError(t, b.s.DeliveryAttempted(b.ctx, "r1", 1, "t1", 2, next, time.Second))
		require.ErrorIs(t, b.s.DeliveryAttempted(b.ctx, "r1", 1, "t2", 3, next, time.Second), store.ErrLeaseLost)
		ds, err = b.s.Deliveries(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 2, ds[0].Attempts)
		require.True(t, next.Equal(ds[0].NextAt), "when the next attempt is due: %v", ds[0].NextAt)
		require.WithinDuration(t, next.Add(time.Second), ds[0].LeaseUntil, time.Second, "held through the wait and one attempt")

		d, err := b.s.ClaimDelivery(b.ctx, "r1", 1, owner("t2"), time.Hour, "t1")
		require.NoError(t, err, "the caller that found t1 dead takes over")
		require.Equal(t, owner("t2"), d.Owner)
		require.Equal(t, 2, d.Attempts, "the attempts go on from where they were")
		require.ErrorIs(t, b.s.EndDelivery(b.ctx, "r1", 1, "t1"), store.ErrLeaseLost, "the old owner cannot end it")
		require.NoError(t, b.s.EndDelivery(b.ctx, "r1", 1, "t2"))
		ds, err = b.s.Deliveries(b.ctx)
		require.NoError(t, err)
		require.Empty(t, ds)
		_, err = b.s.ClaimDelivery(b.ctx, "r1", 1, owner("t3"), time.Hour, "")
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("AnExpiredLeaseIsClaimedOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "w", Status: "failed", StartedAt: base}))
		require.NoError(t, b.s.OweDelivery(b.ctx, "r1", 1, owner("t1"), -time.Second))
		ds, err := b.s.Deliveries(b.ctx)
		require.NoError(t, err)
		require.True(t, ds[0].LeaseExpired)
		const n = 6
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, errs[i] = b.s.ClaimDelivery(b.ctx, "r1", 1, owner(fmt.Sprint("c", i)), time.Hour, "")
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
	})

	t.Run("GoWithTheirRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "w", Status: "completed", StartedAt: base}))
		require.NoError(t, b.s.OweDelivery(b.ctx, "r1", 1, owner("t1"), time.Hour))
		_, err := b.s.DeleteRuns(b.ctx, base.Add(time.Second), false)
		require.NoError(t, err)
		ds, err := b.s.Deliveries(b.ctx)
		require.NoError(t, err)
		require.Empty(t, ds)
	})
}
