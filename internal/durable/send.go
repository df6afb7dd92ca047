package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Errors of SaveSignal.
var (
	// ErrNoNode: the run's workflow has no node of that id.
	ErrNoNode = errors.New("no such node")
	// ErrNotWaiting: no step of the node waits for a signal (it has not
	// started, ran already, timed out, or is not a wait with until:
	// signal), or its waiting step has its signal already.
	ErrNotWaiting = errors.New("the node is not waiting for a signal")
)

// SaveSignal records data as the signal for the step of node nodeID of run
// that waits for one: a wait with until: signal (WaitingVisit), or a node
// that parks, such as an agent whose tool call waits for approval
// (ParkedVisit). w is the run's workflow, nil when it cannot be loaded (the
// node is then taken for a wait). It fails with ErrNoNode or ErrNotWaiting.
func SaveSignal(ctx context.Context, st store.Store, reg *node.Registry, w *workflow.Workflow, run *store.Run, nodeID string, data any, now time.Time) (store.Signal, error) {
	var wn *workflow.Node
	parks := false
	if w != nil {
		if wn = w.Node(nodeID); wn == nil {
			return store.Signal{}, fmt.Errorf("run %s: its workflow %s has no node %q: %w", run.ID, w.File, nodeID, ErrNoNode)
		}
		spec, ok := reg.Lookup(wn.Type)
		parks = ok && spec.Parks != nil && spec.Parks(wn.Params)
		if !parks && (!ok || spec.Role != node.RoleWait) {
			return store.Signal{}, fmt.Errorf("node %s of run %s is a %s node; only a wait with until: signal (or an agent with approve_tools) takes signals: %w", nodeID, run.ID, wn.Type, ErrNotWaiting)
		}
	}
	hist, err := st.StepHistory(ctx, run.ID)
	if err != nil {
		return store.Signal{}, err
	}
	sent, err := st.Signals(ctx, run.ID, 0)
	if err != nil {
		return store.Signal{}, err
	}
	name := nodeID
	var visit int
	why := ""
	if parks {
		visit, name, why, err = ParkedVisit(nodeID, hist, sent)
	} else {
		visit, why = WaitingVisit(nodeID, wn, hist, sent, now)
	}
	if err != nil {
		return store.Signal{}, err
	}
	if visit == 0 {
		return store.Signal{}, fmt.Errorf("node %s of run %s is not waiting for a signal (%s): %w", nodeID, run.ID, why, ErrNotWaiting)
	}
	sig := store.Signal{RunID: run.ID, Node: name, Visit: visit, Data: data, CreatedAt: now.UTC().Truncate(time.Microsecond)}
	if err := st.SaveSignal(ctx, &sig); err != nil {
		if errors.Is(err, store.ErrExists) {
			return store.Signal{}, fmt.Errorf("node %s of run %s has its signal already: %w", nodeID, run.ID, ErrNotWaiting)
		}
		return store.Signal{}, err
	}
	return sig, nil
}
