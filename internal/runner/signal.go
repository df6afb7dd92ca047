package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Errors of Signal.
var (
	// ErrNoNode: the run's workflow has no node of that id.
	ErrNoNode = errors.New("no such node")
	// ErrNotWaiting: no step of the node waits for a signal (it has not
	// started, ran already, timed out, or is not a wait with until:
	// signal), or its waiting step has its signal already.
	ErrNotWaiting = errors.New("the node is not waiting for a signal")
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
	// Resume names the run to resume now — the signalled run, or the
	// parent at the top of a child run — when no live process runs it
	// (it waits, or was interrupted); "" when its owner applies the
	// signal itself.
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
		return nil, fmt.Errorf("run %s is %s, so node %s is not waiting for a signal; `skein resume %s` first: %w",
			run.ID, run.Status, req.Node, run.ID, ErrNotWaiting)
	}
	var wn *workflow.Node
	parks := false
	if w, err := r.workflowOf(run, ""); err == nil {
		if wn = w.Node(req.Node); wn == nil {
			return nil, fmt.Errorf("run %s: its workflow %s has no node %q: %w", run.ID, w.File, req.Node, ErrNoNode)
		}
		spec, ok := r.cfg.Registry.Lookup(wn.Type)
		parks = ok && spec.Parks != nil && spec.Parks(wn.Params)
		if !parks && (!ok || spec.Role != node.RoleWait) {
			return nil, fmt.Errorf("node %s of run %s is a %s node; only a wait with until: signal (or an agent with approve_tools) takes signals: %w", req.Node, run.ID, wn.Type, ErrNotWaiting)
		}
	}
	hist, err := r.st.StepHistory(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	sent, err := r.st.Signals(ctx, run.ID, 0)
	if err != nil {
		return nil, err
	}
	name := req.Node
	var visit int
	why := ""
	if parks {
		visit, name, why, err = durable.ParkedVisit(req.Node, hist, sent)
	} else {
		visit, why = durable.WaitingVisit(req.Node, wn, hist, sent, r.clock.Now())
	}
	if err != nil {
		return nil, err
	}
	if visit == 0 {
		return nil, fmt.Errorf("node %s of run %s is not waiting for a signal (%s): %w", req.Node, run.ID, why, ErrNotWaiting)
	}
	sig := store.Signal{RunID: run.ID, Node: name, Visit: visit, Data: req.Data, CreatedAt: r.clock.Now().UTC().Truncate(time.Microsecond)}
	if err := r.st.SaveSignal(ctx, &sig); err != nil {
		if errors.Is(err, store.ErrExists) {
			return nil, fmt.Errorf("node %s of run %s has its signal already: %w", req.Node, run.ID, ErrNotWaiting)
		}
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
