package queue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

func chainFlow(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: chain\nnodes:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {id: n%d, type: set, values: {i: %d}}\n", i, i)
	}
	b.WriteString("edges:\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  - {from: n%d, to: n%d}\n", i-1, i)
	}
	return b.String()
}

// benchWorkers starts `workers` in-process workers of concurrency 10 on a
// migrated store of the test database, for the benchmark's length.
func benchWorkers(b *testing.B, workers int) *bundle {
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.URL(b))
	require.NoError(b, err)
	b.Cleanup(func() { _ = st.Close() })
	_, err = queue.Migrate(ctx, st.Pool())
	require.NoError(b, err)
	reg := registry()
	for range workers {
		d, err := queue.New(queue.Config{Store: st, Registry: reg, Queues: map[string]int{queue.DefaultQueue: 10},
			FetchPoll: 50 * time.Millisecond})
		require.NoError(b, err)
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- d.Work(wctx, time.Second) }()
		b.Cleanup(func() { stop(); <-done })
	}
	starter, err := queue.New(queue.Config{Store: st, Registry: reg})
	require.NoError(b, err)
	return &bundle{st: st, reg: reg, starter: starter, dir: b.TempDir()}
}

// benchRun runs src through `workers` in-process workers b.N times and
// reports the time per node and the steps a second.
func benchRun(b *testing.B, src string, nodes, workers int) {
	ctx := context.Background()
	bd := benchWorkers(b, workers)
	starter := bd.starter
	b.ResetTimer()
	for range b.N {
		run := bd.startB(b, src)
		wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		end, err := starter.Wait(wctx, run, 5*time.Millisecond)
		cancel()
		require.NoError(b, err)
		require.Equal(b, "completed", string(end.Status))
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N*nodes), "ms/node")
	b.ReportMetric(float64(b.N*nodes)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkConcurrentRuns: 200 runs at once of a chain of 3 nodes of a
// kind with effects (each a job of its own: marked running, then
// recorded), through 2 workers of concurrency 10: the runs of a worker
// share its transactions (commit.go). Reports steps a second and the
// transactions that wrote a step: the transaction ids Postgres handed out
// meanwhile (a read-only transaction gets none; so does nothing else on a
// quiet server).
func BenchmarkConcurrentRuns(b *testing.B) {
	const runs, nodes = 200, 3
	ctx := context.Background()
	bd := benchWorkers(b, 2)
	st, starter := bd.st, bd.starter
	src := "version: 1\nname: three\nnodes:\n  - {id: a, type: nap, ms: 0}\n  - {id: b, type: nap, ms: 0}\n  - {id: c, type: nap, ms: 0}\n" +
		"edges:\n  - {from: a, to: b}\n  - {from: b, to: c}\n"
	xid := func() int64 {
		var n int64
		require.NoError(b, st.Pool().QueryRow(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&n))
		return n
	}
	var txs int64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		before := xid()
		b.StartTimer()
		ids := make([]string, runs)
		for i := range ids {
			ids[i] = bd.startWith(b, fmt.Sprintf("c%d-%d", time.Now().UnixNano(), i), src, nil).ID
		}
		for _, id := range ids {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			end, err := starter.Wait(wctx, id, 5*time.Millisecond)
			cancel()
			require.NoError(b, err)
			require.Equal(b, "completed", string(end.Status))
		}
		b.StopTimer()
		txs += xid() - before - 1
		b.StartTimer()
	}
	b.ReportMetric(float64(b.N*runs*nodes)/b.Elapsed().Seconds(), "steps/s")
	b.ReportMetric(float64(txs)/float64(b.N*runs*nodes), "writes/step")
}

// napFlow is a fan-out of n nodes that each take ms milliseconds of a
// worker, then a join.
func napFlow(n, ms int) string {
	var nodes, edges string
	for i := range n {
		nodes += fmt.Sprintf("  - {id: b%d, type: nap, ms: %d}\n", i, ms)
		edges += fmt.Sprintf("  - {from: start, to: b%d}\n  - {from: b%d, to: join}\n", i, i)
	}
	return fmt.Sprintf(fanOut, nodes, edges)
}

// BenchmarkFanOutWaits: 1,000 nodes that each take 20 ms, with 1 and 2
// workers of concurrency 10 (issue 14: 2 workers ≥ 1.7× the throughput of
// one). The workers share this process and the machine with Postgres.
func BenchmarkFanOutWaits(b *testing.B) {
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) { benchRun(b, napFlow(1000, 20), 1003, w) })
	}
}

// BenchmarkFanOutWorkers4: no-op fan-outs through 4 workers: steps a
// second, to compare with the SQLite store's in-process figure.
func BenchmarkFanOutWorkers4(b *testing.B) { benchRun(b, fanOutFlow(400), 403, 4) }

// BenchmarkChain: a chain of 400 set nodes through one worker. Set is a
// pure kind: the worker runs the nodes in the transactions that release
// them, 64 at most a transaction (pure.go), so this is the cost of a pure
// node, not of a job.
func BenchmarkChain(b *testing.B) { benchRun(b, chainFlow(400), 400, 1) }

// BenchmarkFanOut: 200 set nodes in parallel then a join, two workers.
func BenchmarkFanOut(b *testing.B) { benchRun(b, fanOutFlow(200), 203, 2) }
