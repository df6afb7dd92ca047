package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
)

// asker is a kind that parks (node.Spec.Parks) before a step that reads
// its output.
var asker = wf(`
  - {id: ask, type: parker}
  - {id: after, type: act, out: {got: "{{ ask.signal }}"}}
`, `
  - {from: ask, to: after}
`)

// A kind that parks waits under the name it gave (<node>#<name>); its
// signal runs it again for the same step, attempt and visit, with what it
// parked with, and its successors wait until then.
func TestSchedulerParkedKind(t *testing.T) {
	t.Parallel()
	s := newSim(t, asker)
	s.start("")
	a := s.finishWith("ask", engine.Outcome{Output: map[string]any{"shown": "asks"},
		Directives: map[string]any{"_await": "signal", "_await_name": "first", "_resume": map[string]any{"n": 1}}})
	require.Empty(t, a.Start)
	require.Equal(t, []engine.Await{{Node: "ask", Index: 0, Visit: 1, Signal: "ask#first", Task: a.Awaits[0].Task}}, a.Awaits)
	require.Equal(t, waiting, s.last("ask").Status)
	require.Equal(t, map[string]any{"signal": "ask#first"}, s.eventsOf(engine.EventSignalAwaited, "ask")[0].Data)

	_, ok := s.run.Signal("ask", 1, "no", signalAt)
	require.False(t, ok, "the node's id is not the wait's name")

	a, ok = s.run.Signal("ask#first", 1, map[string]any{"approved": true}, signalAt)
	require.True(t, ok)
	s.apply(a)
	require.Len(t, a.Start, 1, "ask runs again")
	task := a.Start[0]
	require.Equal(t, "ask", task.Node.ID)
	require.Equal(t, 1, task.Visit)
	require.Equal(t, 1, task.Attempt)
	require.NotNil(t, task.Resume)
	require.Equal(t, map[string]any{"approved": true}, task.Resume.Signal)
	require.Equal(t, map[string]any{"n": 1}, task.Resume.State)
	require.Equal(t, "asks", task.Resume.Output["shown"])
	require.Len(t, s.eventsOf(engine.EventNodeStarted, "ask"), 1, "it started once")
	require.Equal(t, engine.StatusRunning, s.last("ask").Status)

	s.finishWith("ask", engine.Outcome{Output: map[string]any{"signal": "yes"}})
	s.finish("after")
	require.NotNil(t, s.done)
	require.Equal(t, engine.RunCompleted, s.done.Status)
}

// The local driver runs a parked kind again when its signal, recorded
// before the execution, finds its step waiting.
func TestDriverParkedKind(t *testing.T) {
	t.Parallel()
	b := setupDriver(t, asker)
	res := result(t, b.execute(context.Background(), engine.Options{
		Signals: []engine.Signal{{Node: "ask#first", Visit: 1, Data: "yes", At: b.clk.Now()}},
	}))
	require.Equal(t, engine.RunCompleted, res.Status, "%v", res.Error)
	ask := stepsOf(res, "ask")[0]
	require.Equal(t, engine.StatusSuccess, ask.Status)
	require.Equal(t, "yes", ask.Output["signal"])
	require.Equal(t, map[string]any{"n": 1}, ask.Output["state"])
	require.Equal(t, "asks", ask.Output["shown"])
	require.Equal(t, "yes", stepsOf(res, "after")[0].Output["got"])
}
