package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/skeinhq/skein/internal/store"
)

// Querier runs statements on a dialect's connections: its pool, or a
// transaction. Statements number their parameters $1, $2….
type Querier interface {
	Query(ctx context.Context, q string, args ...any) (Rows, error)
	// QueryRow's Scan fails with an error errors.Is takes for
	// sql.ErrNoRows when there is no row.
	QueryRow(ctx context.Context, q string, args ...any) Row
	// Exec returns the number of rows the statement changed.
	Exec(ctx context.Context, q string, args ...any) (int64, error)
	// ExecAll runs the statements in order, in as few round trips as the
	// dialect can, and returns the first error.
	ExecAll(ctx context.Context, stmts []Stmt) error
}

// Stmt is a statement and its arguments.
type Stmt struct {
	SQL  string
	Args []any
}

// Row is one row of a result.
type Row interface {
	Scan(dest ...any) error
}

// Rows is a result read row by row.
type Rows interface {
	Row
	Next() bool
	Err() error
	Close()
}

// DB is a dialect's connections.
type DB interface {
	// Read returns where reads go.
	Read() Querier
	// Write runs fn in a write transaction, committed when fn returns nil
	// and rolled back otherwise; its errors come back through Failed.
	Write(ctx context.Context, op string, fn func(tx Querier) error) error
	// Failed wraps the error of the operation op, telling the conditions
	// of the store package (a lock held too long, a damaged database)
	// from other errors; it returns nil for nil.
	Failed(op string, err error) error
	// IsForeignKey reports whether err is the refusal of a row that names
	// a missing row.
	IsForeignKey(err error) bool
	// SaveBatches writes the batches in one transaction, the group
	// commit: a batch whose run is missing fails it with
	// store.ErrNotFound, one whose Token is set but not its run's owner
	// token with store.ErrLeaseLost. The events of each run are numbered
	// after the run's last (SQL.LastSeq), batch after batch; it returns
	// the seq of the first event of each batch.
	SaveBatches(ctx context.Context, op string, bs []Batch) (firsts []int64, err error)
}

// Dialect is how a database spells what the shared SQL leaves open, and
// how its driver takes values.
type Dialect struct {
	// Now is the SQL of the database's clock: leases are timed by it, so
	// the processes that share a database agree on who holds what.
	Now string
	// AddMicros returns the SQL of the time t plus the parameter p, a
	// duration as Duration encodes it.
	AddMicros func(t, p string) string
	// Least returns the SQL of the earlier of the times a (which may be
	// NULL: then b) and b; Greatest the later of a and b.
	Least, Greatest func(a, b string) string
	// NoTime is the SQL a time column holds for no time: a run nobody
	// owns has no lease. NoTimeValue is that value as a parameter.
	NoTime      string
	NoTimeValue any
	// LockRow ends a SELECT of one run that holds the run's row until the
	// transaction ends; empty where writes take turns anyway.
	LockRow string
	// LockKey, when set, is a statement that holds a lock on the key $2
	// of the class $1 until the transaction ends: writers that number rows
	// by a key with no row to lock take turns. Empty where writes take
	// turns anyway.
	LockKey string
	// NoLimit is the LIMIT parameter that limits nothing.
	NoLimit any
	// StepEvents: a step row may carry its node's node_started and
	// node_finished events (the columns stepEventCols), written by the
	// dialect's SaveBatches instead of event rows; Events reads them too.
	StepEvents bool
	// FinishRuns, when set, returns one statement that does FinishRun's
	// work for several runs, each row FinishRun's arguments (a different
	// run each): WritesOf then finishes the runs of a transaction in it.
	FinishRuns func(rows [][]any) Stmt
	// StepWritten, when set, is an assignment that ends the SET of a step
	// row saved again: one that marks the row with what wrote it, as the
	// column's default marks a new row (Postgres: the transaction).
	StepWritten string

	// Time, JSON and Duration encode parameters: a time (already
	// truncated to the microsecond), a JSON document (nil: NULL) and a
	// duration to add with AddMicros.
	Time     func(time.Time) any
	JSON     func([]byte) any
	Duration func(time.Duration) any
}

// Time scans a time column of either dialect: a number of microseconds
// since the epoch (SQLite, where 0 means no time) or a timestamp
// (Postgres). NULL is no time. Times come back in UTC.
type Time struct {
	T     time.Time
	Valid bool
}

// Scan implements sql.Scanner, which both drivers call.
func (t *Time) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*t = Time{}
	case int64:
		*t = Time{}
		if v != 0 {
			*t = Time{T: time.UnixMicro(v).UTC(), Valid: true}
		}
	case time.Time:
		*t = Time{T: v.UTC(), Valid: true}
	default:
		return fmt.Errorf("a time column holds a %T", src)
	}
	return nil
}

// Ptr returns the time, or nil when there is none.
func (t Time) Ptr() *time.Time {
	if !t.Valid {
		return nil
	}
	v := t.T
	return &v
}

// Now is the time of a record written now: UTC, to the microsecond, as
// both dialects keep times.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// Condition is a condition of the store package (store.ErrLocked, …) with
// a message for people.
type Condition struct {
	Msg  string
	Errs []error
}

func (e *Condition) Error() string   { return e.Msg }
func (e *Condition) Unwrap() []error { return e.Errs }

// NewerSchema is the error of a database (named db) whose schema version
// have is newer than the latest this binary knows; flag is the option
// that names another database.
func NewerSchema(db, flag string, have, know int) error {
	return &Condition{
		Msg: fmt.Sprintf("%s has schema version %d but this skein knows versions up to %d; "+
			"use a newer skein with it, or point %s elsewhere — nothing was changed", db, have, know, flag),
		Errs: []error{store.ErrNewerSchema},
	}
}
