package queue_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// transactions is a pgx tracer that counts the round trips of each
// transaction a store's connections send (a BEGIN to its COMMIT) and
// keeps, for each, its statements.
type transactions struct {
	mu    sync.Mutex
	conns map[*pgx.Conn]*tracedConn
	done  []*tracedTx
}

// tracedConn is what the tracer knows of a connection: its round trips
// so far, and its transaction under way.
type tracedConn struct {
	trips int
	tx    *tracedTx
}

type tracedTx struct {
	trips int
	sql   []string
	// last is the connection's round trip the last statement came in.
	last int
}

func (tr *transactions) conn(c *pgx.Conn) *tracedConn {
	if tr.conns == nil {
		tr.conns = map[*pgx.Conn]*tracedConn{}
	}
	tc := tr.conns[c]
	if tc == nil {
		tc = &tracedConn{}
		tr.conns[c] = tc
	}
	return tc
}

// statement counts sql, sent in the connection's latest round trip.
func (tr *transactions) statement(c *pgx.Conn, sql string) {
	tc := tr.conn(c)
	switch {
	case sql == "BEGIN":
		tc.tx = &tracedTx{trips: 1, last: tc.trips}
	case tc.tx == nil:
		return // outside a transaction
	case tc.tx.last != tc.trips:
		tc.tx.trips++
		tc.tx.last = tc.trips
	}
	tc.tx.sql = append(tc.tx.sql, sql)
	if sql == "COMMIT" {
		tr.done = append(tr.done, tc.tx)
		tc.tx = nil
	}
}

func (tr *transactions) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.conn(c).trips++
	tr.statement(c, d.SQL)
	return ctx
}

func (*transactions) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (tr *transactions) TraceBatchStart(ctx context.Context, c *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.conn(c).trips++
	return ctx
}

// TraceBatchQuery comes for each statement of a batch as its result is
// read, which is before the connection's next round trip.
func (tr *transactions) TraceBatchQuery(_ context.Context, c *pgx.Conn, d pgx.TraceBatchQueryData) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.statement(c, d.SQL)
}

func (*transactions) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// recording returns the transactions that wrote a run's history (the
// worker's: River's own transactions write none).
func (tr *transactions) recording() []*tracedTx {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []*tracedTx
	for _, tx := range tr.done {
		for _, q := range tx.sql {
			if strings.HasPrefix(q, "INSERT INTO skein_queue_log") {
				out = append(out, tx)
				break
			}
		}
	}
	return out
}

// tracedWorker is a bundle with one worker whose store's transactions
// tr counts.
func tracedWorker(t *testing.T) (*bundle, *queue.Driver, *transactions) {
	t.Helper()
	url := pgtest.URL(t)
	b := setupAt(t, url, 0)
	tr := &transactions{}
	traced, err := postgres.OpenWithOptions(context.Background(), url, postgres.Options{Tracer: tr})
	require.NoError(t, err)
	t.Cleanup(func() { _ = traced.Close() })
	d := b.work(t, queue.Config{Store: traced, Queues: map[string]int{queue.DefaultQueue: 2},
		Poll: time.Hour, FetchPoll: 50 * time.Millisecond})
	return b, d, tr
}

// TestKeptStateRecordsInOneRoundTrip: a worker whose last transaction of
// a run, or its first read of it, left the state it keeps records the
// run's next node in one round trip — the BEGIN, the statements that hold the run's row and check it
// is as the state left it, the node's records, the next node's job taken
// and marked running, and the COMMIT — and the run's outcome is the same.
func TestKeptStateRecordsInOneRoundTrip(t *testing.T) {
	t.Parallel()
	b, d, tr := tracedWorker(t)

	run := b.start(t, `version: 1
name: chain
nodes:
  - {id: a, type: shell, command: [echo, "1"]}
  - {id: b, type: shell, command: [echo, "{{ int(trim(a.stdout)) + 1 }}"]}
  - {id: c, type: shell, command: [echo, "{{ int(trim(b.stdout)) + 1 }}"]}
  - {id: d, type: shell, command: [echo, "{{ int(trim(c.stdout)) + 1 }}"]}
edges:
  - {from: a, to: b}
  - {from: b, to: c}
  - {from: c, to: d}
`, nil)
	end := b.wait(t, run.ID)
	require.Equal(t, "completed", string(end.Status), "%v", end.Error)
	steps := b.steps(t, run.ID)
	require.Equal(t, "4", strings.TrimSpace(steps["d"][0].Output["stdout"].(string)))
	for _, n := range []string{"a", "b", "c", "d"} {
		require.Equal(t, 1, steps[n][0].Attempts, "node %s ran once", n)
	}

	tries, failed := d.Expected()
	require.Zero(t, failed, "nothing but this worker wrote the run")
	require.GreaterOrEqual(t, tries, int64(5), "every transaction of the run on the worker expected it")
	txs := tr.recording()
	// a began (the worker's first transaction of the run: the worker's
	// first read of the run, before it, brought its history and its count
	// of events), then a, b, c and d recorded.
	require.Len(t, txs, 5, "a's start, then one transaction for each node recorded")
	for i, tx := range txs {
		require.Equal(t, 1, tx.trips, "transaction %d: %d round trips for %q", i, tx.trips, tx.sql)
	}
}

// TestUnexpectedRunIsReadAgain: when another process wrote a run while
// this worker ran its node (a cancel that lets running nodes finish,
// applied by the starter), the worker's transaction that expected the
// run as it left it fails before writing anything, and is tried again
// reading the run under its lock: the node is recorded once, the cancel
// applies, and the run ends cancelled.
func TestUnexpectedRunIsReadAgain(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	d := b.work(t, queue.Config{Queues: map[string]int{queue.DefaultQueue: 2}, Poll: time.Hour, FetchPoll: 50 * time.Millisecond})
	dir := t.TempDir()
	pidFile, gate := filepath.Join(dir, "pid"), filepath.Join(dir, "gate")
	run := b.start(t, sleeper(pidFile, gate), nil)
	pidOf(t, pidFile)

	ctx := context.Background()
	_, err := b.st.RequestCancel(ctx, run.ID, true)
	require.NoError(t, err)
	require.NoError(t, b.starter.Cancel(ctx, run.ID))
	require.NoError(t, os.WriteFile(gate, nil, 0o600))

	done := b.wait(t, run.ID)
	require.Equal(t, "cancelled", string(done.Status))
	steps := b.steps(t, run.ID)
	require.Len(t, steps["slow"], 1, "the node is recorded once")
	require.Equal(t, "success", string(steps["slow"][0].Status))
	require.Equal(t, true, steps["slow"][0].Output["json"].(map[string]any)["done"])
	require.Equal(t, "cancelled", string(steps["after"][0].Status))
	var finished int
	require.NoError(t, b.st.Pool().QueryRow(ctx, `SELECT count(*) FROM events WHERE run_id = $1 AND type = 'node_finished' AND node = 'slow'`,
		run.ID).Scan(&finished))
	require.Equal(t, 1, finished, "one node_finished for the node")
	tries, failed := d.Expected()
	require.Equal(t, int64(2), tries, "the node's start expected the run as the worker's first read of it found it, and its record as the start left it")
	require.Equal(t, int64(1), failed, "and the record found the cancel")
}

// TestReleasedJobsRideWithTheCommit: a node whose end releases two nodes
// is recorded in one round trip too — the worker takes one of them and
// the other's job, for any worker, is inserted with the COMMIT — and both
// run.
func TestReleasedJobsRideWithTheCommit(t *testing.T) {
	t.Parallel()
	b, _, tr := tracedWorker(t)

	run := b.start(t, `version: 1
name: fork
nodes:
  - {id: a, type: shell, command: [echo, "1"]}
  - {id: b, type: shell, command: [echo, "{{ int(trim(a.stdout)) + 1 }}"]}
  - {id: c, type: shell, command: [echo, "{{ int(trim(a.stdout)) + 2 }}"]}
edges:
  - {from: a, to: b}
  - {from: a, to: c}
`, nil)
	end := b.wait(t, run.ID)
	require.Equal(t, "completed", string(end.Status), "%v", end.Error)
	steps := b.steps(t, run.ID)
	require.Equal(t, "2", strings.TrimSpace(steps["b"][0].Output["stdout"].(string)))
	require.Equal(t, "3", strings.TrimSpace(steps["c"][0].Output["stdout"].(string)))

	var forks []*tracedTx
	for _, tx := range tr.recording() {
		for _, q := range tx.sql {
			if strings.HasPrefix(q, "INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at)") {
				forks = append(forks, tx)
				break
			}
		}
	}
	require.Len(t, forks, 1, "one transaction released a job for any worker: a's")
	require.Equal(t, 1, forks[0].trips, "a's record, the job taken and the job released in one round trip: %q", forks[0].sql)
}
