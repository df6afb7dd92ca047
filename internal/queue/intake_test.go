package queue_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
	"github.com/skeinhq/skein/workflow"
)

// statements is a pgx tracer that counts what a store's connections send:
// round trips (a query, or a batch of pipelined statements) and the
// statements themselves.
type statements struct {
	mu         sync.Mutex
	roundTrips int
	sql        []string
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roundTrips++
	s.sql = append(s.sql, d.SQL)
	return ctx
}

func (*statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *statements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roundTrips++
	return ctx
}

func (s *statements) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sql = append(s.sql, d.SQL)
}

func (*statements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// reset forgets what was counted.
func (s *statements) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roundTrips, s.sql = 0, nil
}

// seen returns a copy of the round trips and statements counted so far,
// without the announcements of inserted jobs: each is a query of its own,
// sent after a COMMIT by another goroutine (jobs.go: announce), so one of
// an earlier transaction may land in a later count.
func (s *statements) seen() (trips int, sql []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	trips = s.roundTrips
	for _, q := range s.sql {
		if strings.HasPrefix(q, "SELECT pg_notify(") {
			trips--
			continue
		}
		sql = append(sql, q)
	}
	return trips, sql
}

// countOf returns how many statements are exactly word (BEGIN, COMMIT).
func countOf(sql []string, word string) int {
	n := 0
	for _, q := range sql {
		if strings.EqualFold(strings.TrimSpace(q), word) {
			n++
		}
	}
	return n
}

const intakeFlow = `version: 1
name: intake
nodes:
  - id: hook
    type: trigger.webhook
    auth: {type: none}
  - id: left
    type: set
    values: {order: "{{ trigger.body.order }}"}
  - id: right
    type: set
    values: {n: 1}
edges:
  - {from: hook, to: left}
  - {from: hook, to: right}
`

type intake struct {
	st      *postgres.Store
	starter *queue.Starter
	trace   *statements
	w       *workflow.Workflow
}

// setupIntake opens a starter on the test database; opts.Tracer, a
// *statements, records what the intake sends.
func setupIntake(t testing.TB, opts postgres.Options) *intake {
	t.Helper()
	return setupIntakeOf(t, opts, intakeFlow)
}

// setupIntakeOf is setupIntake with the workflow flow.
func setupIntakeOf(t testing.TB, opts postgres.Options, flow string) *intake {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.OpenWithOptions(ctx, pgtest.URL(t), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	reg := registry()
	starter, err := queue.Open(ctx, queue.Config{Store: st, Registry: reg}, t.TempDir(), redact.New(nil))
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "intake.yaml")
	require.NoError(t, os.WriteFile(file, []byte(flow), 0o600))
	w, ds := workflow.Load(file, reg)
	require.False(t, ds.HasErrors(), "%v", ds)
	trace, _ := opts.Tracer.(*statements)
	return &intake{st: st, starter: starter, trace: trace, w: w}
}

func (in *intake) start(ctx context.Context, id string) (*store.Run, error) {
	return in.starter.Start(ctx, queue.StartRequest{RunID: id, Workflow: in.w, Trigger: "hook",
		Payload: map[string]any{"body": map[string]any{"order": id}, "method": "POST"}})
}

// holdRuns locks the runs table until the transaction it returns ends
// (at the latest when the test does): the starts' transactions wait.
func (in *intake) holdRuns(t *testing.T) pgx.Tx {
	t.Helper()
	return lockTable(t, in.st, "runs")
}

// rows counts what the database holds of a run: its row, its steps, its
// history and its jobs.
func (in *intake) rows(t *testing.T, id string) (runs, steps, events, jobs int) {
	t.Helper()
	ctx := context.Background()
	pool := in.st.Pool()
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM runs WHERE id = $1`, id).Scan(&runs))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM steps WHERE run_id = $1`, id).Scan(&steps))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE run_id = $1`, id).Scan(&events))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE args->>'run' = $1`, id).Scan(&jobs))
	return
}

// TestReadyOpensTheIntakesConnections: a starter readied for a server's
// intake has opened, before the first start, a connection for each start
// transaction that may be under way at once, and counts the queue's jobs.
func TestReadyOpensTheIntakesConnections(t *testing.T) {
	t.Parallel()
	in := setupIntake(t, postgres.Options{MaxConns: 16})
	jobs, err := in.starter.Ready(context.Background())
	require.NoError(t, err)
	require.Contains(t, jobs, queue.Jobs{Queue: queue.DefaultQueue, State: "available"}, "the jobs counted: none yet")
	stat := in.st.Pool().Stat()
	require.GreaterOrEqual(t, int(stat.TotalConns()), queue.StartWriters(), "the connections of the start transactions are open")
	require.Equal(t, stat.TotalConns(), stat.IdleConns(), "and given back")
	_, err = in.start(context.Background(), "ready-1")
	require.NoError(t, err)
	require.Equal(t, stat.NewConnsCount(), in.st.Pool().Stat().NewConnsCount(), "the first start opened no connection")
}

// TestIntakeIsOneTransaction: starting a run on the queue (a webhook's
// intake on Postgres) writes the run row, its trigger step, its history
// and the jobs of its first nodes in one transaction, its statements
// and its COMMIT pipelined into one round trip; the workflow's version is
// saved on the first start only.
func TestIntakeIsOneTransaction(t *testing.T) {
	t.Parallel()
	in := setupIntake(t, postgres.Options{Tracer: &statements{}})
	ctx := context.Background()
	_, err := in.start(ctx, "first")
	require.NoError(t, err)

	in.trace.reset()
	run, err := in.start(ctx, "second")
	require.NoError(t, err)
	require.Equal(t, "second", run.ID)
	trips, sql := in.trace.seen()
	require.Equal(t, 1, countOf(sql, "BEGIN"), "one transaction: %q", sql)
	require.Equal(t, 1, countOf(sql, "COMMIT"), "one transaction: %q", sql)
	require.Equal(t, 1, trips, "the intake's statements go out pipelined: %d round trips for %q", trips, sql)
	t.Logf("intake: %d statements in %d round trips: %q", len(sql), trips, sql)
	var stepStmts, eventStmts int
	for _, q := range sql {
		stepStmts += b2i(strings.HasPrefix(q, "INSERT INTO steps "))
		eventStmts += b2i(strings.HasPrefix(q, "INSERT INTO events "))
	}
	require.Equal(t, 1, stepStmts, "the trigger's step and the planned ones in one statement: %q", sql)
	require.Equal(t, 1, eventStmts, "the run's first events in one statement: %q", sql)

	runs, steps, events, jobs := in.rows(t, "second")
	require.Equal(t, 1, runs)
	require.Positive(t, steps, "the trigger's step is recorded with the run")
	require.Positive(t, events)
	require.Equal(t, 2, jobs, "a job for each node after the trigger")
}

// TestIntakeFailureLeavesNoHalfRun: an intake that fails part-way leaves
// nothing of its run — no run row without its jobs — and a delivery whose
// run exists (the same run id) adds no job to it.
func TestIntakeFailureLeavesNoHalfRun(t *testing.T) {
	t.Parallel()
	in := setupIntake(t, postgres.Options{Tracer: &statements{}})
	ctx := context.Background()
	_, err := in.start(ctx, "warm") // the workflow's version is saved
	require.NoError(t, err)

	// The jobs' insert fails, after the run row and its steps were sent.
	_, err = in.st.Pool().Exec(ctx, `
CREATE FUNCTION refuse_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'no jobs today'; END $$;
CREATE TRIGGER refuse_job BEFORE INSERT ON river_job FOR EACH ROW EXECUTE FUNCTION refuse_job();`)
	require.NoError(t, err)
	_, err = in.start(ctx, "broken")
	require.ErrorContains(t, err, "no jobs today")
	runs, steps, events, jobs := in.rows(t, "broken")
	require.Equal(t, [4]int{0, 0, 0, 0}, [4]int{runs, steps, events, jobs}, "runs, steps, events, jobs of the failed intake")

	_, err = in.st.Pool().Exec(ctx, `DROP TRIGGER refuse_job ON river_job`)
	require.NoError(t, err)
	_, err = in.start(ctx, "once")
	require.NoError(t, err)
	_, err = in.start(ctx, "once")
	require.ErrorIs(t, err, store.ErrExists)
	runs, _, _, jobs = in.rows(t, "once")
	require.Equal(t, 1, runs)
	require.Equal(t, 2, jobs, "the second delivery of one run adds no job")
}

// TestStartsShareATransaction: the runs started while a start
// transaction is under way are recorded together by the next one; a
// delivery among them whose run exists fails alone, and adds nothing.
func TestStartsShareATransaction(t *testing.T) {
	t.Parallel()
	in := setupIntake(t, postgres.Options{Tracer: &statements{}})
	ctx := context.Background()
	_, err := in.start(ctx, "dup")
	require.NoError(t, err)

	// The first start's transaction waits for the runs table.
	hold := in.holdRuns(t)
	const writers = 1 // fewer than StartsAbreast wait
	var ids, first []string
	for i := range writers {
		first = append(first, fmt.Sprintf("first%d", i))
	}
	ids = append(append(ids, first...), "a", "b", "dup", "c")
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	begin := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = in.start(ctx, ids[i])
		}()
	}
	for i := range writers {
		begin(i)
		require.Eventually(t, func() bool { _, w := in.starter.StartsWaiting(); return w == i+1 }, time.Minute, time.Millisecond)
	}
	for i := writers; i < len(ids); i++ {
		begin(i)
	}
	require.Eventually(t, func() bool { n, _ := in.starter.StartsWaiting(); return n == len(ids)-writers }, time.Minute, time.Millisecond,
		"the other starts waiting for the next transaction")
	in.trace.reset()
	require.NoError(t, hold.Rollback(ctx))
	wg.Wait()
	_, sql := in.trace.seen()

	byTx := map[int64][]string{}
	for i, id := range ids {
		if id == "dup" {
			require.ErrorIs(t, errs[i], store.ErrExists)
			runs, _, _, jobs := in.rows(t, id)
			require.Equal(t, [2]int{1, 2}, [2]int{runs, jobs}, "runs and jobs of the run delivered twice")
			continue
		}
		require.NoError(t, errs[i], id)
		runs, steps, events, jobs := in.rows(t, id)
		require.Equal(t, 1, runs, id)
		require.Positive(t, steps, id)
		require.Positive(t, events, id)
		require.Equal(t, 2, jobs, id)
		var xmin int64
		require.NoError(t, in.st.Pool().QueryRow(ctx, `SELECT xmin::text::bigint FROM runs WHERE id = $1`, id).Scan(&xmin))
		byTx[xmin] = append(byTx[xmin], id)
	}
	require.Len(t, byTx, writers+1, "a transaction for the first start and one of the runs that waited: %v", byTx)
	for _, group := range byTx {
		if len(group) > 1 {
			require.ElementsMatch(t, []string{"a", "b", "c"}, group, "the runs that waited, in one transaction")
		}
	}

	// The group's runs share its statements: a table's rows of a, b and c
	// in one (the trigger's step and the two planned ones of each run:
	// 9 steps; 2 jobs each), and each run's row made with the count of
	// its events, no UPDATE to set it.
	rows := map[string][]int{}
	for _, q := range sql {
		for _, table := range []string{"runs", "steps", "events", "skein_queue_log", "river_job"} {
			if strings.HasPrefix(q, "INSERT INTO "+table+" ") {
				rows[table] = append(rows[table], strings.Count(q, "), (")+1)
			}
		}
		require.NotContains(t, q, "SET event_seq", "a run started counts its events as it is made")
	}
	require.Contains(t, rows["skein_queue_log"], 3, "the history rows of a, b and c in one statement: %v", rows)
	require.Contains(t, rows["steps"], 9, "the steps of a, b and c in one statement: %v", rows)
	require.Contains(t, rows["river_job"], 6, "the jobs of a, b and c in one statement: %v", rows)
	for _, id := range ids {
		if id == "dup" {
			continue
		}
		var counted, last int64
		require.NoError(t, in.st.Pool().QueryRow(ctx, `SELECT event_seq FROM runs WHERE id = $1`, id).Scan(&counted))
		evs, err := in.st.Events(ctx, id, 0, 0)
		require.NoError(t, err)
		for i, ev := range evs {
			require.Equal(t, int64(i+1), ev.Seq, "run %s: its events numbered in order", id)
			last = ev.Seq
		}
		require.Equal(t, last, counted, "run %s: its row counts its events", id)
	}
}

// TestStartsThatEndShareATransaction: runs that end as they start (a
// workflow of its trigger alone), started together, are written by one
// transaction with their final records: each completed, with its
// trigger's output, its row counting its events.
func TestStartsThatEndShareATransaction(t *testing.T) {
	t.Parallel()
	in := setupIntakeOf(t, postgres.Options{}, "version: 1\nname: alone\nnodes:\n  - {id: hook, type: trigger.webhook, auth: {type: none}}\n")
	ctx := context.Background()
	_, err := in.start(ctx, "warm") // the workflow's version is saved
	require.NoError(t, err)
	hold := in.holdRuns(t)
	const writers = 1 // fewer than StartsAbreast wait
	ids := []string{}
	for i := range writers + 3 {
		ids = append(ids, fmt.Sprintf("alone%d", i))
	}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { _, errs[i] = in.start(ctx, id) })
		if i < writers {
			require.Eventually(t, func() bool { _, w := in.starter.StartsWaiting(); return w == i+1 }, time.Minute, time.Millisecond)
		}
	}
	require.Eventually(t, func() bool { n, _ := in.starter.StartsWaiting(); return n == 3 }, time.Minute, time.Millisecond,
		"three starts waiting for the next transaction")
	require.NoError(t, hold.Rollback(ctx))
	wg.Wait()

	byTx := map[int64]int{}
	for i, id := range ids {
		require.NoError(t, errs[i], id)
		run, err := in.st.Run(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "completed", string(run.Status), "run %s: %v", id, run.Error)
		var counted, xmin int64
		require.NoError(t, in.st.Pool().QueryRow(ctx, `SELECT event_seq, xmin::text::bigint FROM runs WHERE id = $1`, id).Scan(&counted, &xmin))
		byTx[xmin]++
		evs, err := in.st.Events(ctx, id, 0, 0)
		require.NoError(t, err)
		require.NotEmpty(t, evs)
		require.Equal(t, "execution_finished", evs[len(evs)-1].Type, "run %s", id)
		require.Equal(t, int64(len(evs)), counted, "run %s: its row counts its events", id)
		steps, err := in.st.Steps(ctx, id)
		require.NoError(t, err)
		require.Len(t, steps, 1)
		require.Equal(t, id, steps[0].Output["body"].(map[string]any)["order"], "run %s: its trigger's output", id)
	}
	require.Contains(t, slices.Collect(maps.Values(byTx)), 3, "the three that waited ended in one transaction: %v", byTx)
}

// TestStartsAbreast: while a start transaction is under way, the starts
// that arrive wait for the next one until StartsAbreast of them wait;
// their transaction then starts beside the first, and the starts after
// it wait again. Each group is recorded by one transaction.
func TestStartsAbreast(t *testing.T) {
	t.Parallel()
	in := setupIntake(t, postgres.Options{})
	ctx := context.Background()
	_, err := in.start(ctx, "warm") // the workflow's version is saved
	require.NoError(t, err)
	require.GreaterOrEqual(t, queue.StartWriters(), 2)
	hold := in.holdRuns(t)
	var wg sync.WaitGroup
	var ids []string
	errs := make([]error, 2*queue.StartsAbreast)
	begin := func(id string) {
		i := len(ids)
		ids = append(ids, id)
		wg.Go(func() { _, errs[i] = in.start(ctx, id) })
	}
	waitFor := func(waiting, writing int, msg string) {
		t.Helper()
		require.Eventually(t, func() bool {
			n, w := in.starter.StartsWaiting()
			return n == waiting && w == writing
		}, time.Minute, time.Millisecond, msg)
	}
	begin("first")
	waitFor(0, 1, "the first start writes its own transaction")
	for i := range queue.StartsAbreast - 1 {
		begin(fmt.Sprintf("group%d", i))
	}
	waitFor(queue.StartsAbreast-1, 1, "fewer than StartsAbreast wait for the first transaction")
	begin("full")
	waitFor(0, 2, "StartsAbreast starts open their transaction beside the first")
	for i := range 3 {
		begin(fmt.Sprintf("after%d", i))
	}
	waitFor(3, 2, "the starts after the group wait again")
	require.NoError(t, hold.Rollback(ctx))
	wg.Wait()

	byTx := map[int64]int{}
	for i, id := range ids {
		require.NoError(t, errs[i], id)
		var xmin int64
		require.NoError(t, in.st.Pool().QueryRow(ctx, `SELECT xmin::text::bigint FROM runs WHERE id = $1`, id).Scan(&xmin))
		byTx[xmin]++
	}
	sizes := slices.Sorted(maps.Values(byTx))
	require.Equal(t, []int{1, 3, queue.StartsAbreast}, sizes, "the runs of each transaction")
}

// TestManyStartsAtOnce: 400 runs started from 50 goroutines at once, with
// a second delivery of each goroutine's first run among them, are each
// recorded once with the jobs of their first nodes; each second delivery
// fails alone.
func TestManyStartsAtOnce(t *testing.T) {
	t.Parallel()
	in := setupIntake(t, postgres.Options{})
	ctx := context.Background()
	const goroutines, each = 50, 8
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each*2)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("many%d-%d", g, i)
				if _, err := in.start(ctx, id); err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
				}
				if i == 0 {
					if _, err := in.start(ctx, id); !errors.Is(err, store.ErrExists) {
						errs <- fmt.Errorf("%s delivered again: %v, want ErrExists", id, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var runs, jobs int
	pool := in.st.Pool()
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM runs WHERE id LIKE 'many%'`).Scan(&runs))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE args->>'run' LIKE 'many%'`).Scan(&jobs))
	require.Equal(t, [2]int{goroutines * each, 2 * goroutines * each}, [2]int{runs, jobs}, "runs, and their jobs")
}

// BenchmarkIntake starts runs of a webhook workflow on the queue, from 50
// goroutines, with no worker: the intake's own cost (CPU and round trips
// to the database).
func BenchmarkIntake(b *testing.B) {
	ctx := context.Background()
	in := setupIntake(b, postgres.Options{MaxConns: 16})
	var n atomic.Int64
	b.SetParallelism(25) // 50 goroutines on 2 CPUs
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := in.start(ctx, fmt.Sprintf("b%d", n.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
