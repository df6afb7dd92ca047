// Package durable makes runs survive their process: it records a run's
// steps and events into the store as they happen, group-committed once per
// scheduler step and before any node it unblocks starts, and it answers the
// engine's reuse questions for resume (same config hash) and rerun --pin.
package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
)

// LargeOutput is the size above which a step's output is kept in a file of
// the run folder instead of the database.
const LargeOutput = 256 << 10

// directivesKey keeps a step's directives beside its output in the store,
// so a reused step routes as it did.
const directivesKey = "_directives"

// Recorder writes one run's records into a store. Steps and events are
// buffered and written by Flush, which the engine calls after each
// scheduler step and before it starts the tasks that step released.
type Recorder struct {
	st     store.Store
	runID  string
	dir    string // the run folder, for large outputs
	mu     sync.Mutex
	steps  map[[2]any]*store.Step
	order  [][2]any
	events []store.Event
}

var (
	_ engine.Recorder = (*Recorder)(nil)
	_ engine.Flusher  = (*Recorder)(nil)
)

// NewRecorder records run runID into st; large outputs go under dir.
func NewRecorder(st store.Store, runID, dir string) *Recorder {
	return &Recorder{st: st, runID: runID, dir: dir, steps: map[[2]any]*store.Step{}}
}

// Step buffers the latest state of a step.
func (r *Recorder) Step(rec *engine.StepRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := [2]any{rec.Node, rec.Visit}
	s := StepFromRecord(r.runID, rec)
	if _, ok := r.steps[key]; !ok {
		r.order = append(r.order, key)
	}
	r.steps[key] = s
	return nil
}

// Event buffers an event.
func (r *Recorder) Event(ev engine.TimedEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, store.Event{
		RunID: r.runID, Time: ev.Time, Type: ev.Type, Node: ev.Node, Visit: ev.Visit, Iteration: ev.Iteration, Data: ev.Data,
	})
	return nil
}

// Flush writes what is buffered: steps in one transaction, then events.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	steps := make([]*store.Step, 0, len(r.order))
	for _, k := range r.order {
		steps = append(steps, r.steps[k])
	}
	events := r.events
	r.steps, r.order, r.events = map[[2]any]*store.Step{}, nil, nil
	r.mu.Unlock()
	for _, s := range steps {
		if err := r.offload(s); err != nil {
			return err
		}
	}
	ctx := context.Background()
	if len(steps) > 0 {
		if err := r.st.SaveSteps(ctx, r.runID, steps); err != nil {
			return fmt.Errorf("saving steps of run %s: %w", r.runID, err)
		}
	}
	if len(events) > 0 {
		if err := r.st.AppendEvents(ctx, r.runID, events); err != nil {
			return fmt.Errorf("saving events of run %s: %w", r.runID, err)
		}
	}
	return nil
}

// offload moves an output larger than LargeOutput into a file.
func (r *Recorder) offload(s *store.Step) error {
	if s.Output == nil || r.dir == "" {
		return nil
	}
	data, err := json.Marshal(s.Output)
	if err != nil || len(data) <= LargeOutput {
		return nil
	}
	dir := filepath.Join(r.dir, s.Node, "outputs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("storing the large output of %s: %w", s.Node, err)
	}
	path := filepath.Join(dir, fmt.Sprintf("visit-%d.json", s.Visit))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("storing the large output of %s: %w", s.Node, err)
	}
	s.Output, s.OutputRef = nil, path
	return nil
}

// StepFromRecord converts an engine step record into a store row.
func StepFromRecord(runID string, rec *engine.StepRecord) *store.Step {
	out := rec.Output
	if len(rec.Directives) > 0 {
		out = make(map[string]any, len(rec.Output)+1)
		for k, v := range rec.Output {
			out[k] = v
		}
		out[directivesKey] = rec.Directives
	}
	return &store.Step{
		RunID: runID, StepOrder: rec.StepOrder, Node: rec.Node, Type: rec.Type, Visit: rec.Visit,
		Iteration: rec.Iteration, Attempts: rec.Attempts, Status: string(rec.Status), Params: rec.Params,
		Output: out, Error: rec.Error, ConfigHash: rec.ConfigHash, Cached: rec.Cached, Pinned: rec.Pinned,
		StartedAt: rec.StartedAt, FinishedAt: rec.FinishedAt, DurationMS: rec.DurationMS, Tokens: rec.Tokens, CostUSD: rec.CostUSD,
	}
}

// Output returns a step's output and directives, reading it back from its
// file when it was large.
func Output(s *store.Step) (out, directives map[string]any, err error) {
	out = s.Output
	if out == nil && s.OutputRef != "" {
		data, err := os.ReadFile(s.OutputRef)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the stored output of %s: %w", s.Node, err)
		}
		if err := json.Unmarshal(data, &out); err != nil {
			return nil, nil, fmt.Errorf("reading the stored output of %s: %w", s.Node, err)
		}
	}
	if d, ok := out[directivesKey].(map[string]any); ok {
		clean := make(map[string]any, len(out))
		for k, v := range out {
			if k != directivesKey {
				clean[k] = v
			}
		}
		return clean, d, nil
	}
	return out, nil, nil
}
