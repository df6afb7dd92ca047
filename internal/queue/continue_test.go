package queue_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	skeinproc "github.com/skeinhq/skein/internal/proc"
	"github.com/skeinhq/skein/internal/queue"
)

// TestChainContinuesOnItsWorker: a node that releases the next node of
// its run onto a queue its worker works has that worker take the next
// node's job in the transaction that records it, and run it next: every
// node after the first ran on that worker without a fetch, and every job
// of the run, the first (River's) too, is gone once its node is recorded.
func TestChainContinuesOnItsWorker(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	d := b.work(t, queue.Config{Queues: map[string]int{queue.DefaultQueue: 2}, Poll: 50 * time.Millisecond, FetchPoll: 50 * time.Millisecond})

	run := b.start(t, `version: 1
name: chain
nodes:
  - {id: a, type: set, values: {n: 1}}
  - {id: b, type: shell, command: [echo, hi]}
  - {id: c, type: shell, command: [echo, "{{ a.n + 1 }}"]}
  - {id: d, type: set, values: {n: "{{ int(trim(c.stdout)) + 1 }}"}}
edges:
  - {from: a, to: b}
  - {from: b, to: c}
  - {from: c, to: d}
`, nil)
	end := b.wait(t, run.ID)
	require.Equal(t, "completed", string(end.Status), "%v", end.Error)
	require.EqualValues(t, 3, b.steps(t, run.ID)["d"][0].Output["n"])
	require.EqualValues(t, 2, d.Continued(), "the shell nodes after the first were taken by local continuation")
	require.EqualValues(t, 1, d.Inlined(), "the pure node after them ran in the transaction that recorded c (pure.go)")

	// Every job of the run is gone once its node is recorded: those the
	// worker took, and the first, River's, which its transaction deleted
	// before River's own completion came to it.
	require.Empty(t, b.continuedBy(t, run.ID), "a job of the run is left")
	worker := ""
	steps := b.steps(t, run.ID)
	for _, n := range []string{"a", "b", "c", "d"} {
		require.NotNil(t, steps[n][0].RanOn, "node %s", n)
		if worker == "" {
			worker = steps[n][0].RanOn.Worker
		}
		require.Equal(t, worker, steps[n][0].RanOn.Worker, "node %s ran on the worker that took it", n)
		require.Equal(t, 1, steps[n][0].Attempts)
	}
}

// TestContinuedNodeBeginsWhereItWasTaken: the transaction that records a
// node and takes the next one's job also marks that node running, so the
// node runs right after the COMMIT, with no transaction of its own before
// it: its node_started commits with the node_finished before it (one
// transaction id), and its step is running, attempt 1, on the worker.
func TestContinuedNodeBeginsWhereItWasTaken(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	ctx := context.Background()
	d := b.work(t, queue.Config{Queues: map[string]int{queue.DefaultQueue: 2}, Poll: 50 * time.Millisecond, FetchPoll: 50 * time.Millisecond})

	run := b.start(t, `version: 1
name: chain
nodes:
  - {id: a, type: shell, command: [echo, "1"]}
  - {id: b, type: shell, command: [echo, "{{ int(trim(a.stdout)) + 1 }}"]}
  - {id: c, type: shell, command: [echo, "{{ int(trim(b.stdout)) + 1 }}"]}
edges:
  - {from: a, to: b}
  - {from: b, to: c}
`, nil)
	end := b.wait(t, run.ID)
	require.Equal(t, "completed", string(end.Status), "%v", end.Error)
	require.EqualValues(t, 2, d.Continued())
	txOf := func(typ, node string) string {
		var xid string
		require.NoError(t, b.st.Pool().QueryRow(ctx, `SELECT xmin::text FROM events WHERE run_id = $1 AND type = $2 AND node = $3`,
			run.ID, typ, node).Scan(&xid))
		return xid
	}
	for _, p := range [][2]string{{"a", "b"}, {"b", "c"}} {
		require.Equal(t, txOf("node_finished", p[0]), txOf("node_started", p[1]),
			"%s was marked running in the transaction that recorded %s and took its job", p[1], p[0])
	}
	require.NotEqual(t, txOf("node_finished", "a"), txOf("node_started", "a"),
		"a, a job River handed out, was marked running in a transaction of its own")
	steps := b.steps(t, run.ID)
	require.Equal(t, "3", strings.TrimSpace(fmt.Sprint(steps["c"][0].Output["stdout"])))
	for _, n := range []string{"b", "c"} {
		require.Equal(t, 1, steps[n][0].Attempts, "node %s", n)
		require.Equal(t, steps["a"][0].RanOn.Worker, steps[n][0].RanOn.Worker, "node %s ran on the worker that took it", n)
		require.Len(t, eventsOf(t, b, run.ID, engine.EventNodeStarted, n), 1, "node %s started once", n)
	}
}

// TestContinuationStaysInItsQueues: a node released onto a queue its
// worker does not work goes to a worker of that queue, through River.
func TestContinuationStaysInItsQueues(t *testing.T) {
	t.Parallel()
	b := setup(t, 1, "other")
	ctx := context.Background()
	d := b.work(t, queue.Config{Queues: map[string]int{queue.DefaultQueue: 2}, Poll: 50 * time.Millisecond, FetchPoll: 50 * time.Millisecond})

	run := b.start(t, `version: 1
name: hops
nodes:
  - {id: a, type: set, values: {n: 1}}
  - {id: b, type: set, values: {n: 2}, queue: other}
  - {id: c, type: set, values: {n: 3}}
edges:
  - {from: a, to: b}
  - {from: b, to: c}
`, nil)
	end := b.wait(t, run.ID)
	require.Equal(t, "completed", string(end.Status), "%v", end.Error)
	steps := b.steps(t, run.ID)
	require.NotEqual(t, steps["a"][0].RanOn.Worker, steps["b"][0].RanOn.Worker, "b ran on the worker of its queue")
	var taken int
	require.NoError(t, b.st.Pool().QueryRow(ctx, `SELECT count(*) FROM river_job WHERE args->>'run' = $1 AND args->>'node' = 'b'
		AND metadata ? 'continued_by'`, run.ID).Scan(&taken))
	require.Zero(t, taken, "no worker took b by local continuation")
	require.Zero(t, d.Continued(), "a's worker took nothing of the other queue, and c was released on the other worker")
}

// continuedBy returns, per node of a run whose job is left, the worker
// that took its job by local continuation ("" for a job fetched from the
// queue). A node's job is deleted once the node is recorded.
func (b *bundle) continuedBy(t *testing.T, runID string) map[string]string {
	t.Helper()
	rows, err := b.st.Pool().Query(context.Background(), `SELECT args->>'node', COALESCE(metadata->>'continued_by', '')
		FROM river_job WHERE kind = 'skein_task' AND args->>'run' = $1`, runID)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var n, by string
		require.NoError(t, rows.Scan(&n, &by))
		out[n] = by
	}
	require.NoError(t, rows.Err())
	return out
}

// TestFanOutContinuesOneBranch: a node that releases several nodes onto
// its worker's queue takes one of them; the others go to the queue, for
// any worker, and the join after them fires once.
func TestFanOutContinuesOneBranch(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	d := b.work(t, queue.Config{Queues: map[string]int{queue.DefaultQueue: 4}, Poll: 50 * time.Millisecond, FetchPoll: 50 * time.Millisecond})
	run := b.start(t, `version: 1
name: fan
nodes:
  - {id: a, type: set, values: {n: 1}}
  - {id: b0, type: shell, command: [echo, "0"]}
  - {id: b1, type: shell, command: [echo, "1"]}
  - {id: b2, type: shell, command: [echo, "2"]}
  - {id: join, type: merge}
  - {id: total, type: set, values: {n: "{{ len(join.inputs) }}"}}
edges:
  - {from: a, to: b0}
  - {from: a, to: b1}
  - {from: a, to: b2}
  - {from: b0, to: join}
  - {from: b1, to: join}
  - {from: b2, to: join}
  - {from: join, to: total}
`, nil)
	end := b.wait(t, run.ID)
	require.Equal(t, "completed", string(end.Status), "%v", end.Error)
	require.EqualValues(t, 3, b.steps(t, run.ID)["total"][0].Output["n"])
	require.Len(t, eventsOf(t, b, run.ID, "node_started", "join"), 1, "the join started once")
	// a's worker took one branch; the two others it fetched from the
	// queue, each once.
	require.EqualValues(t, 1, d.Continued(), "a took one of its three branches")
	for _, n := range []string{"b0", "b1", "b2"} {
		require.Len(t, eventsOf(t, b, run.ID, engine.EventNodeStarted, n), 1, "branch %s started once", n)
	}
	require.Empty(t, b.continuedBy(t, run.ID), "a job of the run is left")
}

// TestCancelStopsAContinuedNode: a cancel that stops running nodes stops
// one its worker took by local continuation, as any other: the step is
// cancelled, the node after it never starts, and no job of the run is
// left running.
func TestCancelStopsAContinuedNode(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	pidFile := filepath.Join(t.TempDir(), "pid")
	run := b.start(t, fmt.Sprintf(`version: 1
name: sleeper
nodes:
  - {id: first, type: set, values: {x: 1}}
  - {id: slow, type: shell, command: [sh, -c, 'echo $$ > %s; sleep 300']}
  - {id: after, type: set, values: {x: 2}}
edges:
  - {from: first, to: slow}
  - {from: slow, to: after}
`, pidFile), nil)
	pid := pidOf(t, pidFile)
	require.NotEmpty(t, b.continuedBy(t, run.ID)["slow"], "slow was taken by local continuation")

	_, err := b.st.RequestCancel(context.Background(), run.ID, false)
	require.NoError(t, err)
	require.NoError(t, b.starter.Cancel(context.Background(), run.ID))
	done := b.wait(t, run.ID)
	require.Equal(t, "cancelled", string(done.Status))
	require.Eventually(t, func() bool { return !skeinproc.Alive(pid) }, 60*time.Second, 10*time.Millisecond, "the node's process outlived the cancel")
	steps := b.steps(t, run.ID)
	require.Equal(t, "cancelled", string(steps["slow"][0].Status), "the running node was stopped")
	require.Equal(t, "cancelled", string(steps["after"][0].Status), "never started because of the cancel")
	require.Nil(t, steps["after"][0].RanOn, "it ran nowhere")
	require.Eventually(t, func() bool { return b.available(t, run.ID) == 0 }, 60*time.Second, 10*time.Millisecond,
		"a job of the run is left")
}

// TestFollowSeesTheEndWhenItIsCommitted: the worker that records a queued
// run's end notifies it once committed, so whoever follows the run (skein
// run, the server) learns of it then, not at its next look at the run:
// here the follower looks once an hour, and still returns with the run
// completed.
func TestFollowSeesTheEndWhenItIsCommitted(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	l := newLedger(t)
	run := b.start(t, fmt.Sprintf(`version: 1
name: held
nodes:
  - {id: hold, type: http, method: POST, url: "%s/held"}
  - {id: after, type: set, values: {n: 1}}
edges:
  - {from: hold, to: after}
`, l.URL), nil)
	recv(t, l.held, "the held node's call")
	looked := make(chan struct{})
	var once sync.Once
	f := queue.Follow{Store: b.st, Registry: b.reg, RunID: run.ID, Every: time.Hour,
		Step: func(engine.StepRecord) { once.Do(func() { close(looked) }) }}
	followed := make(chan *queue.Followed, 1)
	go func() {
		out, err := f.Run(t.Context())
		assert.NoError(t, err)
		followed <- out
	}()
	<-looked // the follower listens, and has looked at the run once
	l.Release()
	out := <-followed
	require.True(t, out.Ended)
	require.Equal(t, "completed", string(out.Run.Status))
}
