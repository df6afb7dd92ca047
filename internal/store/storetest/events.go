package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/record"
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

	t.Run("AFinishingBatchCountsItsEvents", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "done", "w", base)
		createRun(t, b.s, "going", "w", base)
		fin := base.Add(time.Second)
		// One group: a run that finishes with events (its count of events
		// set with its final record), one that goes on, and a run that
		// finishes with none.
		createRun(t, b.s, "quiet", "w", base)
		require.NoError(t, b.s.SaveBatch(b.ctx, []store.Batch{
			{RunID: "done", Events: []store.Event{{Time: base, Type: "execution_started"}, {Time: fin, Type: "execution_finished"}},
				Finish: &store.Run{Status: "completed", FinishedAt: &fin}},
			{RunID: "going", Events: []store.Event{{Time: base, Type: "execution_started"}}},
			{RunID: "quiet", Finish: &store.Run{Status: "failed", FinishedAt: &fin}},
		}))
		for id, want := range map[string]int64{"done": 3, "going": 2, "quiet": 1} {
			later := []store.Event{{Time: fin, Type: "note"}}
			require.NoError(t, b.s.AppendEvents(b.ctx, id, later))
			require.Equal(t, []int64{want}, seqs(later), "run %s counts on after the group", id)
		}
		got, err := b.s.Run(b.ctx, "done")
		require.NoError(t, err)
		require.Equal(t, "completed", string(got.Status))
		got, err = b.s.Run(b.ctx, "quiet")
		require.NoError(t, err)
		require.Equal(t, "failed", string(got.Status))
	})

	t.Run("NodeEventsWithTheirStepsReadAsWritten", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)
		// Node events written with the steps they are about, in every way
		// a run writes them (a store may keep such events in the step
		// rows): a retry, a step saved again, loop visits, an event with
		// data, one without its step, two generations, an iteration that
		// differs; the run's events read back as written, in any page.
		at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
		step := func(node string, visit, gen, iter, attempts int, status string) *store.Step {
			return &store.Step{Generation: gen, Node: node, Visit: visit, Iteration: iter, StepOrder: visit, Type: "set",
				Attempts: attempts, Status: record.Status(status)}
		}
		ev := func(ms int, typ, node string, visit, iter int, data map[string]any) store.Event {
			return store.Event{Time: at(ms), Type: typ, Node: node, Visit: visit, Iteration: iter, Data: data}
		}
		batches := []store.Batch{
			{Steps: []*store.Step{step("a", 1, 1, 0, 1, "running")},
				Events: []store.Event{ev(1, "node_started", "a", 1, 0, nil)}},
			{Steps: []*store.Step{step("a", 1, 1, 0, 2, "running")},
				Events: []store.Event{
					ev(2, "node_finished", "a", 1, 0, map[string]any{"status": "failed", "error": "503"}),
					ev(3, "node_retrying", "a", 1, 0, map[string]any{"attempt": 2}),
					ev(4, "node_started", "a", 1, 0, nil),
				}},
			{Steps: []*store.Step{step("a", 1, 1, 0, 2, "success")},
				Events: []store.Event{ev(5, "node_finished", "a", 1, 0, map[string]any{"status": "success"})}},
			{Steps: []*store.Step{step("b", 1, 1, 0, 1, "success"), step("b", 2, 1, 1, 1, "success")},
				Events: []store.Event{
					ev(6, "node_started", "b", 1, 0, nil),
					ev(7, "node_finished", "b", 1, 0, map[string]any{"status": "success"}),
					ev(8, "loop_iteration", "loop", 1, 1, map[string]any{"index": 1}),
					ev(9, "node_started", "b", 2, 1, map[string]any{"note": "with data"}),
					ev(10, "node_finished", "b", 2, 1, map[string]any{"status": "success"}),
				}},
			{Events: []store.Event{
				ev(11, "tool_call", "a", 1, 0, map[string]any{"tool": "fs.read"}),
				ev(12, "node_finished", "c", 1, 0, map[string]any{"status": "success"}),
			}},
			{Steps: []*store.Step{step("d", 1, 1, 0, 1, "success"), step("d", 1, 2, 0, 1, "success")},
				Events: []store.Event{ev(13, "node_started", "d", 1, 0, nil), ev(14, "node_finished", "d", 1, 0, nil)}},
			{Steps: []*store.Step{step("e", 1, 1, 3, 1, "success")},
				Events: []store.Event{ev(15, "node_started", "e", 1, 0, nil), ev(16, "node_finished", "e", 1, 2, nil)}},
			{Steps: []*store.Step{step("a", 1, 1, 0, 2, "success"), step("b", 1, 1, 0, 1, "success")}},
			{Steps: []*store.Step{step("f", 1, 1, 0, 1, "success"), step("f", 1, 1, 0, 1, "success")},
				Events: []store.Event{ev(17, "node_started", "f", 1, 0, nil), ev(18, "node_finished", "f", 1, 0, nil)}},
		}
		var want []store.Event
		for i := range batches {
			batches[i].RunID = "r1"
			require.NoError(t, b.s.SaveBatch(b.ctx, batches[i:i+1]))
			want = append(want, batches[i].Events...)
		}
		// A group of two batches of the run, the second saving the first's
		// step again with another finish.
		group := []store.Batch{
			{RunID: "r1", Steps: []*store.Step{step("g", 1, 1, 0, 1, "failed")},
				Events: []store.Event{ev(19, "node_started", "g", 1, 0, nil), ev(20, "node_finished", "g", 1, 0, map[string]any{"status": "failed"})}},
			{RunID: "r1", Steps: []*store.Step{step("g", 1, 1, 0, 2, "success")},
				Events: []store.Event{ev(21, "node_started", "g", 1, 0, nil), ev(22, "node_finished", "g", 1, 0, map[string]any{"status": "success"})}},
		}
		require.NoError(t, b.s.SaveBatch(b.ctx, group))
		want = append(want, group[0].Events...)
		want = append(want, group[1].Events...)
		last := []store.Event{ev(23, "execution_finished", "", 0, 0, map[string]any{})}
		require.NoError(t, b.s.AppendEvents(b.ctx, "r1", last))
		want = append(want, last...)
		for i := range want {
			require.Equal(t, int64(i+1), want[i].Seq, "event %d numbered on without a gap", i)
		}

		got, err := b.s.Events(b.ctx, "r1", 0, 0)
		require.NoError(t, err)
		require.Equal(t, want, got)
		for after := range want {
			page, err := b.s.Events(b.ctx, "r1", int64(after), 3)
			require.NoError(t, err)
			require.Equal(t, want[after:min(after+3, len(want))], page, "3 events after %d", after)
		}
		steps, err := b.s.StepHistory(b.ctx, "r1")
		require.NoError(t, err)
		var keys []string
		for _, st := range steps {
			keys = append(keys, fmt.Sprintf("g%d %s#%d %s/%d", st.Generation, st.Node, st.Visit, st.Status, st.Attempts))
		}
		require.Equal(t, []string{"g1 a#1 success/2", "g1 b#1 success/1", "g1 d#1 success/1", "g1 e#1 success/1",
			"g1 f#1 success/1", "g1 g#1 success/2", "g1 b#2 success/1", "g2 d#1 success/1"}, keys, "the steps are as saved")
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
