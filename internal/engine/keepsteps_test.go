package engine_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
)

// stepStore keeps the last record of every step it was handed, as a
// store does.
type stepStore struct {
	mu    sync.Mutex
	steps map[string]engine.StepRecord
}

func (s *stepStore) Step(rec *engine.StepRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.steps == nil {
		s.steps = map[string]engine.StepRecord{}
	}
	s.steps[fmt.Sprintf("%s/%d", rec.Node, rec.Visit)] = *rec
	return nil
}

func (s *stepStore) Event(engine.TimedEvent) error { return nil }

// list returns the steps kept, in step order.
func (s *stepStore) list() []engine.StepRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]engine.StepRecord, 0, len(s.steps))
	for _, rec := range s.steps {
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b engine.StepRecord) int { return a.StepOrder - b.StepOrder })
	return out
}

// shown is what a run document shows of a step, times aside.
func shown(rec engine.StepRecord) string {
	return fmt.Sprintf("%d %s/%d #%d %s %s attempts=%d out=%v err=%v", rec.StepOrder, rec.Node, rec.Visit, rec.Iteration,
		rec.Status, rec.SkipReason, rec.Attempts, rec.Output, rec.Error)
}

// A long loop keeps in memory only its latest steps when KeepSteps bounds
// them; the recorder still gets every step as it would without the bound,
// and the result keeps, for each node, its latest visit and its latest to
// succeed or fail, which checks and a repair read.
func TestKeepStepsBoundsWhatALongRunHolds(t *testing.T) {
	src := wf(`
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ 1..60 }}"}
  - {id: pick, type: if, condition: "loop.item % 3 == 0"}
  - {id: three, type: set, values: {n: "{{ loop.item }}"}}
  - {id: other, type: act, fail: "{{ loop.item % 7 == 0 ? 1 : 0 }}", retries: 2, retry_backoff: 0s, out: {n: "{{ loop.item }}"}}
  - {id: bad, type: act, fail: "{{ loop.item == 58 ? -1 : 0 }}", permanent: true, on_error: continue, out: {n: "{{ loop.item }}"}}
  - {id: next, type: endloop, loop: each}
  - {id: done, type: set, values: {n: "{{ len(each.items) }}"}}
`, `
  - {from: start, to: each}
  - {from: each, to: pick, on: body}
  - {from: pick, to: three, on: "true"}
  - {from: pick, to: other, on: "false"}
  - {from: three, to: bad}
  - {from: other, to: bad}
  - {from: bad, to: next}
  - {from: each, to: done, on: done}
`)
	run := func(keep int) (*engine.Result, *stepStore) {
		t.Helper()
		st := &stepStore{}
		res, err := engine.NewDriver(testReg, nil, 8).Execute(context.Background(), mustPlan(t, src),
			engine.Options{RunID: "r", KeepSteps: keep, Host: engine.Host{Recorder: st}})
		require.NoError(t, err)
		return res, st
	}
	all, allStore := run(0)
	require.Equal(t, engine.RunCompleted, all.Status, "run error: %v", all.Error)
	require.Zero(t, all.Dropped)
	bounded, boundedStore := run(8)
	require.Equal(t, all.Status, bounded.Status)
	require.Equal(t, all.Outputs, bounded.Outputs)

	var want, got, recorded []string
	for _, rec := range all.Steps {
		want = append(want, shown(*rec))
	}
	for _, rec := range allStore.list() {
		recorded = append(recorded, shown(rec))
	}
	require.Equal(t, want, recorded, "the recorder gets what the result lists")
	for _, rec := range boundedStore.list() {
		got = append(got, shown(rec))
	}
	require.Equal(t, want, got, "the bound changes nothing the recorder gets")

	require.Positive(t, bounded.Dropped)
	require.Equal(t, len(all.Steps), len(bounded.Steps)+bounded.Dropped)
	require.Less(t, len(bounded.Steps), 40, "a few records per node, not one per item")
	// What is kept: the latest visit of each node, and its latest to
	// succeed or fail, in step order.
	latest := map[string]string{}
	ended := map[string]string{}
	for _, rec := range all.Steps {
		latest[rec.Node] = shown(*rec)
		if rec.Status == engine.StatusSuccess || rec.Status == engine.StatusFailed {
			ended[rec.Node] = shown(*rec)
		}
	}
	var kept []string
	for _, rec := range bounded.Steps {
		kept = append(kept, shown(*rec))
	}
	require.IsIncreasing(t, orders(bounded.Steps))
	for node, s := range latest {
		require.Contains(t, kept, s, "the latest step of %s", node)
	}
	for node, s := range ended {
		require.Contains(t, kept, s, "the latest step of %s to succeed or fail", node)
	}
}

func orders(steps []*engine.StepRecord) []int {
	out := make([]int, len(steps))
	for i, s := range steps {
		out[i] = s.StepOrder
	}
	return out
}
