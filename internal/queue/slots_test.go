package queue_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// TestSlotIsFreeWhileItsNodeIsRecorded: a worker of one slot runs the
// next node while the outcome of the one before is still being recorded.
// Run 1's row is locked (as a slow transaction of another worker would
// hold it) when its node ends, so its outcome cannot be written; run 2's
// node still runs on the slot its node left, and both runs complete once
// the lock goes.
func TestSlotIsFreeWhileItsNodeIsRecorded(t *testing.T) {
	t.Parallel()
	b := setupWith(t, pgtest.URL(t), 1, func(c *queue.Config) {
		if c.Queues != nil {
			c.Queues = map[string]int{queue.DefaultQueue: 1}
		}
	})
	ctx := t.Context()
	flow := func(name string) string {
		return "version: 1\nname: " + name + "\nnodes:\n  - {id: g, type: gated}\n"
	}
	r1 := fmt.Sprintf("slot1-%d", time.Now().UnixNano())
	g1 := gateOf(r1, "g")
	b.startWith(t, r1, flow("first"), nil)
	<-g1.started

	// Run 1's row locked: its node's outcome waits to be written.
	lock, err := b.st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(context.WithoutCancel(ctx)) }()
	_, err = lock.Exec(ctx, `SELECT 1 FROM runs WHERE id = $1 FOR UPDATE`, r1)
	require.NoError(t, err)

	r2 := fmt.Sprintf("slot2-%d", time.Now().UnixNano())
	g2 := gateOf(r2, "g")
	g2.release()
	b.startWith(t, r2, flow("second"), nil)
	g1.release()
	select {
	case <-g2.started:
	case <-ctx.Done():
		t.Fatal("run 2's node never ran while run 1's outcome was being recorded: the slot was held by the recording")
	}
	require.NoError(t, lock.Rollback(ctx))
	require.Equal(t, "completed", string(b.wait(t, r1).Status))
	require.Equal(t, "completed", string(b.wait(t, r2).Status))
}

// TestSlotsBoundTheNodesRunningAtOnce: a worker holds more jobs than its
// queue has slots (those being recorded), but no more nodes run at once
// than the queue's concurrency.
func TestSlotsBoundTheNodesRunningAtOnce(t *testing.T) {
	t.Parallel()
	const slots, width = 3, 12
	var (
		mu        sync.Mutex
		now, most int
		full      = make(chan struct{})
		fullOnce  sync.Once
	)
	exec := func(ctx context.Context, _ string, _ *engine.Task) engine.Outcome {
		mu.Lock()
		now++
		most = max(most, now)
		if now == slots {
			fullOnce.Do(func() { close(full) })
		}
		mu.Unlock()
		// Each node runs until the slots were all busy once, so a bound
		// that let a fourth in would be seen.
		select {
		case <-full:
		case <-ctx.Done():
		}
		mu.Lock()
		now--
		mu.Unlock()
		return engine.Outcome{Output: map[string]any{"ok": true}}
	}
	b := setupWith(t, pgtest.URL(t), 1, func(c *queue.Config) {
		if c.Queues != nil {
			c.Queues = map[string]int{queue.DefaultQueue: slots}
			c.Exec = exec
		}
	})
	var src strings.Builder
	src.WriteString("version: 1\nname: wide\nnodes:\n")
	for i := range width {
		fmt.Fprintf(&src, "  - {id: n%d, type: nap, ms: 0}\n", i)
	}
	run := b.start(t, src.String(), nil)
	require.Equal(t, "completed", string(b.wait(t, run.ID).Status))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, slots, most, "nodes running at once")
}

// TestFanOutLoadsItsWorkflowOnce: the first nodes of a wide fan-out reach
// a worker together, and each needs the run's workflow; the worker reads
// and parses it once, not once per job.
func TestFanOutLoadsItsWorkflowOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	trace := &statements{}
	st, err := postgres.OpenWithOptions(context.Background(), b.url, postgres.Options{Tracer: trace})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	b.work(t, queue.Config{Store: st, Queues: map[string]int{queue.DefaultQueue: 8}, Poll: time.Minute, FetchPoll: 50 * time.Millisecond})

	run := b.start(t, fanOutFlow(40), nil)
	require.Equal(t, "completed", string(b.wait(t, run.ID).Status))
	trace.mu.Lock()
	defer trace.mu.Unlock()
	reads := 0
	for _, q := range trace.sql {
		if strings.Contains(q, " FROM workflows WHERE name = $1 AND version = $2") {
			reads++
		}
	}
	require.Equal(t, 1, reads, "the worker read the run's workflow %d times", reads)
}

// TestStoppedWorkerLeavesItsWaitingNodeToAnother: a node marked running
// that waits for a slot when its worker's drain runs out goes back to the
// queue as the running node does, recording nothing: another worker runs
// it, its attempt count unchanged.
func TestStoppedWorkerLeavesItsWaitingNodeToAnother(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	ctx := context.Background()
	stop := b.brieflyDraining(t)

	// The one slot is held by run 1's blocker; run 2's node is marked
	// running and waits for it.
	id := fmt.Sprintf("w%d", time.Now().UnixNano())
	bl := &blocker{started: make(chan struct{})}
	blockers.Store(id, bl)
	held := b.startWith(t, id, "version: 1\nname: block\nnodes:\n  - {id: hold, type: blocker}\n", nil)
	<-bl.started
	waiting := b.start(t, "version: 1\nname: waits\nnodes:\n  - {id: next, type: nap, ms: 0}\n", nil)
	require.Eventually(t, func() bool {
		return string(b.steps(t, waiting.ID)["next"][0].Status) == "running"
	}, time.Minute, 10*time.Millisecond, "run 2's node was not marked running")
	require.NoError(t, stop())
	steps := b.steps(t, waiting.ID)
	require.Equal(t, "pending", string(steps["next"][0].Status), "the waiting node went back to the queue, recording nothing")

	_, err := b.st.Pool().Exec(ctx, `UPDATE river_job SET scheduled_at = now(), state = 'available' WHERE state = 'retryable'`)
	require.NoError(t, err)
	b.work(t, queue.Config{Queues: map[string]int{queue.DefaultQueue: 2}, Poll: 20 * time.Millisecond, FetchPoll: 20 * time.Millisecond})
	for _, id := range []string{held.ID, waiting.ID} {
		end := b.wait(t, id)
		require.Equal(t, "completed", string(end.Status), "%v", end.Error)
	}
	steps = b.steps(t, waiting.ID)
	require.Equal(t, 1, steps["next"][0].Attempts, "the node's own attempt count is unchanged")
}

// TestReleasedJobsAreAnnounced: the jobs a transaction inserts are
// announced on River's insert topic, so a worker fetches them at once:
// with River's poll an hour, the branches of a fan-out that no worker
// took by local continuation still run, and so do runs started while the
// worker waits. (The first run is started before the worker: River's
// producer fetches once as it starts.)
func TestReleasedJobsAreAnnounced(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	first := b.start(t, fanOutFlow(6), nil)
	b.work(t, queue.Config{Queues: map[string]int{queue.DefaultQueue: 4}, Poll: time.Minute, FetchPoll: time.Hour})
	end := b.wait(t, first.ID)
	require.Equal(t, "completed", string(end.Status), "%v", end.Error)
	for range 3 {
		run := b.start(t, fanOutFlow(6), nil)
		end := b.wait(t, run.ID)
		require.Equal(t, "completed", string(end.Status), "%v", end.Error)
	}
}
