package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlstore"
)

// What the queue driver (internal/queue) needs to write a run's records in
// its own transactions, with the jobs it inserts there: the pool, and the
// store's transaction on a transaction of the pool.

// Pool returns the store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// WithTx returns the store's transaction on tx, a transaction of the
// store's pool its caller began (as River's driver takes the caller's
// transaction): what the store writes through it commits with what the
// caller writes. Given the pool instead, it reads only, each read a
// transaction of its own.
//
// Each of its calls is one round trip, and takes along the statements
// the caller queued in b (nil: none), sent after its own and read as the
// caller queued them; b is then empty. A caller reads what it keeps beside
// a run while LockRun holds the run's row, and writes it with the run's
// records in SaveBatch's round trip.
func (s *Store) WithTx(tx Sender, b *pgx.Batch) store.Tx {
	return &pgTx{q: tx, b: b}
}

// Sender sends a batch of statements: a transaction, or the pool.
type Sender = batchSender

// pgTx is the store's transaction on a pgx transaction, pipelined.
type pgTx struct {
	q batchSender
	b *pgx.Batch
}

// Interface guard.
var _ store.Tx = (*pgTx)(nil)

// send sends own and then what the caller queued, in one round trip.
func (t *pgTx) send(ctx context.Context, own *pgx.Batch) error {
	if t.b != nil {
		own.QueuedQueries = append(own.QueuedQueries, t.b.QueuedQueries...)
		t.b.QueuedQueries = nil
	}
	return sendBatch(ctx, t.q, own)
}

func (t *pgTx) CreateRun(ctx context.Context, r *store.Run) error {
	args, err := stmts.CreateRunArgs(r)
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue(stmts.InsertRun, args...).QueryRow(func(row pgx.Row) error { return stmts.Created(r, row) })
	err = t.send(ctx, b)
	if err != nil && !errors.Is(err, store.ErrExists) {
		return fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	return err
}

// QueueStartRun queues in b the insert of a new run whose first events
// the same transaction writes (QueueSaves, counted): its row is made with
// their count, events. The caller sends it in front of its next round
// trip (Pipe.Defer), or with its COMMIT: a run id that exists fails the
// statement — and so the transaction, whose COMMIT then rolls it back —
// with ErrExists.
func QueueStartRun(b *pgx.Batch, r *store.Run, events int64) error {
	args, err := stmts.CreateRunArgs(r)
	if err != nil {
		return fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	b.Queue(insertStartOnce, append(args, events)...).QueryRow(func(row pgx.Row) error {
		err := stmts.Created(r, row)
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "runs_pkey" {
			return fmt.Errorf("run %s: %w", r.ID, store.ErrExists)
		}
		return err
	})
	return nil
}

// insertStartOnce is SQL.InsertCountedRun failing, not skipping, an id
// that exists (a unique violation).
var insertStartOnce = strings.Replace(stmts.InsertCountedRun, "ON CONFLICT (id) DO NOTHING ", "", 1)

func (t *pgTx) Run(ctx context.Context, id string) (*store.Run, error) {
	var r *store.Run
	b := &pgx.Batch{}
	queueReadRun(b, stmts.ReadRun, id, &r)
	if err := t.send(ctx, b); err != nil {
		return nil, err
	}
	return r, nil
}

// LockRun holds the run's row and reads it with the seq of its last event
// (its count of events), in one statement: under READ COMMITTED a row
// lock that waited reads the row as its previous holder committed it.
func (t *pgTx) LockRun(ctx context.Context, id string) (*store.Run, int64, error) {
	var r *store.Run
	var last int64
	b := &pgx.Batch{}
	b.Queue(lockReadRunSQL, id).QueryRow(func(row pgx.Row) error {
		var err error
		r, err = sqlstore.ScanRun(withLast{row, &last})
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
		}
		return err
	})
	if err := t.send(ctx, b); err != nil {
		return nil, 0, err
	}
	return r, last, nil
}

// QueueLockRun queues in b what LockRun sends: once b's round trip is
// read, *dst is the run, held, and *last the seq of its last event. *dst
// is left nil for a run that does not exist and, with skipLocked, for a
// row another transaction holds, which the statement then does not wait
// for (the caller tells the two apart by waiting for the lock). A
// transaction of several runs thus locks them all in one round trip, in
// the order queued.
func QueueLockRun(b *pgx.Batch, id string, skipLocked bool, dst **store.Run, last *int64) {
	sql := lockReadRunSQL
	if skipLocked {
		sql = tryLockReadRunSQL
	}
	b.Queue(sql, id).QueryRow(func(row pgx.Row) error {
		r, err := sqlstore.ScanRun(withLast{row, last})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		*dst = r
		return err
	})
}

// QueueExpectRun queues in b a statement that holds the run's row, as
// QueueLockRun does, and fails the transaction unless the row is what its
// caller expects: the run goes on (its status is not final), the seq of
// its last event is last, and it has no cancel request, or one the caller
// knows of (cancelKnown). With skipLocked, a row another transaction
// holds fails it too (Unexpected tells the failure): whatever the
// statements queued after it would write is not written, and a caller
// that wrote them from what it kept of the run (instead of what a
// QueueLockRun read) tries again the other way.
//
// A waiting lock reads the row as its previous holder committed it (READ
// COMMITTED), so the test is of the row as it is once held.
func QueueExpectRun(b *pgx.Batch, id string, skipLocked bool, last int64, cancelKnown bool) {
	sql := expectRunSQL
	if skipLocked {
		sql = expectRunSkipSQL
	}
	b.Queue(sql, id, last, cancelKnown)
}

// expectRunSQL divides by the count of rows held that match: zero fails
// the statement with division_by_zero (Unexpected), from a value the
// planner cannot fold ahead of execution.
var expectRunSQL = `SELECT 1 / count(*)::int FROM (SELECT 1 FROM runs
	WHERE id = $1 AND event_seq = $2 AND status NOT IN ('completed', 'failed', 'cancelled')
	  AND (cancel_requested_at IS NULL OR $3::boolean)` + dialect.LockRow + `) AS held`

// expectRunSkipSQL is expectRunSQL that does not wait for a row another
// transaction holds.
var expectRunSkipSQL = strings.Replace(expectRunSQL, ") AS held", " SKIP LOCKED) AS held", 1)

// Unexpected reports whether err is a transaction failed by a statement
// of QueueExpectRun (or one built the same way: a count of the rows that
// match divided into one).
func Unexpected(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == divisionByZero
}

// divisionByZero is Postgres's SQLSTATE division_by_zero.
const divisionByZero = "22012"

// lockReadRunSQL reads and locks a run's row, and its count of events
// after the columns ScanRun reads.
var lockReadRunSQL = readRunLastSQL + dialect.LockRow

// readRunLastSQL is Store.Run's read with the seq of the run's last event.
var readRunLastSQL = strings.Replace(stmts.ReadRun, " FROM runs ", ", event_seq FROM runs ", 1)

// QueueReadRun queues in b the read of run id, as Store.Run reads it,
// into *dst, with the seq of its last event (its count of events) into
// *last; a missing run is store.ErrNotFound.
func QueueReadRun(b *pgx.Batch, id string, dst **store.Run, last *int64) {
	b.Queue(readRunLastSQL, id).QueryRow(func(row pgx.Row) error {
		r, err := sqlstore.ScanRun(withLast{row, last})
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
		}
		*dst = r
		return err
	})
}

// tryLockReadRunSQL is lockReadRunSQL that skips a row another
// transaction holds.
var tryLockReadRunSQL = lockReadRunSQL + " SKIP LOCKED"

// withLast scans a row's last column into last, its others as asked.
type withLast struct {
	row  pgx.Row
	last *int64
}

func (w withLast) Scan(dest ...any) error {
	return w.row.Scan(append(dest, w.last)...)
}

func (t *pgTx) SaveBatch(ctx context.Context, bt store.Batch, last int64) error {
	b := &pgx.Batch{}
	numbered, err := QueueSave(b, bt, last)
	if err != nil {
		return err
	}
	if err := t.send(ctx, b); err != nil {
		return fmt.Errorf("saving the records of run %s: %w", bt.RunID, err)
	}
	numbered()
	return nil
}

// QueueSave queues in b the writes of a run's steps, events (numbered
// after last, the seq LockRun read) and final record, for its caller to
// send in its transaction (Pipe.Defer). Once they are committed, numbered
// sets the events' RunID and Seq.
func QueueSave(b *pgx.Batch, bt store.Batch, last int64) (numbered func(), err error) {
	bs, err := stmts.Batches([]store.Batch{bt})
	if err != nil {
		return nil, err
	}
	queueBatch(b, bs[0], last+1)
	return func() { bs[0].Numbered(last + 1) }, nil
}

// QueueSaves is QueueSave for the batches of several runs, bts[i]'s
// events numbered after lasts[i], their rows in the same statements. With
// counted, their runs' rows count their events already (QueueStartRun).
// Once they are committed, numbered sets the events' RunID and Seq.
func QueueSaves(b *pgx.Batch, bts []store.Batch, lasts []int64, counted bool) (numbered func(), err error) {
	bs, err := stmts.Batches(bts)
	if err != nil {
		return nil, err
	}
	firsts := make([]int64, len(bs))
	for i := range bs {
		firsts[i] = lasts[i] + 1
		bs[i].Counted = counted
	}
	for _, st := range stmts.WritesOf(bs, firsts) {
		b.Queue(st.SQL, st.Args...)
	}
	return func() {
		for i := range bs {
			bs[i].Numbered(firsts[i])
		}
	}, nil
}

// queueReadRun queues in b the read q of run id into *dst; a missing run
// is store.ErrNotFound.
func queueReadRun(b *pgx.Batch, q, id string, dst **store.Run) {
	b.Queue(q, id).QueryRow(func(row pgx.Row) error {
		r, err := sqlstore.ScanRun(row)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
		}
		*dst = r
		return err
	})
}
