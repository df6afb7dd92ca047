package durable_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/redact"
)

// TestDeferredHandsOverWhatRuns: once committed, the observer gets every
// change of a released step and every event, masked, in the order they
// happened — and nothing of a step only planned (a run's start plans all
// of them; no display shows them).
func TestDeferredHandsOverWhatRuns(t *testing.T) {
	t.Parallel()
	var seen []string
	var later []func()
	d := &durable.Deferred{
		OnStep:  func(s engine.StepRecord) { seen = append(seen, "step "+s.Node+" "+string(s.Status)) },
		OnEvent: func(ev engine.TimedEvent) { seen = append(seen, "event "+ev.Type+" "+ev.Data["said"].(string)) },
		Later:   func(f func()) { later = append(later, f) },
		Redact:  redact.New(map[string]string{"TOKEN": "s3cr3t-value"}),
	}
	now := time.Now()
	planned := &engine.StepRecord{Node: "b", Visit: 1, StepOrder: 2, Status: engine.StatusPending}
	require.True(t, durable.Planned(planned))
	require.NoError(t, d.Step(&engine.StepRecord{Node: "a", Visit: 1, StepOrder: 1, Status: engine.StatusPending}))
	require.NoError(t, d.Step(planned))
	running := &engine.StepRecord{Node: "a", Visit: 1, StepOrder: 1, Status: engine.StatusRunning, Attempts: 1, StartedAt: &now}
	require.NoError(t, d.Step(running))
	require.NoError(t, d.Event(engine.TimedEvent{Time: now, Event: engine.Event{Type: "warning", Node: "a", Data: map[string]any{"said": "token s3cr3t-value"}}}))
	running.Status = engine.StatusSuccess // the engine changes its record after handing it over
	require.NoError(t, d.Step(running))
	require.NoError(t, d.Step(&engine.StepRecord{Node: "b", Visit: 1, StepOrder: 2, Status: engine.StatusPending, Attempts: 1}))
	require.NoError(t, d.Flush())
	require.Empty(t, seen, "nothing before the commit")
	require.Len(t, later, 1)
	later[0]()
	require.Equal(t, []string{
		"step a running",
		"event warning token ***",
		"step a success",
		"step b pending",
	}, seen)
}

// TestDeferredFlushesDoNotMix: records kept after a flush wait for the
// next one, even while the last is still waiting for its commit, and a
// flush handed over and emptied for reuse brings back nothing of before.
func TestDeferredFlushesDoNotMix(t *testing.T) {
	t.Parallel()
	var seen []string
	var later []func()
	d := &durable.Deferred{
		OnStep:  func(s engine.StepRecord) { seen = append(seen, s.Node+" "+string(s.Status)) },
		OnEvent: func(ev engine.TimedEvent) { seen = append(seen, "event "+ev.Type) },
		Later:   func(f func()) { later = append(later, f) },
		Redact:  redact.New(nil),
	}
	step := func(node string, status engine.Status) {
		require.NoError(t, d.Step(&engine.StepRecord{Node: node, Visit: 1, StepOrder: 1, Status: status, Attempts: 1}))
	}
	step("a", engine.StatusRunning)
	require.NoError(t, d.Event(engine.TimedEvent{Event: engine.Event{Type: "first"}}))
	require.NoError(t, d.Flush())
	step("b", engine.StatusSuccess) // while the first flush waits for its commit
	require.NoError(t, d.Flush())
	require.NoError(t, d.Flush(), "nothing kept: nothing to hand over")
	require.Len(t, later, 2)
	later[0]()
	later[1]()
	require.Equal(t, []string{"a running", "event first", "b success"}, seen)

	// Both flushes' records are emptied for reuse: what comes next is all
	// a later flush hands over.
	seen = nil
	require.NoError(t, d.Event(engine.TimedEvent{Event: engine.Event{Type: "second"}}))
	step("c", engine.StatusFailed)
	require.NoError(t, d.Flush())
	require.Len(t, later, 3)
	later[2]()
	require.Equal(t, []string{"event second", "c failed"}, seen)
}

// TestDeferredKeepsWhatACommitBringsBack: a commit that catches up with
// 32 flushes at once brings all 32 back for reuse, so that the next 32
// flushes, while the committer lags again, make no new ones (with room for
// only 4, they made 144 allocations, not 32).
func TestDeferredKeepsWhatACommitBringsBack(t *testing.T) {
	var later []func()
	d := &durable.Deferred{
		OnStep:  func(engine.StepRecord) {},
		OnEvent: func(engine.TimedEvent) {},
		Later:   func(f func()) { later = append(later, f) },
		Redact:  redact.New(nil),
	}
	rec := &engine.StepRecord{Node: "a", Visit: 1, StepOrder: 1, Status: engine.StatusSuccess, Attempts: 1}
	ev := engine.TimedEvent{Event: engine.Event{Type: "loop_iteration"}}
	flushes := func() {
		for range 32 {
			for range 16 {
				_ = d.Step(rec)
			}
			_ = d.Event(ev)
			_ = d.Flush()
		}
		for _, f := range later {
			f() // one commit brings them all back
		}
		later = later[:0]
	}
	flushes() // the first 32 are made
	later = make([]func(), 0, 32)
	// What each flush still makes is the function it hands to Later.
	require.LessOrEqual(t, testing.AllocsPerRun(5, flushes), 32.0, "the next 32 flushes reuse the 32 brought back")
}
