package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

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
//
// Several steps or events go in one statement of several rows (up to
// maxStepRows and maxEventRows): a statement costs the database more
// than a row. A step whose key a statement has already is written by the
// next one, since an upsert may not touch a row twice.
func (s *Statements) Writes(b Batch, first int64) []Stmt {
	return s.WritesOf([]Batch{b}, []int64{first})
}

// WritesOf returns the statements that write the batches of several runs
// in one transaction, batch i's events numbered from firsts[i]: as
// Writes, the rows of all in the same statements (a statement of a run
// and the next of another cost the database more than one of both). A
// batch that is Counted has its run's count of events set already.
func (s *Statements) WritesOf(bs []Batch, firsts []int64) []Stmt {
	stmts := make([]Stmt, 0, 4)
	steps, events := bs[0].Steps, s.EventArgs(bs[0], firsts[0])
	for i, b := range bs[1:] {
		if i == 0 {
			steps, events = slices.Clip(steps), slices.Clip(events)
		}
		steps = append(steps, b.Steps...)
		events = append(events, s.EventArgs(b, firsts[i+1])...)
	}
	stmts = s.multiRow(stmts, s.InsertStepHead, s.UpsertStepTail, s.UpsertStep, stepArgCount, maxStepRows, steps, true)
	for _, b := range bs {
		for _, args := range b.Plan {
			stmts = append(stmts, Stmt{s.InsertPlan, args})
		}
	}
	stmts = s.multiRow(stmts, s.InsertEventHead, "", s.InsertEvent, eventArgCount, maxEventRows, events, false)
	var finish [][]any
	for i, b := range bs {
		last := firsts[i] + int64(len(b.Events)) - 1
		switch {
		case b.Finish != nil && len(b.Events) > 0:
			finish = append(finish, FinishWithSeq(b.Finish, last))
		case b.Finish != nil:
			finish = append(finish, b.Finish)
		case len(b.Events) > 0 && !b.Counted:
			stmts = append(stmts, Stmt{s.SetLastSeq, []any{b.RunID, last}})
		}
	}
	if len(finish) > 1 && s.c.d.FinishRuns != nil && distinctRuns(finish) {
		return append(stmts, s.c.d.FinishRuns(finish))
	}
	for _, args := range finish {
		stmts = append(stmts, Stmt{s.FinishRun, args})
	}
	return stmts
}

// distinctRuns reports whether the rows of FinishRun's arguments are of
// different runs: one statement may change a row once.
func distinctRuns(rows [][]any) bool {
	seen := make(map[any]bool, len(rows))
	for _, r := range rows {
		if seen[r[0]] {
			return false
		}
		seen[r[0]] = true
	}
	return true
}

// maxStepRows and maxEventRows bound the rows of one statement of Writes
// (30 × 16 and 8 × 64 parameters).
const (
	maxStepRows  = 16
	maxEventRows = 64
)

// multiRow appends to stmts the statements that write rows: head, the rows'
// placeholders, tail; single, the one-row statement, for a lone row. With
// keyed, a row whose key (its first four values) the statement holds
// already starts the next statement.
func (s *Statements) multiRow(stmts []Stmt, head, tail, single string, cols, most int, rows [][]any, keyed bool) []Stmt {
	for len(rows) > 0 {
		n := 1
		if keyed {
			seen := map[[4]any]bool{key4(rows[0]): true}
			for n < len(rows) && n < most && !seen[key4(rows[n])] {
				seen[key4(rows[n])] = true
				n++
			}
		} else {
			n = min(len(rows), most)
		}
		if n == 1 {
			stmts = append(stmts, Stmt{single, rows[0]})
			rows = rows[1:]
			continue
		}
		args := make([]any, 0, n*cols)
		for _, r := range rows[:n] {
			args = append(args, r...)
		}
		stmts = append(stmts, Stmt{RowsSQL(head, tail, cols, n), args})
		rows = rows[n:]
	}
	return stmts
}

// key4 is a step row's key: run, generation, node, visit.
func key4(row []any) [4]any { return [4]any{row[0], row[1], row[2], row[3]} }

// RowsSQL is the statement head, n rows of cols numbered placeholders
// (($1, …), ($cols+1, …), …), tail: a multi-row INSERT of the shared SQL's
// spelling. Each shape is made once.
func RowsSQL(head, tail string, cols, n int) string {
	k := rowsKey{head, tail, cols, n}
	if q, ok := rowsSQL.Load(k); ok {
		return q.(string)
	}
	var b strings.Builder
	b.WriteString(head)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(placeholders(1+i*cols, cols))
	}
	b.WriteString(tail)
	q, _ := rowsSQL.LoadOrStore(k, b.String())
	return q.(string)
}

// rowsSQL holds the statements RowsSQL made, by shape.
var rowsSQL sync.Map

type rowsKey struct {
	head, tail string
	cols, n    int
}
