// Package chat keeps the conversations of chat workflows: each message
// with the run that answered it, read back as the history a chat
// workflow sees in trigger.history.
package chat

import (
	"context"
	"fmt"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
)

// Roles of chat messages.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// HistoryTurns is how many of a conversation's earlier messages a chat
// run gets in trigger.history, each followed by its reply: up to
// 2×HistoryTurns entries.
const HistoryTurns = 50

// Message is one message of a conversation as a chat workflow reads it
// in trigger.history: a user's message, or the reply of the run that
// answered it (its output reply).
type Message struct {
	Role        string `json:"role"`
	Content     string `json:"content"`
	ExecutionID string `json:"execution_id"`
}

// History returns the last turns messages of a conversation of a
// workflow and their replies, oldest first. A message whose run has not
// completed, or has no output reply, has no reply in the history.
func History(ctx context.Context, st store.Store, workflow, conversation string, turns int) ([]Message, error) {
	ts, err := st.ChatTurns(ctx, workflow, conversation, turns)
	if err != nil {
		return nil, err
	}
	out := make([]Message, 0, 2*len(ts))
	for _, t := range ts {
		out = append(out, Message{Role: RoleUser, Content: t.Message, ExecutionID: t.RunID})
		reply, ok, err := Reply(t.Run)
		if err != nil {
			return nil, fmt.Errorf("the reply of run %s: %w", t.RunID, err)
		}
		if ok {
			out = append(out, Message{Role: RoleAssistant, Content: reply, ExecutionID: t.RunID})
		}
	}
	return out, nil
}

// Reply is the answer of a chat run: its output reply, as text (an object
// or a list as compact JSON), once the run has completed. A reply over
// 64 KiB is loaded from its blob.
func Reply(run *store.Run) (string, bool, error) {
	if run == nil || run.Status != engine.RunCompleted {
		return "", false, nil
	}
	v, ok := run.Outputs["reply"]
	if !ok || v == nil {
		return "", false, nil
	}
	v, err := blob.Resolve(v)
	if err != nil {
		return "", false, err
	}
	s, err := node.Text(v)
	return s, err == nil, nil
}

// Add records a message of a conversation with the run that answers it,
// so later messages see it in their history. It returns the message's
// number in the conversation, from 1; a run the store does not hold is
// store.ErrNotFound.
func Add(ctx context.Context, st store.Store, workflow, conversation, runID, message string) (int, error) {
	t := &store.ChatTurn{Workflow: workflow, Conversation: conversation, RunID: runID, Message: message}
	if err := st.AddChatTurn(ctx, t); err != nil {
		return 0, err
	}
	return t.Turn, nil
}
