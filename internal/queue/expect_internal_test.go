package queue

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
)

// TestExpectStatementsFailOnAnyChange: the statements a transaction that
// expects a run sends ahead of its writes fail it, so that none of the
// writes behind them is kept, when the run's row or history is not as
// the worker's state left it: another event, a cancel request the state
// does not know, a run that ended, a newer history row, a run that does
// not exist, or (not waiting) a row another transaction holds. As
// expected, they pass and the writes behind them commit.
func TestExpectStatementsFailOnAnyChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := testDriver(t, Config{})
	pool := st.Pool()
	require.NoError(t, st.CreateRun(ctx, &store.Run{ID: "r", Workflow: "w", Status: record.RunRunning}))
	_, err := pool.Exec(ctx, `UPDATE runs SET event_seq = 4 WHERE id = 'r'`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO `+logTable+` (run_id, seq, kind, at, node, visit, body) VALUES ('r', 1, 'start', now(), '', 0, '{}'::json)`)
	require.NoError(t, err)

	// expect sends the statements, then a write, and the COMMIT, in one
	// transaction; it reports whether the write was kept.
	write := 0
	expect := func(run string, skip bool, last, seq int64, cancelKnown bool) (kept bool, err error) {
		t.Helper()
		write++
		tx, err := st.BeginPipe(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		b := &pgx.Batch{}
		postgres.QueueExpectRun(b, run, skip, last, cancelKnown)
		queueExpectLog(b, run, seq)
		b.Queue(`UPDATE runs SET workflow_version = $1 WHERE id = 'r'`, write)
		tx.Defer(b)
		err = tx.Commit(ctx)
		var v int
		require.NoError(t, pool.QueryRow(ctx, `SELECT workflow_version FROM runs WHERE id = 'r'`).Scan(&v))
		return v == write, err
	}
	unexpected := func(run string, skip bool, last, seq int64, cancelKnown bool, why string) {
		t.Helper()
		kept, err := expect(run, skip, last, seq, cancelKnown)
		require.Error(t, err, why)
		require.True(t, postgres.Unexpected(err), "%s: %v", why, err)
		require.False(t, kept, "%s: nothing behind the statements is written", why)
	}

	kept, err := expect("r", false, 4, 1, false)
	require.NoError(t, err)
	require.True(t, kept, "the run as expected: the write commits")
	kept, err = expect("r", true, 4, 1, false)
	require.NoError(t, err)
	require.True(t, kept, "the run as expected, its row free: the write commits")

	unexpected("r", false, 3, 1, false, "another event since")
	unexpected("r", false, 4, 0, false, "a history row since")
	unexpected("nope", false, 0, 0, false, "no such run")

	_, err = pool.Exec(ctx, `UPDATE runs SET cancel_requested_at = now() WHERE id = 'r'`)
	require.NoError(t, err)
	unexpected("r", false, 4, 1, false, "a cancel request the state does not know")
	kept, err = expect("r", false, 4, 1, true)
	require.NoError(t, err)
	require.True(t, kept, "a cancel request the state applied already")

	// A row another transaction holds: not waited for when skipping.
	other, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = other.Exec(ctx, `SELECT 1 FROM runs WHERE id = 'r' FOR NO KEY UPDATE`)
	require.NoError(t, err)
	unexpected("r", true, 4, 1, true, "a row held elsewhere, not waited for")
	require.NoError(t, other.Rollback(ctx))

	_, err = pool.Exec(ctx, `UPDATE runs SET status = 'completed' WHERE id = 'r'`)
	require.NoError(t, err)
	unexpected("r", false, 4, 1, true, "a run that ended")
}
