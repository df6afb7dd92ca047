package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/skeinhq/skein/internal/store"
)

// AddChatTurn stores the next message of a conversation.
func (s *Store) AddChatTurn(ctx context.Context, t *store.ChatTurn) error {
	if t == nil || t.Workflow == "" || t.Conversation == "" || t.RunID == "" {
		return errors.New("adding a chat message: it needs a workflow, a conversation and a run")
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now()
	}
	op := fmt.Sprintf("adding a message to conversation %q of %s", t.Conversation, t.Workflow)
	return s.write(ctx, op, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO chat_turns (workflow, conversation, turn, run_id, message, created_at)
			SELECT ?, ?, COALESCE(MAX(turn), 0) + 1, ?, ?, ? FROM chat_turns WHERE workflow = ? AND conversation = ?
			RETURNING turn`,
			t.Workflow, t.Conversation, t.RunID, t.Message, micros(t.CreatedAt), t.Workflow, t.Conversation).Scan(&t.Turn)
		if err != nil && isForeignKey(err) {
			return fmt.Errorf("run %s: %w", t.RunID, store.ErrNotFound)
		}
		return err
	})
}

// ChatTurns returns the last limit messages of a conversation, oldest
// first, with their runs.
func (s *Store) ChatTurns(ctx context.Context, workflow, conversation string, limit int) ([]*store.ChatTurn, error) {
	if limit <= 0 {
		limit = -1 // no limit
	}
	rows, err := s.r.QueryContext(ctx, `WITH t AS (
			SELECT turn, run_id, message, created_at AS turn_at FROM chat_turns
			WHERE workflow = ? AND conversation = ? ORDER BY turn DESC LIMIT ?)
		SELECT t.turn, t.run_id, t.message, t.turn_at, runs.id, `+readCols+`
		FROM t JOIN runs ON runs.id = t.run_id ORDER BY t.turn`, workflow, conversation, limit)
	if err != nil {
		return nil, s.failed("reading conversation "+conversation, err)
	}
	defer func() { _ = rows.Close() }()
	var out []*store.ChatTurn
	for rows.Next() {
		t := &store.ChatTurn{Workflow: workflow, Conversation: conversation}
		var created int64
		run, err := scanRun(turnScanner{rows, []any{&t.Turn, &t.RunID, &t.Message, &created}})
		if err != nil {
			return nil, s.failed("reading conversation "+conversation, err)
		}
		t.CreatedAt, t.Run = fromMicros(created), run
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, s.failed("reading conversation "+conversation, err)
	}
	return out, nil
}

// turnScanner scans a turn's columns, then the run's.
type turnScanner struct {
	rows  *sql.Rows
	first []any
}

func (ts turnScanner) Scan(dest ...any) error { return ts.rows.Scan(append(ts.first, dest...)...) }

// isForeignKey tells SQLite's error for a row that names a missing row.
func isForeignKey(err error) bool {
	return strings.Contains(err.Error(), "FOREIGN KEY constraint failed")
}
