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

// ChatHistory returns the last turns messages of a conversation and their
// replies, oldest first (chat.History).
func (r *Runner) ChatHistory(ctx context.Context, workflow, conversation string, turns int) ([]ChatMessage, error) {
	return chat.History(ctx, r.st, workflow, conversation, turns)
}

// AddChatMessage records a message of a conversation with the run that
// answers it (chat.Add) and returns its number in the conversation.
func (r *Runner) AddChatMessage(ctx context.Context, workflow, conversation, runID, message string) (int, error) {
	n, err := chat.Add(ctx, r.st, workflow, conversation, runID, message)
	if errors.Is(err, store.ErrNotFound) {
		return 0, fmt.Errorf("recording the chat message: %w", ErrNotFound)
	}
	return n, err
}
