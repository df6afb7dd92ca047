// Package durable makes runs survive their process: it records a run's
// steps and events into the store as they happen, handed over once per
// scheduler step and written in the background by one committer goroutine
// that folds whatever queued meanwhile into one transaction (group
// commit). Nodes released by a step do not wait for its commit (unless
// the recorder syncs the ends of steps, Recorder.SyncEnds); what must
// not run ahead of the disk (progress lines, the run's final record)
// waits for it through AfterCommit and Finish. It also answers the
// engine's reuse questions for resume (same config hash, over every
// generation of the run) and rerun --pin.
package durable

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/store"
)

var errClosed = errors.New("the store committer is closed")

// directivesKey keeps a step's directives beside its output in the store,
// so a reused step routes as it did.
const directivesKey = "_directives"

// Recorder writes one run's records into a store through a Committer.
// Steps and events are buffered and handed over by Flush, which the engine
// calls after each scheduler step; the committer writes them in the next
// group transaction. What must wait for durability (the progress display)
// registers with AfterCommit.
//
// Every record goes through the run's Redactor on its way in — steps
// (parameters, output, directives, error), events, the run's final record
// (outputs, error) — so no secret reaches the database or a blob it
// writes, whoever made the record.
type Recorder struct {
	c      *Committer
	runID  string
	redact *redact.Redactor
	// Blobs keeps the big values of its records (the run folder's, or the
	// run's shared store); nil: none. Set it before the run starts.
	Blobs *blob.Store
	// Generation is the run's execution the steps belong to (see
	// store.Step); Token fences every batch with the owner's token. Set
	// them before the run starts.
	Generation int
	Token      string
	// SyncEnds makes Flush wait until a batch that holds the end of a
	// step is committed, so the nodes that step released start only once
	// its outcome is durable: a node recorded complete never runs again
	// after a crash. A child run on a worker is recorded so, as the
	// queued nodes are; a local run's nodes do not wait (at-least-once).
	SyncEnds bool

	mu    sync.Mutex
	steps map[stepKey]*store.Step
	// stepsMade is the size steps was made for: clearing a map costs as
	// much as the room it was made with, however few keys it holds.
	stepsMade int
	order     []stepKey
	events    []store.Event
	after     []func()
	err       error // the first failed commit of this run
	// saved holds the steps under way handed over as step rows: a step
	// planned once it has a row is written as a row, not as a plan. A
	// step that ended is recorded no more: it is let go of, so that a
	// long run's set does not grow with its steps.
	saved map[stepKey]struct{}
}

// stepKey is a step's key within its generation.
type stepKey struct {
	node  string
	visit int
}

var (
	_ engine.Recorder = (*Recorder)(nil)
	_ engine.Flusher  = (*Recorder)(nil)
)

// NewRecorder records run runID through c, masking the run's secrets
// with red (nil when it has none); the big values of its records go to
// blobs (none when it is nil), which need not know the secrets: what it
// is given is masked already.
func NewRecorder(c *Committer, runID string, blobs *blob.Store, red *redact.Redactor) *Recorder {
	return &Recorder{c: c, runID: runID, redact: red, Blobs: blobs, steps: map[stepKey]*store.Step{}, saved: map[stepKey]struct{}{}}
}

// Step buffers the latest state of a step.
func (r *Recorder) Step(rec *engine.StepRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := stepKey{rec.Node, rec.Visit}
	s, ok := r.steps[key]
	if !ok {
		r.order = append(r.order, key)
		s = new(store.Step)
	}
	// The step buffered for key since the last take is the recorder's
	// own (take hands it over and forgets it): its latest state is
	// written over it.
	stepInto(s, r.runID, rec)
	r.steps[key] = RedactStep(r.redact, s)
	return nil
}

// Event buffers an event.
func (r *Recorder) Event(ev engine.TimedEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	data, _ := r.redact.Map(ev.Data)
	r.events = append(r.events, store.Event{
		RunID: r.runID, Time: ev.Time, Type: ev.Type, Node: ev.Node, Visit: ev.Visit, Iteration: ev.Iteration, Data: data,
	})
	return nil
}

// AfterCommit runs fn once everything recorded so far is committed.
func (r *Recorder) AfterCommit(fn func()) {
	r.mu.Lock()
	r.after = append(r.after, fn)
	r.mu.Unlock()
}

// Flush hands what is buffered to the committer. It returns the error of
// an earlier commit of this run, so the engine stops a run whose records
// cannot be written.
func (r *Recorder) Flush() error {
	b, after, err := r.take()
	if err != nil || (len(b.Steps) == 0 && len(b.Plan) == 0 && len(b.Events) == 0 && len(after) == 0) {
		return err
	}
	var ended chan error
	if r.SyncEnds && endsAStep(b.Steps) {
		ended = make(chan error, 1)
	}
	r.c.Submit(b, func(err error) {
		if ended != nil {
			ended <- err
		}
		if err != nil {
			r.mu.Lock()
			if r.err == nil {
				r.err = fmt.Errorf("saving the records of run %s: %w", r.runID, err)
			}
			r.mu.Unlock()
			return
		}
		for _, fn := range after {
			fn()
		}
	})
	if ended != nil {
		if err := <-ended; err != nil {
			return fmt.Errorf("saving the records of run %s: %w", r.runID, err)
		}
	}
	return nil
}

// endsAStep reports whether steps holds a step that ended.
func endsAStep(steps []*store.Step) bool {
	for _, s := range steps {
		if s.FinishedAt != nil {
			return true
		}
	}
	return false
}

// Finish commits what is buffered together with the run's final record
// (status, outputs, error, finish time, usage), in one transaction, and
// waits for it. If it fails nothing of it was written: the run stays owned
// until its lease runs out.
func (r *Recorder) Finish(run *store.Run) error {
	b, after, err := r.take()
	if err != nil {
		return err
	}
	b.Finish = RedactRun(r.redact, run)
	done := make(chan error, 1)
	r.c.Submit(b, func(err error) {
		if err == nil {
			for _, fn := range after {
				fn()
			}
		}
		done <- err
	})
	if err := <-done; err != nil {
		return fmt.Errorf("saving the end of run %s: %w", r.runID, err)
	}
	return nil
}

// take empties the buffer into a batch, big values moved to blobs,
// with the functions waiting for its commit; it returns the error of an
// earlier commit of this run instead.
func (r *Recorder) take() (store.Batch, []func(), error) {
	r.mu.Lock()
	if r.err != nil {
		err := r.err
		r.mu.Unlock()
		return store.Batch{}, nil, err
	}
	steps := make([]*store.Step, 0, len(r.order))
	var plan []*store.Step
	for _, k := range r.order {
		s := r.steps[k]
		s.Generation = r.Generation
		sk := stepKey{s.Node, s.Visit}
		if _, ok := r.saved[sk]; !ok && Planned(s) {
			plan = append(plan, s)
			continue
		}
		if ended(s) {
			delete(r.saved, sk)
		} else {
			r.saved[sk] = struct{}{}
		}
		steps = append(steps, s)
	}
	events, after := r.events, r.after
	// The next buffers are made as large as these: the flushes of a run
	// tend to hold as many records each. A small map made small is
	// cleared; one made for many keys (the plan of a big run's first
	// flush) would cost its room at every clear, so it is made again.
	if len(r.steps) <= 8 && r.stepsMade <= 8 {
		clear(r.steps)
	} else {
		r.steps, r.stepsMade = make(map[stepKey]*store.Step, len(r.steps)), len(r.steps)
	}
	// The order is read into steps above: its slice is used again. The
	// events go with the batch.
	r.order, r.events, r.after = r.order[:0], make([]store.Event, 0, len(events)), nil
	r.mu.Unlock()
	for _, s := range steps {
		if err := r.offload(s); err != nil {
			return store.Batch{}, nil, err
		}
	}
	return store.Batch{RunID: r.runID, Steps: steps, Plan: plan, Events: events, Token: r.Token}, after, nil
}

// Planned reports whether s is a step only planned: pending, with nothing
// recorded but its key, place in the run, type and iteration. Such a step
// is written as part of the run's plan (store.Batch.Plan), not as a row.
func Planned(s *store.Step) bool {
	return s.Status == engine.StatusPending && s.Attempts == 0 && s.Params == nil && s.Output == nil &&
		s.OutputRef == "" && s.Error == nil && s.ConfigHash == "" && !s.Cached && !s.Pinned &&
		s.StartedAt == nil && s.FinishedAt == nil && s.DurationMS == 0 && s.Tokens == 0 && s.CostUSD == 0 &&
		s.ProcessGroup == 0 && !s.Masked && s.WakeAt == nil && s.SkipReason == "" && s.TakenHandle == "" &&
		s.RanOn == nil && s.Confidence == nil
}

// ended tells whether a step record is its step's last: the step ended,
// and no attempt of it is due.
func ended(s *store.Step) bool {
	switch s.Status {
	case engine.StatusSuccess, engine.StatusFailed, engine.StatusSkipped, engine.StatusCancelled:
		return !s.Retry
	}
	return false
}

// Sync flushes and waits until every record of the run is committed.
func (r *Recorder) Sync() error {
	if err := r.Flush(); err != nil {
		return err
	}
	r.c.Sync()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// offload moves the big values of a step's record to blobs. The engine
// has moved those of what the run kept already; what is left are values
// it kept in memory because they held a secret, recorded masked here.
func (r *Recorder) offload(s *store.Step) error {
	if r.Blobs == nil {
		return nil
	}
	out, _, err := r.Blobs.Spill(s.Output, blob.InlineLimit, directivesKey)
	if err != nil {
		return fmt.Errorf("storing the output of %s: %w", s.Node, err)
	}
	params, _, err := r.Blobs.Spill(s.Params, blob.InlineLimit)
	if err != nil {
		return fmt.Errorf("storing the parameters of %s: %w", s.Node, err)
	}
	s.Output, s.Params = out, params
	return nil
}

// StepFromRecord is the step as a store keeps it: the record of run
// runID, its directives folded into its output.
func StepFromRecord(runID string, rec *engine.StepRecord) *store.Step {
	s := new(store.Step)
	stepInto(s, runID, rec)
	return s
}

// DocStep is rec as a run document (rundoc.Build, which sets each step's
// RunID) takes it: StepFromRecord(runID, rec), or rec itself, not copied,
// when that differs from it in RunID only (rec has no directives).
func DocStep(runID string, rec *engine.StepRecord) *store.Step {
	if len(rec.Directives) == 0 {
		return rec
	}
	return StepFromRecord(runID, rec)
}

// stepInto sets *s to StepFromRecord(runID, rec).
func stepInto(s *store.Step, runID string, rec *engine.StepRecord) {
	out := rec.Output
	if len(rec.Directives) > 0 {
		out = make(map[string]any, len(rec.Output)+1)
		for k, v := range rec.Output {
			out[k] = v
		}
		out[directivesKey] = rec.Directives
	}
	*s = *rec
	s.RunID, s.Output, s.Directives = runID, out, nil
}

// DocSteps are the steps of an execution's result as its run's document
// takes them, through red: res's own records (DocStep), or, when the
// execution let go of some (engine.Result.Dropped), every step of run's
// generation read from st by each, which the run's document calls as it is
// written.
func DocSteps(ctx context.Context, st store.Store, run *store.Run, res *engine.Result, red *redact.Redactor) (steps []*store.Step, each func(func(*store.Step) error) error) {
	if res.Dropped > 0 {
		return nil, func(yield func(*store.Step) error) error {
			return st.EachStep(context.WithoutCancel(ctx), run.ID, max(run.Generation, 1), func(s *store.Step) error {
				return yield(RedactStep(red, s))
			})
		}
	}
	steps = make([]*store.Step, 0, len(res.Steps))
	for _, s := range res.Steps {
		steps = append(steps, RedactStep(red, DocStep(run.ID, s)))
	}
	return steps, nil
}

// RedactStep returns s with red's secrets masked in its parameters, output
// (directives included) and error: s itself when it holds none, else a
// copy, marked Masked when its output had to be.
func RedactStep(red *redact.Redactor, s *store.Step) *store.Step {
	params, inParams := red.Map(s.Params)
	out, inOutput := red.Map(s.Output)
	e, inError := red.Error(s.Error)
	if !inParams && !inOutput && !inError {
		return s
	}
	c := *s
	c.Params, c.Output, c.Error = params, out, e
	c.Masked = s.Masked || inOutput
	return &c
}

// RedactRun returns run with red's secrets masked in its outputs and
// error: run itself when they hold none, else a copy.
func RedactRun(red *redact.Redactor, run *store.Run) *store.Run {
	if run == nil {
		return nil
	}
	outs, inOutputs := red.Map(run.Outputs)
	e, inError := red.Error(run.Error)
	if !inOutputs && !inError {
		return run
	}
	c := *run
	c.Outputs, c.Error = outs, e
	return &c
}

// Output returns a step's output and directives, reading back the file
// of a whole output that a version before blobs kept apart. Big values stay
// blobs, but the directives are read back whole: the scheduler reads them.
func Output(s *store.Step) (out, directives map[string]any, err error) {
	out = s.Output
	if out == nil && s.OutputRef != "" {
		data, err := os.ReadFile(s.OutputRef)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the stored output of %s: %w", s.Node, err)
		}
		if out, err = store.DecodeMap(data); err != nil {
			return nil, nil, fmt.Errorf("reading the stored output of %s: %w", s.Node, err)
		}
	}
	if b, ok := out[directivesKey].(*blob.Blob); ok {
		d, err := b.Load()
		if err != nil {
			return nil, nil, fmt.Errorf("reading the stored output of %s: %w", s.Node, err)
		}
		out = maps.Clone(out)
		out[directivesKey] = d
	}
	if d, ok := out[directivesKey].(map[string]any); ok {
		if b, ok := d["_state_patch"].(*blob.Blob); ok {
			p, err := b.Load()
			if err != nil {
				return nil, nil, fmt.Errorf("reading the stored output of %s: %w", s.Node, err)
			}
			d = maps.Clone(d)
			d["_state_patch"] = p
		}
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
