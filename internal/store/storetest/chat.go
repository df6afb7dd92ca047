package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// testChat checks chat turns.
func testChat(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()

	t.Run("TurnsCountPerConversationWithTheirRuns", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		done := createRun(t, b.s, "r1", "chat", base)
		for i, id := range []string{"r2", "r3", "r4"} {
			createRun(t, b.s, id, "chat", base.Add(time.Duration(i+1)*time.Second))
		}
		fin := base.Add(time.Second)
		done.Status, done.Outputs, done.FinishedAt = "completed", map[string]any{"reply": "hi Ada"}, &fin
		require.NoError(t, b.s.SaveBatch(b.ctx, []store.Batch{{RunID: "r1", Finish: done}}))

		add := func(conv, run, msg string) *store.ChatTurn {
			t.Helper()
			ct := &store.ChatTurn{Workflow: "chat", Conversation: conv, RunID: run, Message: msg}
			require.NoError(t, b.s.AddChatTurn(b.ctx, ct))
			return ct
		}
		first := add("c1", "r1", "hello")
		require.Equal(t, 1, first.Turn)
		require.False(t, first.CreatedAt.IsZero(), "CreatedAt is written back")
		require.Equal(t, 1, add("c2", "r2", "another conversation").Turn, "turns count per conversation")
		require.Equal(t, 2, add("c1", "r3", "and then?").Turn)
		require.Equal(t, 3, add("c1", "r4", "bye").Turn)

		all, err := b.s.ChatTurns(b.ctx, "chat", "c1", 0)
		require.NoError(t, err)
		require.Len(t, all, 3)
		require.Equal(t, []string{"hello", "and then?", "bye"}, []string{all[0].Message, all[1].Message, all[2].Message}, "oldest first")
		require.Equal(t, "r1", all[0].Run.ID)
		require.Equal(t, "completed", string(all[0].Run.Status))
		require.Equal(t, "hi Ada", all[0].Run.Outputs["reply"])
		require.Equal(t, "running", string(all[1].Run.Status))

		last, err := b.s.ChatTurns(b.ctx, "chat", "c1", 2)
		require.NoError(t, err)
		require.Equal(t, []int{2, 3}, []int{last[0].Turn, last[1].Turn}, "the last two, oldest first")

		none, err := b.s.ChatTurns(b.ctx, "other", "c1", 0)
		require.NoError(t, err)
		require.Empty(t, none, "conversations are per workflow")

		err = b.s.AddChatTurn(b.ctx, &store.ChatTurn{Workflow: "chat", Conversation: "c1", RunID: "nope", Message: "x"})
		require.ErrorIs(t, err, store.ErrNotFound, "a message needs its run")
	})

	t.Run("TurnsGoWithTheirRuns", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "old", "chat", base)
		createRun(t, b.s, "new", "chat", base.Add(time.Hour))
		require.NoError(t, b.s.AddChatTurn(b.ctx, &store.ChatTurn{Workflow: "chat", Conversation: "c", RunID: "old", Message: "1"}))
		require.NoError(t, b.s.AddChatTurn(b.ctx, &store.ChatTurn{Workflow: "chat", Conversation: "c", RunID: "new", Message: "2"}))
		_, err := b.s.DeleteRuns(b.ctx, base.Add(time.Minute), false)
		require.NoError(t, err)
		left, err := b.s.ChatTurns(b.ctx, "chat", "c", 0)
		require.NoError(t, err)
		require.Len(t, left, 1)
		require.Equal(t, "2", left[0].Message)
		require.Equal(t, 2, left[0].Turn)
	})
}
