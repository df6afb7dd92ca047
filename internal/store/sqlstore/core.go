package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/skeinhq/skein/internal/store"
)

// Core is the part of a SQL store.Store both dialects share. A dialect's
// Store embeds it and adds CreateRun, Compact and Close.
type Core struct {
	db DB
	d  Dialect
	st *Statements
	// expired is the SQL of "nobody holds it": no owner, or a lease that
	// ended by the database's clock.
	expired string
}

// Statements are the statements a dialect runs itself (creating a run,
// the group commit), in its spelling, and the arguments they take.
type Statements struct {
	SQL
	c *Core
	// spare are step rows of batches written, kept for the next ones
	// (Core.save hands them back): a row is 34 values, and a 10,000-item
	// foreach wrote 20,000 of them.
	mu    sync.Mutex
	spare [][]any
}

// SQL is the text of the statements of the group commit and of creating a
// run, in the dialect's spelling, for the dialect to prepare or send.
type SQL struct {
	// InsertRun inserts a run (CreateRunArgs) unless its id is taken and
	// returns its lease_until: no row when the id is taken.
	InsertRun string
	// InsertCountedRun is InsertRun with the count of the run's events
	// ($23, runs.event_seq): a run started with its first events, which
	// the same transaction writes, needs no SetLastSeq.
	InsertCountedRun string
	// ReadRun reads run $1 into ScanRun.
	ReadRun string
	// RunOwner reads the owner token of run $1.
	RunOwner string
	// UpsertStep inserts or replaces a step (StepArgs); InsertStepHead and
	// UpsertStepTail are its parts around the VALUES rows, for a
	// statement of several rows.
	UpsertStep, InsertStepHead, UpsertStepTail string
	// InsertEvent inserts an event (EventArgs); InsertEventHead is its
	// part before the VALUES rows.
	InsertEvent, InsertEventHead string
	// LastSeq reads the seq of the last event of run $1 (0: none): the
	// count of its events its row keeps (runs.event_seq), since the
	// largest seq of its event rows would miss the seqs its step rows
	// carry (Dialect.StepEvents).
	LastSeq string
	// SetLastSeq sets the count of run $1's events to $2.
	SetLastSeq string
	// FinishRun writes a run's final record and releases its lease
	// (FinishArgs); $9, when not NULL, is the count of its events, set
	// in the same statement instead of by SetLastSeq.
	FinishRun string
	// InsertPlan inserts a row of planned steps (Batch.Plan).
	InsertPlan string
}

// New returns the core of a store on db, in dialect d, and the statements
// the dialect runs itself.
func New(db DB, d Dialect) (*Core, *Statements) {
	c := &Core{db: db, d: d}
	c.expired = `(owner_token = '' OR lease_until IS NULL OR lease_until < ` + d.Now + `)`
	insertRun := func(col, value string) string {
		return `INSERT INTO runs (id, ` + runCols + `, owner_host, owner_pid, owner_token, generation, lease_until` + col + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21,
		CASE WHEN $20 <> '' THEN ` + d.AddMicros(d.Now, "$22") + ` ELSE ` + d.NoTime + ` END` + value + `)
	ON CONFLICT (id) DO NOTHING RETURNING lease_until`
	}
	c.st = &Statements{c: c, SQL: SQL{
		InsertRun:        insertRun("", ""),
		InsertCountedRun: insertRun(", event_seq", ", $23"),
		ReadRun:          `SELECT ` + c.readCols() + ` FROM runs WHERE id = $1`,
		RunOwner:         `SELECT owner_token FROM runs WHERE id = $1`,
		InsertStepHead:   insertStepHead,
		UpsertStepTail:   upsertStepTail + d.StepWritten,
		UpsertStep:       insertStepHead + placeholders(1, stepArgCount) + upsertStepTail + d.StepWritten,
		InsertEventHead:  insertEventHead,
		InsertEvent:      insertEventHead + placeholders(1, eventArgCount),
		LastSeq:          `SELECT event_seq FROM runs WHERE id = $1`,
		SetLastSeq:       `UPDATE runs SET event_seq = $2 WHERE id = $1`,
		InsertPlan:       insertPlan,
		FinishRun: `UPDATE runs SET status = $2, outputs = $3, error = $4, finished_at = $5, tokens = $6, cost_usd = $7,
	wake_at = $8, owner_host = '', owner_pid = 0, owner_token = '', lease_until = ` + d.NoTime + `,
	event_seq = COALESCE($9, event_seq) WHERE id = $1`,
	}}
	return c, c.st
}

// placeholders returns ($first, …, $first+n-1).
func placeholders(first, n int) string {
	b := make([]byte, 0, n*6+2)
	b = append(b, '(')
	for i := range n {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(first+i), 10)
	}
	return string(append(b, ')'))
}

// noRows reports whether err says a query returned no row.
func noRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// time encodes a time parameter, truncated to the microsecond.
func (c *Core) time(t time.Time) any { return c.d.Time(t.Truncate(time.Microsecond)) }

// timePtr encodes an optional time: nil is NULL.
func (c *Core) timePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return c.time(*t)
}

// timeOrNone encodes a time whose zero value means none.
func (c *Core) timeOrNone(t time.Time) any {
	if t.IsZero() {
		return c.d.NoTimeValue
	}
	return c.time(t)
}

func (c *Core) limit(n int) any {
	if n <= 0 {
		return c.d.NoLimit
	}
	return n
}

// exists returns an error wrapping store.ErrNotFound when there is no run
// id.
func exists(ctx context.Context, q Querier, id string) error {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM runs WHERE id = $1`, id).Scan(&one)
	if noRows(err) {
		return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	return err
}

// Fence checks the owner token a run's row holds (read by
// Statements.RunOwner): a missing run is store.ErrNotFound and, when token is
// set, another owner's token store.ErrLeaseLost.
func Fence(id, token, owner string, err error) error {
	if noRows(err) {
		return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	if err == nil && token != "" && owner != token {
		return fmt.Errorf("run %s: %w", id, store.ErrLeaseLost)
	}
	return err
}

// collect reads every row of rows with scan, wrapping errors as op.
func collect[T any](c *Core, op string, rows Rows, err error, scan func(Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, c.db.Failed(op, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, c.db.Failed(op, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, c.db.Failed(op, err)
	}
	return out, nil
}

// orNotFound returns the rows read, checking when there are none that the
// run exists.
func orNotFound[T any](ctx context.Context, c *Core, op, runID string, out []T, err error) ([]T, error) {
	if err == nil && len(out) == 0 {
		if err := exists(ctx, c.db.Read(), runID); err != nil {
			return nil, c.db.Failed(op, err)
		}
	}
	return out, err
}
