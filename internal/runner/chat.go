package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/skeinhq/skein/internal/chat"
	"github.com/skeinhq/skein/internal/store"
)

// ChatMessage is a message of a conversation (chat.Message).
type ChatMessage = chat.Message

// ChatHistory returns a conversation's trigger.history: its last
// chat.HistoryTurns messages and their replies, oldest first.
func (r *Runner) ChatHistory(ctx context.Context, workflow, conversation string) ([]ChatMessage, error) {
	return chat.History(ctx, r.st, workflow, conversation, chat.HistoryTurns)
}

// AddChatMessage records a message with the run that answers it and
// returns its number in the conversation (chat.Add).
func (r *Runner) AddChatMessage(ctx context.Context, workflow, conversation, runID, message string) (int, error) {
	n, err := chat.Add(ctx, r.st, workflow, conversation, runID, message)
	if errors.Is(err, store.ErrNotFound) {
		return 0, fmt.Errorf("recording the chat message: %w", ErrNotFound)
	}
	return n, err
}
