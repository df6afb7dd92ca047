package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/secrets"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// run reads a run, with ErrNotFound when there is none.
func (r *Runner) run(ctx context.Context, id string) (*store.Run, error) {
	run, err := r.st.Run(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("no run %q in %s; `skein runs list` shows the runs: %w", id, r.cfg.Dir, ErrNotFound)
	}
	return run, err
}

// Status is the run's status as people should see it: a running run
// whose owner is gone is interrupted. A waiting run has no owner: it was
// left waiting for a signal or a timer (Options.Park).
func (r *Runner) Status(run *store.Run) record.RunStatus {
	switch run.Status {
	case engine.RunRunning, engine.RunPending:
		if !r.liveOwner(run) {
			return StatusInterrupted
		}
	}
	return run.Status
}

// StatusInterrupted is the status of a run whose owner died (DESIGN §2.7).
const StatusInterrupted = record.RunInterrupted

// Get returns a run as a document: the run with its steps (of its latest
// execution) and its verdict.
func (r *Runner) Get(ctx context.Context, id string) (*RunDoc, error) {
	run, err := r.run(ctx, id)
	if err != nil {
		return nil, err
	}
	steps, err := r.st.Steps(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	return r.doc(run, steps, check.VerdictIn(run.Dir)), nil
}

// ErrNoVersion is returned by RunWorkflow for a run that was not tied to
// a stored version of its workflow.
var ErrNoVersion = durable.ErrNoVersion

// RunWorkflow returns the workflow a run executed: the version stored with
// the run, which may differ from the file as it is now.
func (r *Runner) RunWorkflow(ctx context.Context, id string) (*workflow.Workflow, error) {
	run, err := r.run(ctx, id)
	if err != nil {
		return nil, err
	}
	return r.storedWorkflow(ctx, run)
}

// storedWorkflow is the workflow version stored with run.
func (r *Runner) storedWorkflow(ctx context.Context, run *store.Run) (*workflow.Workflow, error) {
	return durable.StoredWorkflow(ctx, r.st, run)
}

// ListRequest selects runs.
type ListRequest struct {
	Workflow string
	// Status is a run status, "interrupted" included.
	Status string
	// Parent lists the child runs of a run.
	Parent string
	Limit  int
	// After, when set, is the last run of the previous page: only runs
	// listed after it (older, or as old with a smaller id) are returned.
	After *Cursor
}

// Cursor is a place in the list of runs, newest first (store.Cursor).
type Cursor = store.Cursor

// List returns the matching runs, newest first, with their status as
// people should see it (Runner.Status).
func (r *Runner) List(ctx context.Context, req ListRequest) ([]*store.Run, error) {
	f := store.RunFilter{Workflow: req.Workflow, Status: record.RunStatus(req.Status), Parent: req.Parent, Limit: req.Limit}
	return store.ListPage(ctx, r.st, f, req.After, r.Status)
}

// Events returns up to limit of a run's events after seq afterSeq.
func (r *Runner) Events(ctx context.Context, id string, afterSeq int64, limit int) ([]store.Event, *store.Run, error) {
	run, err := r.run(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	evs, err := r.st.Events(ctx, run.ID, afterSeq, limit)
	run.Status = r.Status(run)
	return evs, run, err
}

// CancelRequest asks a run's owner to stop it.
type CancelRequest struct {
	RunID string
	// Wait is how long to wait for the run to end; 0 returns at once.
	Wait time.Duration
	// LetFinish lets the running nodes finish (they are recorded as they
	// end); by default they are stopped. Either way nothing new starts
	// and the steps that did not start are skipped.
	LetFinish bool
}

// Cancel asks the owner of a running run to cancel it, through the store,
// so it reaches an owner in another process. A run whose owner died is
// marked cancelled at once. A queued run is cancelled on the queue at
// once: its jobs no worker took are withdrawn, and the workers running
// its nodes stop them within a second (unless req.LetFinish). It returns
// the run as it is when Cancel returns.
func (r *Runner) Cancel(ctx context.Context, req CancelRequest) (*store.Run, error) {
	run, err := r.run(ctx, req.RunID)
	if err != nil {
		return nil, err
	}
	if st := r.Status(run); st == StatusInterrupted || st == engine.RunWaiting {
		// Nobody runs it: it is cancelled here, and its waiting steps
		// with it.
		claimed, err := r.claim(ctx, run)
		if err != nil {
			return nil, err
		}
		if err := durable.CancelClaimed(ctx, r.st, r.cfg.Registry, claimed, r.clock.Now(), cancelledError(), run.Owner.Host == "" || run.Owner.Host == r.host, r.Get); err != nil {
			return nil, err
		}
		return r.run(ctx, run.ID)
	}
	switch engine.RunStatus(run.Status) {
	case engine.RunRunning, engine.RunWaiting, engine.RunPending:
	default:
		return run, &Error{Code: CodeNotRunning, Class: ClassConflict, Err: ErrNotRunning,
			Msg: fmt.Sprintf("run %s is %s, not running: there is nothing to cancel", run.ID, run.Status)}
	}
	if run, err = r.st.RequestCancel(ctx, run.ID, req.LetFinish); err != nil {
		return nil, err
	}
	if run.Owner.Host == queue.OwnerHost && !run.Status.Final() { // queued, not ended
		if err := r.cancelQueued(ctx, run.ID); err != nil {
			return nil, fmt.Errorf("the cancel of run %s is recorded for its workers, but applying it here failed: %w", run.ID, err)
		}
	}
	if run, err = durable.AwaitEnd(ctx, r.st, run, req.Wait, r.Status); err != nil {
		return run, err
	}
	run.Status = r.Status(run)
	return run, nil
}

// PruneRequest deletes old runs.
type PruneRequest struct {
	OlderThan time.Duration
	DryRun    bool
}

// PruneResult is what a prune deleted (or, dry, would delete).
type PruneResult struct {
	Runs    []*store.Run
	Folders int
}

// Prune deletes the runs started more than OlderThan ago, with their child
// runs and folders; runs with a live lease are kept. Workflow folders left
// empty are removed too.
func (r *Runner) Prune(ctx context.Context, req PruneRequest) (*PruneResult, error) {
	if req.OlderThan <= 0 {
		return nil, usagef("--older-than must be more than 0")
	}
	runs, n, err := durable.Prune(ctx, r.st, r.cfg.Dir, r.clock.Now().Add(-req.OlderThan), req.DryRun)
	if runs == nil && err != nil {
		return nil, err
	}
	return &PruneResult{Runs: runs, Folders: n}, err
}

// Check evaluates the checks of a recorded run again and writes its
// verdict files; the verdict is nil when the workflow has no checks.
func (r *Runner) Check(ctx context.Context, id string) (*check.RunVerdict, error) {
	run, err := r.run(ctx, id)
	if err != nil {
		return nil, err
	}
	steps, err := r.st.Steps(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	w, err := r.workflowOf(run, "")
	if err != nil {
		return nil, err
	}
	// The records are masked already; the judge's reply may not be. The
	// secrets set now are masked in it (the run's may be set no longer).
	known := secrets.Known(w, r.cfg.LookupEnv)
	red := redact.New(known)
	v, err := r.verify(ctx, w, durable.Result(run, steps), run, run.Dir, known, red, nil)
	if v != nil && (v.Tokens > 0 || v.CostUSD > 0) && (run.LeaseExpired || run.Owner.Token == "") {
		// The judge's calls are the run's spending too.
		run.Tokens += v.Tokens
		run.CostUSD += v.CostUSD
		if uerr := r.st.UpdateRun(context.WithoutCancel(ctx), run); uerr != nil && err == nil {
			err = uerr
		}
	}
	return v, err
}

// Verdict reads a run's verdict file; nil when it has none.
func (r *Runner) Verdict(ctx context.Context, id string) (*store.Run, *check.RunVerdict, error) {
	run, err := r.run(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	v, err := check.ReadVerdict(run.Dir)
	return run, v, err
}

// VerdictStatus is the status of a finished run's checks, read from its
// folder's verdict file: "" when it has none.
func VerdictStatus(run *store.Run) string { return check.VerdictStatus(run.Dir) }
