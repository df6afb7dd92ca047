package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
)

// waitWatch is a recorder that tells when a step begins to wait.
type waitWatch struct {
	mu      sync.Mutex
	waiting chan string
	steps   map[string]engine.StepRecord
	changed chan struct{} // a step was recorded
}

func newWaitWatch() *waitWatch {
	return &waitWatch{waiting: make(chan string, 16), steps: map[string]engine.StepRecord{}, changed: make(chan struct{}, 1)}
}

// status waits until node's step is recorded with status.
func (w *waitWatch) status(t *testing.T, node string, status engine.Status) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		w.mu.Lock()
		got := w.steps[node].Status
		w.mu.Unlock()
		if got == status {
			return
		}
		select {
		case <-w.changed:
		case <-deadline:
			t.Fatalf("%s was not recorded %s (last: %s)", node, status, got)
		}
	}
}

func (w *waitWatch) Step(rec *engine.StepRecord) error {
	w.mu.Lock()
	prev := w.steps[rec.Node]
	w.steps[rec.Node] = *rec
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
	if rec.Status == engine.StatusWaiting && prev.Status != engine.StatusWaiting {
		w.waiting <- rec.Node
	}
	return nil
}

func (w *waitWatch) Event(engine.TimedEvent) error { return nil }

func (w *waitWatch) await(t *testing.T, node string) {
	t.Helper()
	select {
	case got := <-w.waiting:
		require.Equal(t, node, got)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not begin to wait", node)
	}
}

// TestDriverSignals runs waits for signals through the local driver on a
// fake clock.
func TestDriverSignals(t *testing.T) {
	t.Parallel()

	t.Run("a signal that arrives while the run waits", func(t *testing.T) {
		t.Parallel()
		b := setupDriver(t, approval)
		sigs := make(chan engine.Signal, 1)
		w := newWaitWatch()
		done := b.execute(context.Background(), engine.Options{SignalCh: sigs, Host: engine.Host{Recorder: w}})
		w.await(t, "approve")
		sigs <- engine.Signal{Node: "approve", Visit: 1, Data: map[string]any{"by": "Ada"}, At: b.clk.Now()}
		res := result(t, done)
		require.Equal(t, engine.RunCompleted, res.Status, "%v", res.Error)
		require.Equal(t, "Ada", stepsOf(res, "send")[0].Output["by"])
		approve := stepsOf(res, "approve")[0]
		require.Equal(t, engine.StatusSuccess, approve.Status)
		require.Equal(t, map[string]any{"by": "Ada"}, approve.Output["data"])
		wake := b.clk.Now().Add(time.Hour)
		require.Equal(t, &wake, approve.WakeAt, "the step keeps when its timeout was due")
		require.Equal(t, engine.StatusSkipped, stepsOf(res, "expired")[0].Status)
	})

	t.Run("the timeout passes first", func(t *testing.T) {
		t.Parallel()
		b := setupDriver(t, approval)
		w := newWaitWatch()
		done := b.execute(context.Background(), engine.Options{Host: engine.Host{Recorder: w}})
		w.await(t, "approve")
		b.waitTimer()
		b.clk.Advance(time.Hour)
		res := result(t, done)
		require.Equal(t, engine.RunCompleted, res.Status)
		require.Equal(t, true, stepsOf(res, "approve")[0].Output["timed_out"])
		require.Equal(t, engine.StatusSuccess, stepsOf(res, "expired")[0].Status)
		require.Equal(t, engine.StatusSkipped, stepsOf(res, "send")[0].Status)
	})

	t.Run("parked, then resumed with the signal recorded meanwhile", func(t *testing.T) {
		t.Parallel()
		b := setupDriver(t, approval)
		start := b.clk.Now()
		res := result(t, b.execute(context.Background(), engine.Options{Park: &engine.Park{After: time.Minute}}))
		require.Equal(t, engine.RunWaiting, res.Status, "nothing runs and approve waits an hour: the execution ends")
		require.Equal(t, []engine.Await{{Node: "approve", Index: 2, Visit: 1, Signal: "approve", Task: res.Awaiting[0].Task}}, res.Awaiting)
		wake := start.Add(time.Hour)
		require.Equal(t, &wake, res.WakeAt)
		approve := stepsOf(res, "approve")[0]
		require.Equal(t, engine.StatusWaiting, approve.Status)
		require.Equal(t, &wake, approve.WakeAt)
		send := stepsOf(res, "send")
		require.Len(t, send, 1, "the step after the wait is planned")
		require.Equal(t, engine.StatusPending, send[0].Status, "nothing after the wait ran")
		require.Nil(t, send[0].StartedAt)
		require.Zero(t, b.clk.Pending(), "no timer is left behind")

		// The resume: the signal came 10 minutes in, within the timeout.
		b.clk.Advance(30 * time.Minute)
		wakes := func(node string, visit int, hash string) (time.Time, bool) {
			return wake, node == "approve" && visit == 1 && hash == approve.ConfigHash
		}
		res = result(t, b.execute(context.Background(), engine.Options{
			Park: &engine.Park{After: time.Minute}, Wakes: wakes,
			Signals: []engine.Signal{{Node: "approve", Visit: 1, Data: map[string]any{"by": "Bo"}, At: start.Add(10 * time.Minute)}},
		}))
		require.Equal(t, engine.RunCompleted, res.Status, "%v", res.Error)
		require.Equal(t, "Bo", stepsOf(res, "send")[0].Output["by"])
		require.Equal(t, start.Add(10*time.Minute).Format(time.RFC3339Nano), stepsOf(res, "approve")[0].Output["signaled_at"])
	})

	t.Run("a signal sent after the timeout is too late", func(t *testing.T) {
		t.Parallel()
		b := setupDriver(t, approval)
		start := b.clk.Now()
		b.clk.Advance(2 * time.Hour)
		hash := ""
		wakes := func(node string, visit int, h string) (time.Time, bool) {
			hash = h
			return start.Add(time.Hour), node == "approve"
		}
		done := b.execute(context.Background(), engine.Options{
			Wakes:   wakes,
			Signals: []engine.Signal{{Node: "approve", Visit: 1, Data: "late", At: start.Add(61 * time.Minute)}},
		})
		b.waitTimer()
		b.clk.Advance(0) // the timeout was due an hour ago
		res := result(t, done)
		require.NotEmpty(t, hash)
		require.Equal(t, engine.RunCompleted, res.Status)
		require.Equal(t, true, stepsOf(res, "approve")[0].Output["timed_out"], "the timeout was due first")
		require.Equal(t, engine.StatusSuccess, stepsOf(res, "expired")[0].Status)
	})

	t.Run("a resumed timer keeps its wake-up time", func(t *testing.T) {
		t.Parallel()
		b := setupDriver(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: pause, type: wait, duration: 2h}
  - {id: after, type: act}
`, `
  - {from: start, to: pause}
  - {from: pause, to: after}
`))
		start := b.clk.Now()
		res := result(t, b.execute(context.Background(), engine.Options{Park: &engine.Park{After: time.Minute}}))
		require.Equal(t, engine.RunWaiting, res.Status)
		require.Empty(t, res.Awaiting)
		wake := start.Add(2 * time.Hour)
		require.Equal(t, &wake, res.WakeAt)

		b.clk.Advance(90 * time.Minute)
		hash := stepsOf(res, "pause")[0].ConfigHash
		done := b.execute(context.Background(), engine.Options{Wakes: func(node string, visit int, h string) (time.Time, bool) {
			return wake, node == "pause" && visit == 1 && h == hash
		}})
		b.waitTimer()
		b.clk.Advance(30*time.Minute - time.Millisecond)
		require.Equal(t, 1, b.clk.Pending(), "the wait ends when it was due, not two hours on")
		b.clk.Advance(time.Millisecond)
		res = result(t, done)
		require.Equal(t, engine.RunCompleted, res.Status)
		require.Equal(t, &wake, stepsOf(res, "pause")[0].WakeAt)
	})

	t.Run("what parks and what is held", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name  string
			nodes string
			park  engine.Park
			parks bool
		}{
			{"a signal without timeout parks", `{id: w, type: wait, until: signal}`, engine.Park{After: time.Minute}, true},
			{"a short timeout is held", `{id: w, type: wait, until: signal, timeout: 30s}`, engine.Park{After: time.Minute}, false},
			{"a long timer parks", `{id: w, type: wait, duration: 1h}`, engine.Park{After: time.Minute}, true},
			{"a long timer is held when only signals park", `{id: w, type: wait, duration: 1h}`, engine.Park{After: time.Minute, SignalsOnly: true}, false},
			{"a long timeout parks when only signals park", `{id: w, type: wait, until: signal, timeout: 1h}`, engine.Park{After: time.Minute, SignalsOnly: true}, true},
			{"_delay_seconds parks", `{id: w, type: act, delay: 7200}`, engine.Park{After: time.Minute}, true},
			{"a retry is held", `{id: w, type: act, fail: 1, retries: 1, retry_backoff: 1h}`, engine.Park{After: time.Minute}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				b := setupDriver(t, wf(`
  - {id: start, type: trigger.manual}
  - `+tc.nodes+`
`, `
  - {from: start, to: w}
`))
				park := tc.park
				w := newWaitWatch()
				done := b.execute(context.Background(), engine.Options{Park: &park, Host: engine.Host{Recorder: w}})
				if tc.parks {
					require.Equal(t, engine.RunWaiting, result(t, done).Status)
					return
				}
				b.waitTimer()
				select {
				case res := <-done:
					t.Fatalf("the run ended %s: it should be held", res.Status)
				default:
				}
				b.clk.Advance(2 * time.Hour)
				require.Equal(t, engine.RunCompleted, result(t, done).Status)
			})
		}
	})
}

// TestDriverLeave: when the process stops (Options.Leave), a run that
// only waits ends waiting, whatever the time left; one with a task running
// is cancelled, for its caller to leave it interrupted.
func TestDriverLeave(t *testing.T) {
	t.Parallel()
	t.Run("a run that only waits ends waiting", func(t *testing.T) {
		t.Parallel()
		b := setupDriver(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: pause, type: wait, duration: 5s}
  - {id: after, type: act}
`, `
  - {from: start, to: pause}
  - {from: pause, to: after}
`))
		leave := make(chan struct{})
		w := newWaitWatch()
		done := b.execute(context.Background(), engine.Options{Leave: leave, Host: engine.Host{Recorder: w}})
		w.await(t, "pause")
		close(leave)
		res := result(t, done)
		require.Equal(t, engine.RunWaiting, res.Status)
		wake := b.clk.Now().Add(5 * time.Second)
		require.Equal(t, &wake, res.WakeAt)
	})
	t.Run("a run with a task running is cancelled", func(t *testing.T) {
		t.Parallel()
		b := setupDriver(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: pause, type: wait, duration: 5s}
  - {id: busy, type: block}
`, `
  - {from: start, to: pause}
  - {from: start, to: busy}
`))
		leave := make(chan struct{})
		w := newWaitWatch()
		done := b.execute(context.Background(), engine.Options{Leave: leave, Host: engine.Host{Recorder: w}})
		b.started(1)
		close(leave)
		// busy is let go once the run is cancelled: let go before, it
		// could end first, and the run would then only wait.
		w.status(t, "pause", engine.StatusCancelled)
		b.gates.open("busy")
		res := result(t, done)
		require.Equal(t, engine.RunCancelled, res.Status)
		require.Equal(t, engine.StatusCancelled, stepsOf(res, "pause")[0].Status)
	})
}
