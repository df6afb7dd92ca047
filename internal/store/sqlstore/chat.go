package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/skeinhq/skein/internal/store"
)

// AddChatTurn stores the next message of a conversation.
func (c *Core) AddChatTurn(ctx context.Context, t *store.ChatTurn) error {
	if t == nil || t.Workflow == "" || t.Conversation == "" || t.RunID == "" {
		return errors.New("adding a chat message: it needs a workflow, a conversation and a run")
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = Now()
	}
	op := fmt.Sprintf("adding a message to conversation %q of %s", t.Conversation, t.Workflow)
	return c.db.Write(ctx, op, func(tx Querier) error {
		// Two messages of one conversation at once take turns.
		if err := c.lockKey(ctx, tx, lockChat, t.Workflow+"/"+t.Conversation); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `INSERT INTO chat_turns (workflow, conversation, turn, run_id, message, created_at)
			SELECT $1, $2, COALESCE(MAX(turn), 0) + 1, $3, $4, $5 FROM chat_turns WHERE workflow = $1 AND conversation = $2
			RETURNING turn`,
			t.Workflow, t.Conversation, t.RunID, t.Message, c.time(t.CreatedAt)).Scan(&t.Turn)
		if err != nil && c.db.IsForeignKey(err) {
			return fmt.Errorf("run %s: %w", t.RunID, store.ErrNotFound)
		}
		return err
	})
}

// ChatTurns returns the last limit messages of a conversation, oldest
// first, with their runs.
func (c *Core) ChatTurns(ctx context.Context, workflow, conversation string, limit int) ([]*store.ChatTurn, error) {
	rows, err := c.db.Read().Query(ctx, `WITH t AS (
			SELECT turn, run_id, message, created_at AS turn_at FROM chat_turns
			WHERE workflow = $1 AND conversation = $2 ORDER BY turn DESC LIMIT $3)
		SELECT t.turn, t.run_id, t.message, t.turn_at, `+c.readCols()+`
		FROM t JOIN runs ON runs.id = t.run_id ORDER BY t.turn`, workflow, conversation, c.limit(limit))
	return collect(c, "reading conversation "+conversation, rows, err, func(row Row) (*store.ChatTurn, error) {
		t := &store.ChatTurn{Workflow: workflow, Conversation: conversation}
		var created Time
		run, err := ScanRun(turnRow{row, []any{&t.Turn, &t.RunID, &t.Message, &created}})
		if err != nil {
			return nil, err
		}
		t.CreatedAt, t.Run = created.T, run
		return t, nil
	})
}

// turnRow scans a turn's columns, then the run's.
type turnRow struct {
	row   Row
	first []any
}

func (r turnRow) Scan(dest ...any) error { return r.row.Scan(append(r.first, dest...)...) }

// ReplaceMemory keeps a step's messages in a thread, in place of what it
// kept there before.
func (c *Core) ReplaceMemory(ctx context.Context, workflow, thread string, src store.MemorySource, msgs []*store.MemoryMessage) error {
	if workflow == "" || thread == "" || src.RunID == "" || src.Step == "" {
		return errors.New("keeping memory: it needs a workflow, a thread, a run and a step")
	}
	at := Now()
	op := fmt.Sprintf("keeping the messages of step %s in thread %q of %s", src.Step, thread, workflow)
	return c.db.Write(ctx, op, func(tx Querier) error {
		if _, err := tx.Exec(ctx, `DELETE FROM memory_messages
			WHERE workflow = $1 AND thread = $2 AND step = $3 AND run_id IN ($4, $5)`,
			workflow, thread, src.Step, src.RunID, src.Replaces); err != nil {
			return err
		}
		for _, m := range msgs {
			if m.CreatedAt.IsZero() {
				m.CreatedAt = at
			}
			err := tx.QueryRow(ctx, `INSERT INTO memory_messages (workflow, thread, run_id, step, role, content, created_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING seq`,
				workflow, thread, src.RunID, src.Step, m.Role, m.Content, c.time(m.CreatedAt)).Scan(&m.Seq)
			if err != nil && c.db.IsForeignKey(err) {
				return fmt.Errorf("run %s: %w", src.RunID, store.ErrNotFound)
			}
			if err != nil {
				return err
			}
			m.RunID, m.Step = src.RunID, src.Step
		}
		return nil
	})
}

// Memory returns the last limit messages of a thread, oldest first.
func (c *Core) Memory(ctx context.Context, workflow, thread string, limit int, except store.MemorySource) ([]*store.MemoryMessage, error) {
	rows, err := c.db.Read().Query(ctx, `SELECT seq, run_id, step, role, content, created_at FROM (
			SELECT * FROM memory_messages
			WHERE workflow = $1 AND thread = $2 AND NOT (step = $3 AND run_id IN ($4, $5))
			ORDER BY seq DESC LIMIT $6) m
		ORDER BY seq`, workflow, thread, except.Step, except.RunID, except.Replaces, c.limit(limit))
	return collect(c, "reading the memory of thread "+thread, rows, err, func(row Row) (*store.MemoryMessage, error) {
		m := &store.MemoryMessage{}
		var created Time
		if err := row.Scan(&m.Seq, &m.RunID, &m.Step, &m.Role, &m.Content, &created); err != nil {
			return nil, err
		}
		m.CreatedAt = created.T
		return m, nil
	})
}
