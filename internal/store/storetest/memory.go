package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// testMemory checks memory threads.
func testMemory(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()

	t.Run("ThreadsKeepMessagesInOrderPerWorkflow", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "chat", base)
		createRun(t, b.s, "r2", "chat", base.Add(time.Second))
		keep := func(thread string, src store.MemorySource, contents ...string) []*store.MemoryMessage {
			t.Helper()
			var msgs []*store.MemoryMessage
			for i, c := range contents {
				role := "user"
				if i%2 == 1 {
					role = "assistant"
				}
				msgs = append(msgs, &store.MemoryMessage{Role: role, Content: c})
			}
			require.NoError(t, b.s.ReplaceMemory(b.ctx, "chat", thread, src, msgs))
			return msgs
		}
		first := keep("t1", store.MemorySource{RunID: "r1", Step: "agent/1"}, "hello", "hi Ada")
		require.Positive(t, first[0].Seq, "Seq is written back")
		require.Greater(t, first[1].Seq, first[0].Seq)
		require.False(t, first[0].CreatedAt.IsZero(), "CreatedAt is written back")
		keep("t2", store.MemorySource{RunID: "r1", Step: "agent/1"}, "another thread", "yes")
		keep("t1", store.MemorySource{RunID: "r2", Step: "agent/1"}, "and then?", "then bye")

		all, err := b.s.Memory(b.ctx, "chat", "t1", 0, store.MemorySource{})
		require.NoError(t, err)
		require.Equal(t, []string{"hello", "hi Ada", "and then?", "then bye"}, memoryContents(all), "oldest first, one thread")
		require.Equal(t, "assistant", all[1].Role)
		require.Equal(t, "r2", all[2].RunID)
		require.Equal(t, "agent/1", all[2].Step)

		last, err := b.s.Memory(b.ctx, "chat", "t1", 3, store.MemorySource{})
		require.NoError(t, err)
		require.Equal(t, []string{"hi Ada", "and then?", "then bye"}, memoryContents(last), "the last three, oldest first")

		none, err := b.s.Memory(b.ctx, "other", "t1", 0, store.MemorySource{})
		require.NoError(t, err)
		require.Empty(t, none, "threads are per workflow")

		err = b.s.ReplaceMemory(b.ctx, "chat", "t1", store.MemorySource{RunID: "nope", Step: "agent/1"}, []*store.MemoryMessage{{Role: "user", Content: "x"}})
		require.ErrorIs(t, err, store.ErrNotFound, "a message needs its run")
	})

	t.Run("AStepRunAgainReplacesWhatItKept", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "chat", base)
		createRun(t, b.s, "r2", "chat", base.Add(time.Second))
		createRun(t, b.s, "r3", "chat", base.Add(2*time.Second))
		msgs := func(contents ...string) []*store.MemoryMessage {
			var out []*store.MemoryMessage
			for _, c := range contents {
				out = append(out, &store.MemoryMessage{Role: "user", Content: c})
			}
			return out
		}
		r1 := store.MemorySource{RunID: "r1", Step: "agent/1"}
		require.NoError(t, b.s.ReplaceMemory(b.ctx, "chat", "t", r1, msgs("first try")))
		require.NoError(t, b.s.ReplaceMemory(b.ctx, "chat", "t", store.MemorySource{RunID: "r1", Step: "other/1"}, msgs("other step")))
		require.NoError(t, b.s.ReplaceMemory(b.ctx, "chat", "t", r1, msgs("resumed")))
		all, err := b.s.Memory(b.ctx, "chat", "t", 0, store.MemorySource{})
		require.NoError(t, err)
		require.Equal(t, []string{"other step", "resumed"}, memoryContents(all), "the step's second write replaces its first")

		mine, err := b.s.Memory(b.ctx, "chat", "t", 0, r1)
		require.NoError(t, err)
		require.Equal(t, []string{"other step"}, memoryContents(mine), "a step's own messages are left out of its memory")

		rerun := store.MemorySource{RunID: "r2", Step: "agent/1", Replaces: "r1"}
		before, err := b.s.Memory(b.ctx, "chat", "t", 0, rerun)
		require.NoError(t, err)
		require.Equal(t, []string{"other step"}, memoryContents(before), "a rerun does not see the exchange it re-runs")
		require.NoError(t, b.s.ReplaceMemory(b.ctx, "chat", "t", rerun, msgs("rerun")))
		require.NoError(t, b.s.ReplaceMemory(b.ctx, "chat", "t", store.MemorySource{RunID: "r3", Step: "agent/1", Replaces: "r2"}, msgs("rerun of the rerun")))
		all, err = b.s.Memory(b.ctx, "chat", "t", 0, store.MemorySource{})
		require.NoError(t, err)
		require.Equal(t, []string{"other step", "rerun of the rerun"}, memoryContents(all), "a rerun replaces the run it re-runs")
	})

	t.Run("MessagesGoWithTheirRuns", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "old", "chat", base)
		createRun(t, b.s, "new", "chat", base.Add(time.Hour))
		for _, id := range []string{"old", "new"} {
			require.NoError(t, b.s.ReplaceMemory(b.ctx, "chat", "t", store.MemorySource{RunID: id, Step: "agent/1"},
				[]*store.MemoryMessage{{Role: "user", Content: id}}))
		}
		_, err := b.s.DeleteRuns(b.ctx, base.Add(time.Minute), false)
		require.NoError(t, err)
		left, err := b.s.Memory(b.ctx, "chat", "t", 0, store.MemorySource{})
		require.NoError(t, err)
		require.Equal(t, []string{"new"}, memoryContents(left), "a pruned run's messages are gone")
	})
}
