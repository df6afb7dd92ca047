package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
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
	if parks {
		visit, name, err = r.parkedVisit(run, req.Node, hist, sent)
	} else {
		visit, err = r.waitingVisit(run, req.Node, wn, hist, sent)
	}
	if err != nil {
		return nil, err
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

// waitingVisit finds the visit of node whose step waits for a signal and
// has none yet, the earliest first: the latest record of each visit, over
// every generation, is waiting for a signal — or running, for a wait that
// is about to (the step of a resumed run runs again before it waits).
func (r *Runner) waitingVisit(run *store.Run, nodeID string, wn *workflow.Node, hist []*store.Step, sent []store.Signal) (int, error) {
	latest := map[int]*store.Step{}
	for _, s := range hist { // oldest generation first
		if s.Node == nodeID {
			latest[s.Visit] = s
		}
	}
	signalled := map[int]bool{}
	for _, s := range sent {
		if s.Node == nodeID {
			signalled[s.Visit] = true
		}
	}
	until := ""
	if wn != nil {
		until, _ = wn.Params["until"].(string)
	}
	visits := make([]int, 0, len(latest))
	for v := range latest {
		visits = append(visits, v)
	}
	sort.Ints(visits)
	why := "it has not started"
	if len(visits) > 0 {
		why = "it is " + string(latest[visits[len(visits)-1]].Status)
	}
	now := r.clock.Now()
	for _, v := range visits {
		s := latest[v]
		switch {
		case s.Status == engine.StatusWaiting && s.Params["until"] == "signal":
		case s.Status == engine.StatusRunning && until == "signal":
		default:
			continue
		}
		if signalled[v] {
			why = "its waiting step has its signal already"
			continue
		}
		if s.WakeAt != nil && s.Status == engine.StatusWaiting && !now.Before(*s.WakeAt) {
			why = "its timeout passed at " + s.WakeAt.UTC().Format(time.RFC3339)
			continue
		}
		return v, nil
	}
	if until != "signal" && wn != nil && !strings.Contains(until, "{{") {
		why = "it waits for " + waitWhat(wn) + ", not a signal"
	}
	return 0, fmt.Errorf("node %s of run %s is not waiting for a signal (%s): %w", nodeID, run.ID, why, ErrNotWaiting)
}

// parkedVisit finds the visit of a node that parks (node.Spec.Parks) whose
// latest record is waiting for a signal it has not got, and the name that
// signal is recorded under (engine.SignalName): the step waits once per
// tool call that needs approval, each wait taking its own signal.
func (r *Runner) parkedVisit(run *store.Run, nodeID string, hist []*store.Step, sent []store.Signal) (int, string, error) {
	latest := map[int]*store.Step{}
	for _, s := range hist { // oldest generation first
		if s.Node == nodeID {
			latest[s.Visit] = s
		}
	}
	visits := make([]int, 0, len(latest))
	for v := range latest {
		visits = append(visits, v)
	}
	sort.Ints(visits)
	why := "it has not started"
	if len(visits) > 0 {
		why = "it is " + string(latest[visits[len(visits)-1]].Status)
	}
	for _, v := range visits {
		s := latest[v]
		if s.Status != engine.StatusWaiting {
			continue
		}
		_, d, err := durable.Output(s)
		if err != nil {
			return 0, "", err
		}
		if d[engine.DirectiveAwait] != engine.AwaitSignal {
			continue
		}
		name := engine.SignalName(nodeID, d)
		if slices.ContainsFunc(sent, func(g store.Signal) bool { return g.Node == name && g.Visit == v }) {
			why = "its waiting step has its signal already"
			continue
		}
		return v, name, nil
	}
	return 0, "", fmt.Errorf("node %s of run %s is not waiting for a signal (%s): %w", nodeID, run.ID, why, ErrNotWaiting)
}

func waitWhat(n *workflow.Node) string {
	if u, ok := n.Params["until"].(string); ok {
		return "until " + u
	}
	return "a duration"
}

// signalled reports whether a signal is on record for one of the steps
// that wait.
func (r *Runner) signalled(ctx context.Context, runID string, awaiting []engine.Await) bool {
	if len(awaiting) == 0 {
		return false
	}
	sigs, err := r.st.Signals(ctx, runID, 0)
	if err != nil {
		return false
	}
	for _, s := range sigs {
		for _, a := range awaiting {
			if a.Signal == s.Node && a.Visit == s.Visit {
				return true
			}
		}
	}
	return false
}

// Due returns the waiting runs whose wake-up time has come, for a server
// to resume.
func (r *Runner) Due(ctx context.Context) ([]*store.Run, error) {
	return r.st.ListRuns(ctx, store.RunFilter{DueBy: r.clock.Now()})
}

// awaitsSignals reports whether a workflow may wait for a signal: it has a
// wait node whose until: is signal or a template.
func awaitsSignals(w *workflow.Workflow, reg *node.Registry) bool {
	for _, n := range w.Nodes {
		spec, ok := reg.Lookup(n.Type)
		if ok && spec.Parks != nil && spec.Parks(n.Params) {
			return true
		}
		if !ok || spec.Role != node.RoleWait {
			continue
		}
		if u, _ := n.Params["until"].(string); u == "signal" || strings.Contains(u, "{{") {
			return true
		}
	}
	return false
}

func engineSignal(s store.Signal) engine.Signal {
	return engine.Signal{Node: s.Node, Visit: s.Visit, Data: s.Data, At: s.CreatedAt}
}

func engineSignals(sigs []store.Signal) []engine.Signal {
	out := make([]engine.Signal, len(sigs))
	for i, s := range sigs {
		out[i] = engineSignal(s)
	}
	return out
}

func lastSeq(sigs []store.Signal) int64 {
	if len(sigs) == 0 {
		return 0
	}
	return sigs[len(sigs)-1].Seq
}
