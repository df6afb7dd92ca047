package runner_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/chat"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/store"
)

// TestChatHistoryIsTheLastFiftyMessages: a chat run gets the
// conversation's last 50 messages, each followed by its reply — 100
// entries once there are more, oldest first — as docs/api.md says.
func TestChatHistoryIsTheLastFiftyMessages(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	r, err := runner.Open(runner.Config{Dir: filepath.Join(t.TempDir(), ".skein"), Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	ctx := t.Context()

	const sent = chat.HistoryTurns + 1
	for i := 1; i <= sent; i++ {
		id := fmt.Sprintf("run%02d", i)
		require.NoError(t, st.CreateRun(ctx, &store.Run{ID: id, Workflow: "chat", Status: "completed",
			Outputs: map[string]any{"reply": fmt.Sprintf("reply %d", i)}}))
		n, err := r.AddChatMessage(ctx, "chat", "c-1", id, fmt.Sprintf("message %d", i))
		require.NoError(t, err)
		require.Equal(t, i, n)
	}

	history, err := r.ChatHistory(ctx, "chat", "c-1")
	require.NoError(t, err)
	require.Equal(t, 50, chat.HistoryTurns, "the number docs/api.md gives")
	require.Len(t, history, 100, "50 messages and their 50 replies")
	require.Equal(t, runner.ChatMessage{Role: "user", Content: "message 2", ExecutionID: "run02"}, history[0],
		"the first message fell out of the history")
	require.Equal(t, runner.ChatMessage{Role: "assistant", Content: "reply 2", ExecutionID: "run02"}, history[1])
	require.Equal(t, runner.ChatMessage{Role: "assistant", Content: "reply 51", ExecutionID: "run51"}, history[99])

	docs, err := os.ReadFile("../../docs/api.md")
	require.NoError(t, err)
	require.Contains(t, strings.Join(strings.Fields(string(docs)), " "),
		"conversation's last 50 messages, oldest first, each followed by its reply — at most 100 entries",
		"docs/api.md states the history's size")
}
