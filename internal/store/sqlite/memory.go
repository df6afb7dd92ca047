package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/skeinhq/skein/internal/store"
)

// ReplaceMemory keeps a step's messages in a thread, in place of what it
// kept there before.
func (s *Store) ReplaceMemory(ctx context.Context, workflow, thread string, src store.MemorySource, msgs []*store.MemoryMessage) error {
	if workflow == "" || thread == "" || src.RunID == "" || src.Step == "" {
		return errors.New("keeping memory: it needs a workflow, a thread, a run and a step")
	}
	at := now()
	op := fmt.Sprintf("keeping the messages of step %s in thread %q of %s", src.Step, thread, workflow)
	return s.write(ctx, op, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM memory_messages
			WHERE workflow = ? AND thread = ? AND step = ? AND run_id IN (?, ?)`,
			workflow, thread, src.Step, src.RunID, src.Replaces); err != nil {
			return err
		}
		for _, m := range msgs {
			if m.CreatedAt.IsZero() {
				m.CreatedAt = at
			}
			err := tx.QueryRowContext(ctx, `INSERT INTO memory_messages (workflow, thread, run_id, step, role, content, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
				workflow, thread, src.RunID, src.Step, m.Role, m.Content, micros(m.CreatedAt)).Scan(&m.Seq)
			if err != nil && isForeignKey(err) {
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
func (s *Store) Memory(ctx context.Context, workflow, thread string, limit int, except store.MemorySource) ([]*store.MemoryMessage, error) {
	if limit <= 0 {
		limit = -1 // no limit
	}
	rows, err := s.r.QueryContext(ctx, `SELECT seq, run_id, step, role, content, created_at FROM (
			SELECT * FROM memory_messages
			WHERE workflow = ? AND thread = ? AND NOT (step = ? AND run_id IN (?, ?))
			ORDER BY seq DESC LIMIT ?)
		ORDER BY seq`, workflow, thread, except.Step, except.RunID, except.Replaces, limit)
	if err != nil {
		return nil, s.failed("reading the memory of thread "+thread, err)
	}
	defer func() { _ = rows.Close() }()
	var out []*store.MemoryMessage
	for rows.Next() {
		m := &store.MemoryMessage{}
		var created int64
		if err := rows.Scan(&m.Seq, &m.RunID, &m.Step, &m.Role, &m.Content, &created); err != nil {
			return nil, s.failed("reading the memory of thread "+thread, err)
		}
		m.CreatedAt = fromMicros(created)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.failed("reading the memory of thread "+thread, err)
	}
	return out, nil
}
