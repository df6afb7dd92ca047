package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// testSchedules checks schedules.
func testSchedules(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()
	at := func(sec int) time.Time { return base.Truncate(time.Second).Add(time.Duration(sec) * time.Second) }

	t.Run("SetKeepsAnUnchangedSpec", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		got, err := b.s.SetSchedule(b.ctx, store.Schedule{Workflow: "w", Trigger: "nightly", Spec: "30 2 * * *|UTC", NextFire: at(10)})
		require.NoError(t, err)
		require.True(t, got.NextFire.Equal(at(10)))
		require.True(t, got.LastFire.IsZero(), "no fire yet")
		require.Empty(t, got.LastRunID)
		require.False(t, got.UpdatedAt.IsZero())

		ok, err := b.s.AdvanceSchedule(b.ctx, store.Schedule{Workflow: "w", Trigger: "nightly", Spec: "30 2 * * *|UTC",
			NextFire: at(20), LastFire: at(10), LastRunID: "r1"}, at(10))
		require.NoError(t, err)
		require.True(t, ok)

		// Set again with the same spec (a reload, another server):
		// the stored fire times go on.
		got, err = b.s.SetSchedule(b.ctx, store.Schedule{Workflow: "w", Trigger: "nightly", Spec: "30 2 * * *|UTC", NextFire: at(99)})
		require.NoError(t, err)
		require.True(t, got.NextFire.Equal(at(20)), "kept: %v", got.NextFire)
		require.True(t, got.LastFire.Equal(at(10)))
		require.Equal(t, "r1", got.LastRunID)

		// Another spec starts afresh.
		got, err = b.s.SetSchedule(b.ctx, store.Schedule{Workflow: "w", Trigger: "nightly", Spec: "0 3 * * *|UTC", NextFire: at(50)})
		require.NoError(t, err)
		require.True(t, got.NextFire.Equal(at(50)))
		require.True(t, got.LastFire.IsZero())
		require.Empty(t, got.LastRunID)

		all, err := b.s.Schedules(b.ctx)
		require.NoError(t, err)
		require.Len(t, all, 1)
		require.Equal(t, got, all[0])
	})

	t.Run("AdvanceOnlyFromTheStoredTime", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		sc := store.Schedule{Workflow: "w", Trigger: "tick", Spec: "@every 1s", NextFire: at(1)}
		_, err := b.s.SetSchedule(b.ctx, sc)
		require.NoError(t, err)

		next := sc
		next.NextFire, next.LastFire, next.LastRunID = at(2), at(1), "a"
		ok, err := b.s.AdvanceSchedule(b.ctx, next, at(0))
		require.NoError(t, err)
		require.False(t, ok, "from a time that is not the stored one")
		other := next
		other.Spec = "@every 2s"
		ok, err = b.s.AdvanceSchedule(b.ctx, other, at(1))
		require.NoError(t, err)
		require.False(t, ok, "with another spec")
		ok, err = b.s.AdvanceSchedule(b.ctx, next, at(1))
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = b.s.AdvanceSchedule(b.ctx, next, at(1))
		require.NoError(t, err)
		require.False(t, ok, "the same fire twice")

		_, err = b.s.AdvanceSchedule(b.ctx, store.Schedule{Workflow: "w", Trigger: "nope", Spec: "@every 1s", NextFire: at(2)}, at(1))
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("ConcurrentAdvancesClaimEachFireOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.s.SetSchedule(b.ctx, store.Schedule{Workflow: "w", Trigger: "tick", Spec: "@every 1s", NextFire: at(0)})
		require.NoError(t, err)
		const fires, claimants = 20, 4
		var mu sync.Mutex
		won := map[int]int{}
		var wg sync.WaitGroup
		for c := range claimants {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for f := range fires {
					ok, err := b.s.AdvanceSchedule(b.ctx, store.Schedule{Workflow: "w", Trigger: "tick", Spec: "@every 1s",
						NextFire: at(f + 1), LastFire: at(f), LastRunID: fmt.Sprintf("c%d-f%d", c, f)}, at(f))
					if !assertNoError(t, err) {
						return
					}
					if ok {
						mu.Lock()
						won[f]++
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		// Claimants that lag may find a fire taken and the next
		// ones too; each fire is claimed by at most one, and the
		// last by exactly one, or a claim was lost.
		for f, n := range won {
			require.Equal(t, 1, n, "fire %d claimed %d times", f, n)
		}
		all, err := b.s.Schedules(b.ctx)
		require.NoError(t, err)
		require.True(t, all[0].NextFire.Equal(at(fires)), "every fire was claimed: next is %v", all[0].NextFire)
		require.Len(t, won, fires)
	})

	t.Run("ListedByWorkflowAndTrigger", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for _, k := range [][2]string{{"b", "x"}, {"a", "y"}, {"a", "x"}} {
			_, err := b.s.SetSchedule(b.ctx, store.Schedule{Workflow: k[0], Trigger: k[1], Spec: "@daily|UTC", NextFire: at(1)})
			require.NoError(t, err)
		}
		all, err := b.s.Schedules(b.ctx)
		require.NoError(t, err)
		var keys []string
		for _, sc := range all {
			keys = append(keys, sc.Workflow+"/"+sc.Trigger)
		}
		require.Equal(t, []string{"a/x", "a/y", "b/x"}, keys)
	})
}
