package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
)

// slotLog records what a run records, in order, and tells each step
// record as it comes.
type slotLog struct {
	mu     sync.Mutex
	steps  []engine.StepRecord
	events []engine.TimedEvent
	step   chan engine.StepRecord
}

func newSlotLog() *slotLog { return &slotLog{step: make(chan engine.StepRecord, 256)} }

func (l *slotLog) Step(rec *engine.StepRecord) error {
	l.mu.Lock()
	l.steps = append(l.steps, *rec)
	l.mu.Unlock()
	l.step <- *rec
	return nil
}

func (l *slotLog) Event(ev engine.TimedEvent) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
	return nil
}

// last returns the latest record of node's step.
func (l *slotLog) last(node string) engine.StepRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out engine.StepRecord
	for _, s := range l.steps {
		if s.Node == node {
			out = s
		}
	}
	return out
}

// startedNodes lists the nodes of node_started events, in order.
func (l *slotLog) startedNodes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, ev := range l.events {
		if ev.Type == engine.EventNodeStarted && ev.Node != "start" {
			out = append(out, ev.Node)
		}
	}
	return out
}

// await waits for a record of node with status st.
func (l *slotLog) await(t *testing.T, node string, st engine.Status) engine.StepRecord {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case rec := <-l.step:
			if rec.Node == node && rec.Status == st {
				return rec
			}
		case <-deadline:
			t.Fatalf("no %s record of %s", st, node)
		}
	}
}

const twoBlocks = `
  - {id: start, type: trigger.manual}
  - {id: a, type: block}
  - {id: b, type: block}
`

const twoBlockEdges = `
  - {from: start, to: a}
  - {from: start, to: b}
`

// A node waiting for a concurrency slot is pending, not running: no
// node_started event, no start time, until it gets one (DESIGN §2.7).
func TestDriverSlotWaitIsPending(t *testing.T) {
	t.Parallel()
	b := setupDriver(t, wf(twoBlocks, twoBlockEdges))
	log := newSlotLog()
	done := b.execute(context.Background(), engine.Options{Concurrency: 1, Host: engine.Host{Recorder: log}})
	first := b.started(1)[0]
	second := map[string]string{"a": "b", "b": "a"}[first]

	require.Equal(t, engine.StatusRunning, log.last(first).Status)
	queued := log.last(second)
	require.Equal(t, engine.StatusPending, queued.Status, "%s waits for the slot %s holds", second, first)
	require.Nil(t, queued.StartedAt)
	require.Equal(t, []string{first}, log.startedNodes(), "only the node that runs has started")

	b.clk.Advance(5 * time.Second)
	b.gates.open(first)
	running := log.await(t, second, engine.StatusRunning)
	require.Equal(t, b.clk.Now(), *running.StartedAt, "it starts when it gets the slot")
	b.gates.open(second)
	res := result(t, done)
	require.Equal(t, engine.RunCompleted, res.Status, "%v", res.Error)
	require.Equal(t, []string{first, second}, log.startedNodes())
}

// Cancelling a run cancels the nodes waiting for a slot: they never start.
func TestDriverCancelSkipsQueued(t *testing.T) {
	t.Parallel()
	b := setupDriver(t, wf(twoBlocks, twoBlockEdges))
	log := newSlotLog()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := b.execute(ctx, engine.Options{Concurrency: 1, Host: engine.Host{Recorder: log}, CancelGrace: time.Hour})
	first := b.started(1)[0]
	second := map[string]string{"a": "b", "b": "a"}[first]
	cancel()
	log.await(t, second, engine.StatusCancelled)
	b.gates.open(first) // the running node finishes
	res := result(t, done)
	require.Equal(t, engine.RunCancelled, res.Status)
	require.Equal(t, engine.StatusSuccess, stepsOf(res, first)[0].Status)
	require.Equal(t, engine.StatusCancelled, stepsOf(res, second)[0].Status)
	require.Nil(t, stepsOf(res, second)[0].StartedAt)
	require.Equal(t, []string{first}, log.startedNodes(), "%s never started", second)
}

// A failed attempt that will be tried again is marked so (a display shows
// one final mark per step), the retry event says how many attempts there
// are, and a foreach item's steps carry their item's index.
func TestDriverRecordsForDisplays(t *testing.T) {
	t.Parallel()
	b := setupDriver(t, `
version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: work, type: act, fail: 1, retries: 2, retry_backoff: 1ms}
  - {id: each, type: foreach, items: "{{ ['a', 'b'] }}", concurrency: 1}
  - {id: sq, type: act}
  - {id: eend, type: endloop, loop: each}
edges:
  - {from: start, to: work}
  - {from: work, to: each}
  - {from: each, to: sq, on: body}
  - {from: sq, to: eend}
`)
	log := newSlotLog()
	done := b.execute(context.Background(), engine.Options{Host: engine.Host{Recorder: log}})
	b.waitTimer() // the retry's backoff, on the fake clock
	b.clk.Advance(time.Second)
	res := result(t, done)
	require.Equal(t, engine.RunCompleted, res.Status, "%v", res.Error)

	var work []engine.StepRecord
	for _, s := range log.steps {
		if s.Node == "work" && s.Status != engine.StatusRunning && s.Status != engine.StatusPending {
			work = append(work, s)
		}
	}
	require.Len(t, work, 2)
	require.Equal(t, engine.StatusFailed, work[0].Status)
	require.True(t, work[0].Retry, "the first attempt is retried")
	require.Equal(t, engine.StatusSuccess, work[1].Status)
	require.False(t, work[1].Retry)
	for _, ev := range log.events {
		if ev.Type == engine.EventRetry {
			require.Equal(t, 2, ev.Data["attempt"])
			require.Equal(t, 3, ev.Data["max_attempts"])
		}
	}
	var items []any
	for _, s := range stepsOf(res, "sq") {
		items = append(items, s.Loop["index"])
	}
	require.Equal(t, []any{0, 1}, items)
}
