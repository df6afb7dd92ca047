package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
	"github.com/skeinhq/skein/internal/store/storetest"
)

// callerTx is a store whose transaction is one its caller began, as the
// queue driver's: Tx goes through WithTx.
type callerTx struct{ *postgres.Store }

func (s callerTx) Tx(ctx context.Context, fn func(tx store.Tx) error) error {
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(s.WithTx(tx, nil)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// TestWithTx: the store's transaction on a transaction its caller began
// keeps the contract of Store.Tx.
func TestWithTx(t *testing.T) {
	t.Parallel()
	storetest.RunTx(t, func(t *testing.T) store.Store {
		return callerTx{open(t, pgtest.URL(t))}
	})
}

// TestWithTxTakesTheCallersStatements: the statements a caller queued ride
// in the round trip of the store's call, after its own: a read of the
// run's events sees them under LockRun, and a write commits with the
// run's records.
func TestWithTxTakesTheCallersStatements(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, pgtest.URL(t))
	require.NoError(t, s.CreateRun(ctx, &store.Run{ID: "r1", Workflow: "w", Status: "running"}))
	require.NoError(t, s.AppendEvents(ctx, "r1", []store.Event{{Time: time.Now(), Type: "a"}}))

	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()

	b := &pgx.Batch{}
	var events int
	b.Queue(`SELECT count(*) FROM events WHERE run_id = $1`, "r1").QueryRow(func(row pgx.Row) error { return row.Scan(&events) })
	run, last, err := s.WithTx(tx, b).LockRun(ctx, "r1")
	require.NoError(t, err)
	require.Equal(t, "running", string(run.Status))
	require.Equal(t, int64(1), last)
	require.Equal(t, 1, events, "the caller's read was sent with LockRun")
	require.Zero(t, b.Len(), "the caller's batch is empty once sent")

	b.Queue(`UPDATE runs SET dir = $2 WHERE id = $1`, "r1", "/runs/r1")
	evs := []store.Event{{Time: time.Now(), Type: "b"}}
	require.NoError(t, s.WithTx(tx, b).SaveBatch(ctx, store.Batch{RunID: "r1", Events: evs}, last))
	require.Equal(t, int64(2), evs[0].Seq)
	require.NoError(t, tx.Commit(ctx))

	got, err := s.Run(ctx, "r1")
	require.NoError(t, err)
	require.Equal(t, "/runs/r1", got.Dir, "the caller's write was sent with SaveBatch")
	stored, err := s.Events(ctx, "r1", 0, 0)
	require.NoError(t, err)
	require.Len(t, stored, 2)

	_, err = s.WithTx(s.Pool(), nil).Run(ctx, "nope")
	require.ErrorIs(t, err, store.ErrNotFound, "on the pool, it reads")
}

// TestTryLockRunDoesNotWait: a row another transaction holds
// QueueLockRun's statement with skipLocked skips at once, as it does a run that does
// not exist, beside the caller's other statements; once that transaction
// ended it holds and reads the run's row with the seq of its last event.
func TestTryLockRunDoesNotWait(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, pgtest.URL(t))
	for _, id := range []string{"r1", "r2"} {
		require.NoError(t, s.CreateRun(ctx, &store.Run{ID: id, Workflow: "w", Status: "running"}))
	}
	require.NoError(t, s.AppendEvents(ctx, "r1", []store.Event{{Time: time.Now(), Type: "a"}, {Time: time.Now(), Type: "b"}}))

	holder, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(ctx) }()
	_, _, err = s.WithTx(holder, nil).LockRun(ctx, "r1")
	require.NoError(t, err)

	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	var (
		r1, r2, nope *store.Run
		l1, l2, l3   int64
		events       int
	)
	b := &pgx.Batch{}
	postgres.QueueLockRun(b, "r1", true, &r1, &l1)
	postgres.QueueLockRun(b, "nope", true, &nope, &l3)
	postgres.QueueLockRun(b, "r2", true, &r2, &l2)
	b.Queue(`SELECT count(*) FROM events WHERE run_id = $1`, "r1").QueryRow(func(row pgx.Row) error { return row.Scan(&events) })
	require.NoError(t, tx.SendBatch(ctx, b).Close())
	require.Nil(t, r1, "a row another transaction holds is skipped")
	require.Nil(t, nope)
	require.NotNil(t, r2, "the free row beside it is held")
	require.Equal(t, "r2", r2.ID)
	require.Equal(t, 2, events, "the caller's statements ran")

	require.NoError(t, holder.Rollback(ctx))
	b = &pgx.Batch{}
	postgres.QueueLockRun(b, "r1", true, &r1, &l1)
	require.NoError(t, tx.SendBatch(ctx, b).Close())
	require.NotNil(t, r1)
	require.Equal(t, "r1", r1.ID)
	require.EqualValues(t, 2, l1)
}
