package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/skeinhq/skein/internal/store"
)

// What the queue driver (internal/queue) needs to write a run's records in
// its own transactions, with the jobs they make: the pool, and the store's
// writes on a transaction the caller holds.

// Pool returns the store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// CreateRunTx is CreateRun in the caller's transaction.
func CreateRunTx(ctx context.Context, tx pgx.Tx, r *store.Run) error {
	if r == nil || r.ID == "" {
		return errors.New("creating a run: the run has no id")
	}
	if r.Status == "" {
		r.Status = "pending"
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = now()
	}
	if r.Generation <= 0 {
		r.Generation = 1
	}
	args, err := runArgs(r)
	if err != nil {
		return fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	args = append([]any{r.ID}, args...)
	args = append(args, r.Owner.Host, r.Owner.PID, r.Owner.Token, r.Generation, micros(r.LeaseTTL))
	var until *time.Time
	err = tx.QueryRow(ctx, insertRun, args...).Scan(&until)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("run %s: %w", r.ID, store.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	if until != nil {
		r.LeaseUntil = until.UTC()
	}
	return nil
}

// LockRunTx reads run id and locks its row until the caller's transaction
// ends: the writers of one run take turns.
func LockRunTx(ctx context.Context, tx pgx.Tx, id string) (*store.Run, error) {
	r, err := scanRun(tx.QueryRow(ctx, `SELECT `+readCols+` FROM runs WHERE id = $1 FOR UPDATE`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	return r, err
}

// SaveBatchTx writes a batch of one run (steps, events, the final record)
// in the caller's transaction, which must hold the run's row (LockRunTx).
// Batch.Token is not checked: the caller fences its own writes.
func SaveBatchTx(ctx context.Context, tx pgx.Tx, bt store.Batch) error {
	var last int64
	if len(bt.Events) > 0 {
		if err := tx.QueryRow(ctx, lastSeqSQL, bt.RunID).Scan(&last); err != nil {
			return fmt.Errorf("appending events to run %s: %w", bt.RunID, err)
		}
	}
	b := &pgx.Batch{}
	if err := QueueSaveBatch(b, bt, last); err != nil {
		return err
	}
	if err := sendBatch(ctx, tx, b); err != nil {
		return fmt.Errorf("saving the records of run %s: %w", bt.RunID, err)
	}
	return nil
}

// QueueLockRun queues in b what LockRunTx does, and the run's last event
// seq (into *last), for a caller that sends them with its own statements
// in one round trip. *dst is set when the batch is read; a missing run is
// store.ErrNotFound.
func QueueLockRun(b *pgx.Batch, id string, dst **store.Run, last *int64) {
	b.Queue(`SELECT `+readCols+` FROM runs WHERE id = $1 FOR UPDATE`, id).QueryRow(func(row pgx.Row) error {
		r, err := scanRun(row)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
		}
		*dst = r
		return err
	})
	b.Queue(lastSeqSQL, id).QueryRow(func(row pgx.Row) error { return row.Scan(last) })
}

// QueueReadRun queues in b the read of a run, without locking it, into
// *dst; a missing run is store.ErrNotFound.
func QueueReadRun(b *pgx.Batch, id string, dst **store.Run) {
	b.Queue(`SELECT `+readCols+` FROM runs WHERE id = $1`, id).QueryRow(func(row pgx.Row) error {
		r, err := scanRun(row)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
		}
		*dst = r
		return err
	})
}

// QueueSaveBatch queues in b the writes of SaveBatchTx, the run's events
// numbered after last (its last event's seq, read under the run's lock:
// QueueLockRun), and numbers bt.Events.
func QueueSaveBatch(b *pgx.Batch, bt store.Batch, last int64) error {
	args, err := stepsArgs(bt.RunID, bt.Steps)
	if err != nil {
		return fmt.Errorf("saving steps of run %s: %w", bt.RunID, err)
	}
	data, err := eventData(bt.Events)
	if err != nil {
		return fmt.Errorf("appending events to run %s: %w", bt.RunID, err)
	}
	var finish []any
	if bt.Finish != nil {
		if finish, err = finishArgs(bt.Finish); err != nil {
			return fmt.Errorf("finishing run %s: %w", bt.RunID, err)
		}
	}
	queueSteps(b, args)
	queueEvents(b, bt.RunID, last+1, bt.Events, data)
	if finish != nil {
		b.Queue(finishRun, append([]any{bt.RunID}, finish...)...)
	}
	for j := range bt.Events {
		bt.Events[j].RunID, bt.Events[j].Seq = bt.RunID, last+1+int64(j)
	}
	return nil
}
