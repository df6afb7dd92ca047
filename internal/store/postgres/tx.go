package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlstore"
)

// What the queue driver (internal/queue) needs to write a run's records in
// its own transactions, with the jobs they make: the pool, and the store's
// writes on a transaction the caller holds.

// Pool returns the store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// WithTx returns the store's transaction on tx, a transaction of the
// store's pool its caller began (as River's driver takes the caller's
// transaction): the store's writes through it commit with the caller's.
func (s *Store) WithTx(tx pgx.Tx) store.Tx { return s.TxOn(conn{tx}) }

// CreateRunTx is CreateRun in the caller's transaction.
func CreateRunTx(ctx context.Context, tx pgx.Tx, r *store.Run) error {
	args, err := stmts.CreateRunArgs(r)
	if err != nil {
		return err
	}
	err = stmts.Created(r, tx.QueryRow(ctx, stmts.InsertRun, args...))
	if err != nil && !errors.Is(err, store.ErrExists) {
		return fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	return err
}

// QueueLockRun queues in b a read of run id that locks its row until the
// transaction ends, and the run's last event seq (into *last), for a
// caller that sends them with its own statements in one round trip. *dst
// is set when the batch is read; a missing run is store.ErrNotFound.
func QueueLockRun(b *pgx.Batch, id string, dst **store.Run, last *int64) {
	queueReadRun(b, stmts.ReadRun+" FOR UPDATE", id, dst)
	b.Queue(stmts.LastSeq, id).QueryRow(func(row pgx.Row) error { return row.Scan(last) })
}

// QueueReadRun queues in b the read of a run, without locking it, into
// *dst; a missing run is store.ErrNotFound.
func QueueReadRun(b *pgx.Batch, id string, dst **store.Run) {
	queueReadRun(b, stmts.ReadRun, id, dst)
}

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

// QueueSaveBatch queues in b the writes of a batch of one run (steps,
// events, the final record), its events numbered after last (its last
// event's seq, read under the run's lock: QueueLockRun), and numbers
// bt.Events. Batch.Token is not checked: the caller fences its own writes.
func QueueSaveBatch(b *pgx.Batch, bt store.Batch, last int64) error {
	bs, err := stmts.Batches([]store.Batch{bt})
	if err != nil {
		return err
	}
	queueBatch(b, bs[0], last+1)
	bs[0].Numbered(last + 1)
	return nil
}
