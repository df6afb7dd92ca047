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
	"github.com/skeinhq/skein/node"
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

// TestRunsFinishedTogether: the final records of several runs saved in
// one transaction (QueueSaves, as a worker's transaction and the intake
// write them) go in one statement, and each run reads back what one run's
// save would have written: status, outputs, error, times, usage, the
// count of its events, no owner.
func TestRunsFinishedTogether(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, pgtest.URL(t))
	owner := store.Owner{Host: "h", PID: 1, Token: "t1"}
	at := time.Date(2026, 12, 5, 10, 0, 0, 123456000, time.UTC)
	wake := at.Add(time.Hour)
	finals := []*store.Run{
		{ID: "done", Status: "completed", Outputs: map[string]any{"n": 1, "s": "x"}, FinishedAt: &at, Tokens: 42, CostUSD: 0.25},
		{ID: "broke", Status: "failed", Error: &node.Error{Code: "boom", Category: "runtime", Message: "it broke"}, FinishedAt: &at},
		{ID: "napping", Status: "waiting", WakeAt: &wake},
		{ID: "alone", Status: "completed", Outputs: map[string]any{"only": true}, FinishedAt: &at},
	}
	for _, r := range finals {
		require.NoError(t, s.CreateRun(ctx, &store.Run{ID: r.ID, Workflow: "w", Status: "running", Owner: owner, LeaseTTL: time.Hour}))
	}
	save := func(rs []*store.Run) {
		b := &pgx.Batch{}
		var bts []store.Batch
		var lasts []int64
		for i, r := range rs {
			bt := store.Batch{RunID: r.ID, Finish: r}
			if i%2 == 0 { // some with events: the count of them is set with the finish
				bt.Events = []store.Event{{Time: at, Type: "run_finished"}}
			}
			bts = append(bts, bt)
			lasts = append(lasts, 0)
		}
		_, err := postgres.QueueSaves(b, bts, lasts, false)
		require.NoError(t, err)
		require.NoError(t, s.Pool().SendBatch(ctx, b).Close())
	}
	save(finals[:3])
	save(finals[3:])

	var commands int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(DISTINCT (xmin::text, cmin::text)) FROM runs WHERE id = ANY($1)`,
		[]string{"done", "broke", "napping"}).Scan(&commands))
	require.Equal(t, 1, commands, "the three runs saved together were finished by one statement")
	seqs := map[string]int64{"done": 1, "broke": 0, "napping": 1, "alone": 1}
	for _, want := range finals {
		got, err := s.Run(ctx, want.ID)
		require.NoError(t, err)
		require.Equal(t, want.Status, got.Status, want.ID)
		require.Equal(t, want.Outputs, got.Outputs, want.ID)
		require.Equal(t, want.Error, got.Error, want.ID)
		require.Equal(t, want.FinishedAt, got.FinishedAt, want.ID)
		require.Equal(t, want.WakeAt, got.WakeAt, want.ID)
		require.Equal(t, want.Tokens, got.Tokens, want.ID)
		require.Equal(t, want.CostUSD, got.CostUSD, want.ID)
		require.Empty(t, got.Owner.Token, "%s: its lease is released", want.ID)
		var seq int64
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT event_seq FROM runs WHERE id = $1`, want.ID).Scan(&seq))
		require.Equal(t, seqs[want.ID], seq, "%s: the count of its events", want.ID)
	}
}
