package runner

import (
	"context"
	"fmt"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// Errors of Signal (durable.SaveSignal).
var (
	ErrNoNode     = durable.ErrNoNode
	ErrNotWaiting = durable.ErrNotWaiting
)

// SignalRequest sends data to a wait node (until: signal) of a run, or to
// an agent whose tool call waits for approval (approve_tools).
type SignalRequest struct {
	RunID string
	Node  string
	// Data is any JSON value; it becomes the node's output data.
	Data any
}

// SignalResult is a recorded signal and what the caller does next.
type SignalResult struct {
	Signal store.Signal
	// Run is the run as it is once the signal is recorded, its status as
	// people see it.
	Run *store.Run
	// Resume names the run to resume now — the signalled run, or the parent
	// at the top of a child run — when no live process runs it (it waits, or
	// was interrupted); "" when its owner applies the signal itself.
	Resume string
}

// Signal records a signal for the step of node that waits for one, then
// says whether the run must be resumed for it to apply. The signal is on
// record before anything else happens, so a crash between the two loses
// nothing: a resume applies the signals recorded for the steps that wait.
// A live owner (another process) picks it up within Config.CancelPoll.
//
// It fails with ErrNotFound (no such run), ErrCompleted (the run
// completed), ErrNoNode (no such node) or ErrNotWaiting.
func (r *Runner) Signal(ctx context.Context, req SignalRequest) (*SignalResult, error) {
	run, err := r.run(ctx, req.RunID)
	if err != nil {
		return nil, err
	}
	switch engine.RunStatus(run.Status) {
	case engine.RunCompleted:
		return nil, fmt.Errorf("run %s: %w; nothing waits for a signal", run.ID, ErrCompleted)
	case engine.RunFailed, engine.RunCancelled:
		return nil, &Error{Code: CodeNotWaiting, Class: ClassConflict, Err: ErrNotWaiting, Msg: fmt.Sprintf(
			"run %s is %s, so node %s is not waiting for a signal; `skein resume %s` first", run.ID, run.Status, req.Node, run.ID)}
	}
	var w *workflow.Workflow
	if lw, err := r.workflowOf(run, ""); err == nil {
		w = lw
	}
	sig, err := durable.SaveSignal(ctx, r.st, r.cfg.Registry, w, run, req.Node, req.Data, r.clock.Now())
	if err != nil {
		return nil, err
	}
	// Read the run again: an execution that parked while the signal was
	// saved no longer looks for it, and an owner that is gone never will.
	cur, err := r.run(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	res := &SignalResult{Signal: sig, Run: cur}
	root := cur
	for root.ParentID != "" {
		if root, err = r.run(ctx, root.ParentID); err != nil {
			return nil, err
		}
	}
	switch r.Status(root) {
	case engine.RunWaiting, StatusInterrupted:
		res.Resume = root.ID
	}
	cur.Status = r.Status(cur)
	return res, nil
}

// Due returns the waiting runs whose wake-up time has come, for a server
// to resume.
func (r *Runner) Due(ctx context.Context) ([]*store.Run, error) {
	return r.st.ListRuns(ctx, store.RunFilter{DueBy: r.clock.Now()})
}
