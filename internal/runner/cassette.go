package runner

import (
	"context"
	"fmt"

	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/runlog"
)

// ReplaySource is the cassette a run answers its interactions from
// (Options.Replay).
type ReplaySource = cassette.Source

// saveTape writes an execution's cassette in its run folder rl, and the
// interactions a replay added to the replayed cassette's file.
func saveTape(tape *cassette.Tape, rl *runlog.Writer, j job) error {
	if err := rl.Materialize(); err != nil {
		return fmt.Errorf("writing the run's cassette: %w", err)
	}
	return cassette.SaveRun(tape, rl.Dir(), j.replay)
}

// ReplayRequest re-executes a recorded run from its cassette.
type ReplayRequest struct {
	RunID string
	// WorkflowFile, when set, replaces the run's workflow (an edited one).
	WorkflowFile string
	// AllowNew sends a request the cassette has no answer for live, and
	// appends its exchange to the cassette; without it such a request
	// fails its node with the difference from the recorded one.
	AllowNew bool
	Options
}

// ReplayResult is how a replay went: the new run, and how it compares
// with the recorded one.
type ReplayResult struct {
	*Result
	// Of is the replayed run.
	Of string
	// Diverged are the steps whose status or output differ from the
	// recorded run's, by node and visit.
	Diverged []Divergence
	// Mismatches are the requests the cassette had no answer for.
	Mismatches []*cassette.MismatchError
	// Added is how many interactions were sent live and appended (AllowNew).
	Added int
}

// Divergence is a step of a replay that differs from the recorded run.
type Divergence = cassette.Divergence

// Replay re-executes a recorded run (skein run --record) as a new run whose
// every outside interaction is answered from the run's cassette.
func (r *Runner) Replay(ctx context.Context, req ReplayRequest) (*ReplayResult, error) {
	run, err := r.run(ctx, req.RunID)
	if err != nil {
		return nil, err
	}
	w, err := r.workflowOf(run, req.WorkflowFile)
	if err != nil {
		return nil, err
	}
	src, err := cassette.ReadRun(run.Dir, req.AllowNew)
	if err != nil {
		return nil, usagef("run %s cannot be replayed: %v", run.ID, err)
	}
	defer src.Cassette.Close()
	hist, err := r.st.StepHistory(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	sigs, err := r.st.Signals(ctx, run.ID, 0) // the recorded run's signals come again, as its answers do
	if err != nil {
		return nil, err
	}
	res, err := r.execute(ctx, job{w: w, inputs: run.Inputs, trigger: run.Trigger, payload: durable.TriggerPayload(r.cfg.Registry, hist, run.Trigger),
		runID: NewRunID(), replay: src, replayOf: run.ID, signals: durable.Signals(sigs)}, req.Options)
	if err != nil {
		return nil, err
	}
	out := &ReplayResult{Result: res, Of: run.ID}
	if res.tape != nil {
		out.Mismatches, out.Added = res.tape.Mismatches(), res.tape.Added()
	}
	if res.Engine != nil {
		mask := func(m map[string]any) map[string]any { o, _ := res.redact.Map(m); return o } // as the recorded steps are
		out.Diverged = cassette.DivergedRuns(hist, res.Engine.Steps, cassette.Runs{ReplayedID: res.Run.ID, RecordedID: run.ID, ReplayedStart: res.Run.StartedAt, RecordedStart: run.StartedAt}, mask)
	}
	return out, nil
}

// CassetteMismatches are the requests the run's cassette had no answer
// for, when it answered from one (Options.Replay).
func (r *Result) CassetteMismatches() []*cassette.MismatchError {
	if r == nil || r.tape == nil {
		return nil
	}
	return r.tape.Mismatches()
}
