package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// testEvents checks the event log.
func testEvents(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()

	t.Run("SeqCountsOnAcrossBatches", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)
		createRun(t, b.s, "r2", "w", base)

		first := []store.Event{
			{Time: base, Type: "execution_started", Data: map[string]any{"inputs": map[string]any{"n": 1}}},
			{Time: base.Add(time.Millisecond), Type: "node_started", Node: "a", Visit: 1},
			{Time: base.Add(2 * time.Millisecond), Type: "loop_iteration", Node: "loop", Visit: 1, Iteration: 2,
				Data: map[string]any{"iteration": 2, "ratio": 0.5}},
		}
		require.NoError(t, b.s.AppendEvents(b.ctx, "r1", first))
		second := []store.Event{
			{Time: base.Add(3 * time.Millisecond), Type: "node_finished", Node: "a", Visit: 1},
			{Time: base.Add(4 * time.Millisecond), Type: "execution_finished", Data: map[string]any{}},
		}
		require.NoError(t, b.s.AppendEvents(b.ctx, "r1", second))
		other := []store.Event{{Time: base, Type: "execution_started"}}
		require.NoError(t, b.s.AppendEvents(b.ctx, "r2", other))

		require.Equal(t, []int64{1, 2, 3}, seqs(first), "AppendEvents sets Seq in the slice")
		require.Equal(t, []int64{4, 5}, seqs(second), "a later batch counts on")
		require.Equal(t, []int64{1}, seqs(other), "each run counts from 1")
		require.Equal(t, "r1", first[0].RunID, "AppendEvents sets RunID in the slice")

		got, err := b.s.Events(b.ctx, "r1", 0, 0)
		require.NoError(t, err)
		require.Equal(t, append(first, second...), got)
	})

	t.Run("Paging", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)

		evs := make([]store.Event, 5)
		for i := range evs {
			evs[i] = store.Event{Time: base, Type: "tool_call", Node: "agent", Visit: 1}
		}
		require.NoError(t, b.s.AppendEvents(b.ctx, "r1", evs))

		for _, tc := range []struct {
			name     string
			afterSeq int64
			limit    int
			want     []int64
		}{
			{"all", 0, 0, []int64{1, 2, 3, 4, 5}},
			{"first page", 0, 2, []int64{1, 2}},
			{"next page", 2, 2, []int64{3, 4}},
			{"last page", 4, 2, []int64{5}},
			{"past the end", 5, 2, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := b.s.Events(b.ctx, "r1", tc.afterSeq, tc.limit)
				require.NoError(t, err)
				require.Equal(t, tc.want, seqs(got))
			})
		}
	})

	t.Run("ConcurrentAppendsGetDistinctSeqs", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)

		const writers, batches, size = 6, 5, 3
		var wg sync.WaitGroup
		errs := make(chan error, writers*batches)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range batches {
					evs := make([]store.Event, size)
					for i := range evs {
						evs[i] = store.Event{Time: base, Type: "tool_call", Node: fmt.Sprintf("n%d", w)}
					}
					errs <- b.s.AppendEvents(b.ctx, "r1", evs)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}

		got, err := b.s.Events(b.ctx, "r1", 0, 0)
		require.NoError(t, err)
		require.Len(t, got, writers*batches*size)
		for i, ev := range got {
			require.Equal(t, int64(i+1), ev.Seq, "seqs run 1, 2, 3… without gaps")
		}
	})

	t.Run("EmptyBatch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)

		require.NoError(t, b.s.AppendEvents(b.ctx, "r1", nil))
		evs := []store.Event{{Time: base, Type: "execution_started"}}
		require.NoError(t, b.s.AppendEvents(b.ctx, "r1", evs))
		require.Equal(t, int64(1), evs[0].Seq, "an empty batch uses no seq")
	})

	t.Run("UnknownRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)

		err := b.s.AppendEvents(b.ctx, "nope", []store.Event{{Time: base, Type: "execution_started"}})
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = b.s.Events(b.ctx, "nope", 0, 0)
		require.ErrorIs(t, err, store.ErrNotFound)

		got, err := b.s.Events(b.ctx, "r1", 0, 0)
		require.NoError(t, err, "a run without events is not an error")
		require.Empty(t, got)
	})
}
