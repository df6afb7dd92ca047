package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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
	return s.write(ctx, op, func(tx pgx.Tx) error {
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
				workflow, thread, src.RunID, src.Step, m.Role, m.Content, ts(m.CreatedAt)).Scan(&m.Seq)
			if pgCode(err) == codeForeignKey {
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
	var lim *int // NULL: no limit
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, run_id, step, role, content, created_at FROM (
			SELECT * FROM memory_messages
			WHERE workflow = $1 AND thread = $2 AND NOT (step = $3 AND run_id IN ($4, $5))
			ORDER BY seq DESC LIMIT $6) m
		ORDER BY seq`, workflow, thread, except.Step, except.RunID, except.Replaces, lim)
	if err != nil {
		return nil, s.failed("reading the memory of thread "+thread, err)
	}
	defer rows.Close()
	var out []*store.MemoryMessage
	for rows.Next() {
		m := &store.MemoryMessage{}
		var created time.Time
		if err := rows.Scan(&m.Seq, &m.RunID, &m.Step, &m.Role, &m.Content, &created); err != nil {
			return nil, s.failed("reading the memory of thread "+thread, err)
		}
		m.CreatedAt = created.UTC()
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.failed("reading the memory of thread "+thread, err)
	}
	return out, nil
}
