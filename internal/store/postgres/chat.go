package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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
	return s.write(ctx, op, func(tx pgx.Tx) error {
		// Two messages of one conversation at once take turns.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2 || '/' || $3))`,
			int32(lockChat), t.Workflow, t.Conversation); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `INSERT INTO chat_turns (workflow, conversation, turn, run_id, message, created_at)
			SELECT $1, $2, COALESCE(MAX(turn), 0) + 1, $3, $4, $5 FROM chat_turns WHERE workflow = $1 AND conversation = $2
			RETURNING turn`,
			t.Workflow, t.Conversation, t.RunID, t.Message, ts(t.CreatedAt)).Scan(&t.Turn)
		if pgCode(err) == codeForeignKey {
			return fmt.Errorf("run %s: %w", t.RunID, store.ErrNotFound)
		}
		return err
	})
}

// ChatTurns returns the last limit messages of a conversation, oldest
// first, with their runs.
func (s *Store) ChatTurns(ctx context.Context, workflow, conversation string, limit int) ([]*store.ChatTurn, error) {
	var lim *int // NULL: no limit
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `WITH t AS (
			SELECT turn, run_id, message, created_at AS turn_at FROM chat_turns
			WHERE workflow = $1 AND conversation = $2 ORDER BY turn DESC LIMIT $3)
		SELECT t.turn, t.run_id, t.message, t.turn_at, `+readCols+`
		FROM t JOIN runs ON runs.id = t.run_id ORDER BY t.turn`, workflow, conversation, lim)
	if err != nil {
		return nil, s.failed("reading conversation "+conversation, err)
	}
	defer rows.Close()
	var out []*store.ChatTurn
	for rows.Next() {
		t := &store.ChatTurn{Workflow: workflow, Conversation: conversation}
		var created time.Time
		run, err := scanRun(turnScanner{rows, []any{&t.Turn, &t.RunID, &t.Message, &created}})
		if err != nil {
			return nil, s.failed("reading conversation "+conversation, err)
		}
		t.CreatedAt, t.Run = created.UTC(), run
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, s.failed("reading conversation "+conversation, err)
	}
	return out, nil
}

// turnScanner scans a turn's columns, then the run's.
type turnScanner struct {
	rows  pgx.Rows
	first []any
}

func (ts turnScanner) Scan(dest ...any) error { return ts.rows.Scan(append(ts.first, dest...)...) }
