package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
)

// approval is a step, a wait for a signal with a timeout, and a step that
// reads the signal's data, with another for the timeout.
var approval = wf(`
  - {id: start, type: trigger.manual}
  - {id: draft, type: act, out: {text: hello}}
  - {id: approve, type: wait, until: signal, timeout: 1h}
  - {id: send, type: act, out: {by: "{{ approve.data.by }}", text: "{{ draft.text }}"}}
  - {id: expired, type: act, out: {late: "{{ approve.timed_out }}"}}
`, `
  - {from: start, to: draft}
  - {from: draft, to: approve}
  - {from: approve, to: send}
  - {from: approve, to: expired, on: timeout}
`)

var signalAt = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// TestSchedulerSignals drives waits for signals through the pure
// scheduler: a signal ends the wait with its data; the timeout takes the
// timeout handle; a signal for a step that does not wait changes nothing;
// a cancel or a failure elsewhere stops the wait.
func TestSchedulerSignals(t *testing.T) {
	t.Parallel()

	// awaitApproval starts the approval run and finishes draft and
	// approve's task: approve waits.
	awaitApproval := func(t *testing.T) (*sim, engine.Timer) {
		t.Helper()
		s := newSim(t, approval)
		s.start("")
		s.finish("draft")
		a := s.finish("approve")
		require.Empty(t, a.Start, "nothing goes on while approve waits")
		require.False(t, a.Done)
		require.Equal(t, []engine.Await{{Node: "approve", Index: 2, Visit: 1, Signal: "approve", Task: a.Awaits[0].Task}}, a.Awaits)
		require.Equal(t, a.Awaits, s.run.Awaiting())
		require.Len(t, a.Timers, 1, "the timeout")
		tm := a.Timers[0]
		require.Equal(t, engine.Timer{ID: tm.ID, Delay: time.Hour, Hold: true, Timeout: true, Index: 2, Visit: 1}, tm)
		require.Equal(t, waiting, s.last("approve").Status)
		require.Len(t, s.eventsOf(engine.EventSignalAwaited, "approve"), 1)
		require.Zero(t, s.run.Running())
		return s, tm
	}

	t.Run("the signal's data is the output", func(t *testing.T) {
		t.Parallel()
		s, tm := awaitApproval(t)
		a, ok := s.run.Signal("approve", 1, map[string]any{"by": "Ada"}, signalAt)
		s.apply(a)
		require.True(t, ok)
		require.Equal(t, []int64{tm.ID}, a.Stop, "the timeout is stopped")
		require.Equal(t, []string{"send"}, s.running())
		st := s.last("approve")
		require.Equal(t, success, st.Status)
		require.Equal(t, map[string]any{"data": map[string]any{"by": "Ada"}, "signaled_at": "2025-01-01T12:00:00Z",
			"timed_out": false, "success": true}, st.Output)
		require.Len(t, s.eventsOf(engine.EventSignalReceived, "approve"), 1)
		require.Empty(t, s.run.Awaiting())
		s.timers = nil // the timeout is dropped: firing it does nothing
		require.Equal(t, &engine.Actions{}, s.run.TimerFired(tm.ID))
		s.drain()
		require.Equal(t, engine.RunCompleted, s.done.Status)
		require.Equal(t, "Ada", s.last("send").Output["by"])
		require.Equal(t, statusList(skipped), s.statuses("expired"))
		a, ok = s.run.Signal("approve", 1, "again", signalAt)
		require.False(t, ok, "a second signal finds nothing waiting")
		require.Equal(t, &engine.Actions{}, a)
	})

	t.Run("a signal for another node or visit changes nothing", func(t *testing.T) {
		t.Parallel()
		s, _ := awaitApproval(t)
		for _, c := range []struct {
			node  string
			visit int
		}{{"approve", 2}, {"draft", 1}, {"nope", 1}} {
			a, ok := s.run.Signal(c.node, c.visit, nil, signalAt)
			require.False(t, ok, "%s/%d", c.node, c.visit)
			require.Equal(t, &engine.Actions{}, a)
		}
		require.Len(t, s.run.Awaiting(), 1)
	})

	t.Run("the timeout takes the timeout handle", func(t *testing.T) {
		t.Parallel()
		s, _ := awaitApproval(t)
		a := s.fire()
		require.Equal(t, []string{"expired"}, s.running())
		require.Len(t, a.Start, 1)
		st := s.last("approve")
		require.Equal(t, success, st.Status)
		require.Equal(t, map[string]any{"data": nil, "timed_out": true, "success": true}, st.Output)
		ev := s.eventsOf(engine.EventBranchEvaluated, "approve")
		require.Len(t, ev, 1)
		require.Equal(t, "timeout", ev[0].Data["handle"])
		_, ok := s.run.Signal("approve", 1, "late", signalAt)
		require.False(t, ok, "a signal after the timeout is too late")
		s.drain()
		require.Equal(t, engine.RunCompleted, s.done.Status)
		require.Equal(t, statusList(skipped), s.statuses("send"))
		require.Equal(t, true, s.last("expired").Output["late"])
	})

	t.Run("a cancel stops the wait", func(t *testing.T) {
		t.Parallel()
		s, tm := awaitApproval(t)
		a := s.apply(s.run.Cancel())
		require.True(t, a.Done)
		require.Equal(t, engine.RunCancelled, a.Status)
		require.Equal(t, statusList(cancelled), s.statuses("approve"))
		require.Empty(t, s.run.Awaiting())
		require.Equal(t, &engine.Actions{}, s.run.TimerFired(tm.ID))
		_, ok := s.run.Signal("approve", 1, nil, signalAt)
		require.False(t, ok)
	})

	t.Run("a failure elsewhere stops the wait", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: approve, type: wait, until: signal}
  - {id: boom, type: act, fail: -1}
`, `
  - {from: start, to: approve}
  - {from: start, to: boom}
`))
		s.start("")
		a := s.finish("approve")
		require.Empty(t, a.Timers, "no timeout: no timer")
		require.Len(t, a.Awaits, 1)
		a = s.finish("boom")
		require.True(t, a.Done)
		require.Equal(t, engine.RunFailed, a.Status)
		require.Equal(t, statusList(cancelled), s.statuses("approve"))
	})

	t.Run("foreach items wait apart, signalled by visit", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ [1, 2] }}", concurrency: 2}
  - {id: ok, type: wait, until: signal}
  - {id: use, type: act, out: {got: "{{ ok.data }}"}}
  - {id: end, type: endloop, loop: each}
`, `
  - {from: start, to: each}
  - {from: each, to: ok, on: body}
  - {from: ok, to: use}
  - {from: use, to: end}
`))
		s.start("")
		s.finish("each")
		s.finish("ok")
		s.finish("ok")
		aw := s.run.Awaiting()
		require.Len(t, aw, 2)
		require.Equal(t, []int{1, 2}, []int{aw[0].Visit, aw[1].Visit})
		a, ok := s.run.Signal("ok", 2, "second", signalAt)
		require.True(t, ok)
		s.apply(a)
		a, ok = s.run.Signal("ok", 1, "first", signalAt)
		require.True(t, ok)
		s.apply(a)
		s.drain()
		require.Equal(t, engine.RunCompleted, s.done.Status)
		require.Equal(t, []any{map[string]any{"got": "first"}, map[string]any{"got": "second"}}, s.last("each").Output["results"])
	})

	t.Run("only a wait node waits for a signal", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: sly, type: act, out: {_await: signal}}
  - {id: next, type: act}
`, `
  - {from: start, to: sly}
  - {from: sly, to: next}
`))
		s.start("")
		a := s.finish("sly")
		require.Empty(t, a.Awaits)
		require.Equal(t, []string{"next"}, s.running())
		s.drain()
		require.Equal(t, engine.RunCompleted, s.done.Status)
	})
}
