package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/skeinhq/skein/internal/store"
)

// Tx runs fn in a write transaction of the dialect.
func (c *Core) Tx(ctx context.Context, fn func(tx store.Tx) error) error {
	return c.db.Write(ctx, "writing in a transaction", func(q Querier) error { return fn(c.txOn(q)) })
}

// txOn returns the store's transaction on q, a transaction of the
// dialect (one its holder began, with writes of its own).
func (c *Core) txOn(q Querier) store.Tx { return &tx{c: c, q: q} }

// tx is a store.Tx on a dialect's transaction.
type tx struct {
	c *Core
	q Querier
}

// Interface guard.
var _ store.Tx = (*tx)(nil)

func (t *tx) CreateRun(ctx context.Context, r *store.Run) error {
	args, err := t.c.st.CreateRunArgs(r)
	if err != nil {
		return err
	}
	err = t.c.st.Created(r, t.q.QueryRow(ctx, t.c.st.InsertRun, args...))
	if err != nil && !errors.Is(err, store.ErrExists) {
		return fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	return err
}

func (t *tx) Run(ctx context.Context, id string) (*store.Run, error) {
	return t.read(ctx, t.c.st.ReadRun, id)
}

func (t *tx) LockRun(ctx context.Context, id string) (*store.Run, int64, error) {
	r, err := t.read(ctx, t.c.st.ReadRun+t.c.d.LockRow, id)
	if err != nil {
		return nil, 0, err
	}
	// A statement of its own, so that its snapshot is taken once the row
	// is held, and sees what the row's previous holder committed.
	var last int64
	if err := t.q.QueryRow(ctx, t.c.st.LastSeq, id).Scan(&last); err != nil {
		return nil, 0, fmt.Errorf("reading the events of run %s: %w", id, err)
	}
	return r, last, nil
}

// read reads run id with q (SQL.ReadRun, or with a row lock).
func (t *tx) read(ctx context.Context, q, id string) (*store.Run, error) {
	r, err := ScanRun(t.q.QueryRow(ctx, q, id))
	if noRows(err) {
		return nil, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading run %s: %w", id, err)
	}
	return r, nil
}

func (t *tx) SaveBatch(ctx context.Context, b store.Batch, last int64) error {
	bs, err := t.c.st.Batches([]store.Batch{b})
	if err != nil {
		return err
	}
	if err := t.q.ExecAll(ctx, t.c.st.Writes(bs[0], last+1)); err != nil {
		return fmt.Errorf("saving the records of run %s: %w", b.RunID, err)
	}
	bs[0].Numbered(last + 1)
	return nil
}

// Writes returns the statements that write a batch, its events numbered
// from first: its steps, its plan, its events (and the run's count of
// them, in a dialect that keeps it), its final record.
func (s *Statements) Writes(b Batch, first int64) []Stmt {
	stmts := make([]Stmt, 0, len(b.Steps)+len(b.Plan)+len(b.Events)+2)
	for _, args := range b.Steps {
		stmts = append(stmts, Stmt{s.UpsertStep, args})
	}
	for _, args := range b.Plan {
		stmts = append(stmts, Stmt{s.InsertPlan, args})
	}
	for _, args := range s.EventArgs(b, first) {
		stmts = append(stmts, Stmt{s.InsertEvent, args})
	}
	if len(b.Events) > 0 && s.SetLastSeq != "" {
		stmts = append(stmts, Stmt{s.SetLastSeq, []any{b.RunID, first + int64(len(b.Events)) - 1}})
	}
	if b.Finish != nil {
		stmts = append(stmts, Stmt{s.FinishRun, b.Finish})
	}
	return stmts
}
