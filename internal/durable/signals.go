package durable

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// WaitingVisit finds the visit of wait node nodeID (wn: its definition,
// nil when unknown) whose step waits for a signal and has none yet, the
// earliest first: the latest record of each visit in the run's history,
// over every generation, is waiting for a signal — or running, for a wait
// that is about to (the step of a resumed run runs again before it
// waits). sent are the run's signals. When no visit waits, it returns 0
// and why, for people.
func WaitingVisit(nodeID string, wn *workflow.Node, hist []*store.Step, sent []store.Signal, now time.Time) (int, string) {
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
	if len(visits) > 0 && latest[visits[len(visits)-1]].Status != engine.StatusPending {
		why = "it is " + string(latest[visits[len(visits)-1]].Status)
	}
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
		return v, ""
	}
	if until != "signal" && wn != nil && !strings.Contains(until, "{{") {
		why = "it waits for " + waitWhat(wn) + ", not a signal"
	}
	return 0, why
}

// ParkedVisit finds the visit of a node that parks (node.Spec.Parks) whose
// latest record is waiting for a signal it has not got, and the name that
// signal is recorded under (engine.SignalName): the step waits once per
// tool call that needs approval, each wait taking its own signal.
// When no visit waits, it returns 0 and why, for people.
func ParkedVisit(nodeID string, hist []*store.Step, sent []store.Signal) (visit int, name, why string, err error) {
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
	why = "it has not started"
	if len(visits) > 0 && latest[visits[len(visits)-1]].Status != engine.StatusPending {
		why = "it is " + string(latest[visits[len(visits)-1]].Status)
	}
	for _, v := range visits {
		s := latest[v]
		if s.Status != engine.StatusWaiting {
			continue
		}
		_, d, err := Output(s)
		if err != nil {
			return 0, "", "", err
		}
		if d[engine.DirectiveAwait] != engine.AwaitSignal {
			continue
		}
		name := engine.SignalName(nodeID, d)
		if slices.ContainsFunc(sent, func(g store.Signal) bool { return g.Node == name && g.Visit == v }) {
			why = "its waiting step has its signal already"
			continue
		}
		return v, name, "", nil
	}
	return 0, "", why, nil
}

func waitWhat(n *workflow.Node) string {
	if u, ok := n.Params["until"].(string); ok {
		return "until " + u
	}
	return "a duration"
}

// Signalled reports whether a signal is on record in st for one of the
// steps of run runID that wait.
func Signalled(ctx context.Context, st store.Store, runID string, awaiting []engine.Await) bool {
	if len(awaiting) == 0 {
		return false
	}
	sigs, err := st.Signals(ctx, runID, 0)
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

// AwaitsSignals reports whether a workflow may wait for a signal: it has a
// wait node whose until: is signal or a template, or a node that parks
// for one.
func AwaitsSignals(w *workflow.Workflow, reg *node.Registry) bool {
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
