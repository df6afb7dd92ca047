package runlog

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/workflow"
)

// StepLister is a result whose steps a traced run's node files list
// (rundoc.Doc): every step of the run, in step order.
type StepLister interface {
	StepRecords() []record.Step
}

// NodeRun is <node>/run.json of a run traced with workflow.TraceNodes:
// the node's visits, each the step as the run's document lists it, in
// step order. Status is the last visit's, StartedAt the first visit's
// start, FinishedAt the last visit's end, and Attempts the attempts of
// every visit.
type NodeRun struct {
	ExecutionID string         `json:"execution_id"`
	Workflow    string         `json:"workflow"`
	Node        string         `json:"node"`
	Type        string         `json:"type"`
	Trace       workflow.Trace `json:"trace"`
	Status      record.Status  `json:"status"`
	StartedAt   *time.Time     `json:"started_at"`
	FinishedAt  *time.Time     `json:"finished_at"`
	Attempts    int            `json:"attempts"`
	Visits      []*record.Step `json:"visits"`
}

// TraceNodes makes Finish write, besides run.json, the node files of a
// run traced with workflow.TraceNodes: for every node with a step in the
// result (a StepLister), <node>/run.json (a NodeRun) and
// <node>/events.jsonl (the node's events, lines as in the run's
// events.jsonl). events reads the run's events once Finish is called:
// the committed ones, from the store. An on-demand folder is made then.
// Call it before Finish.
func (w *Writer) TraceNodes(events func() ([]record.EventRow, error)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nodeEvents = events
}

// writeNodes writes the node files of a traced run from the result's
// steps and the run's events.
func (w *Writer) writeNodes(result any) error {
	sl, ok := result.(StepLister)
	if !ok {
		return nil
	}
	steps := sl.StepRecords()
	var order []string
	byNode := map[string]*NodeRun{}
	for i := range steps {
		s := &steps[i]
		n := byNode[s.Node]
		if n == nil {
			if err := w.checkID(s.Node); err != nil {
				return err
			}
			n = &NodeRun{ExecutionID: w.runID, Workflow: w.workflow, Node: s.Node, Type: s.Type, Trace: workflow.TraceNodes}
			byNode[s.Node] = n
			order = append(order, s.Node)
		}
		n.Visits = append(n.Visits, s)
		n.Status = s.Status
		n.Attempts += s.Attempts
		if n.StartedAt == nil {
			n.StartedAt = s.StartedAt
		}
		if s.FinishedAt != nil {
			n.FinishedAt = s.FinishedAt
		}
	}
	evs, err := w.nodeEvents()
	if err != nil {
		return fmt.Errorf("reading the events of run %s for its node files: %w", w.runID, err)
	}
	encs := make(map[string]*eventEncoder, len(order))
	for _, ev := range evs {
		if byNode[ev.Node] == nil {
			continue // the run's own events, and those of nodes without a step
		}
		enc := encs[ev.Node]
		if enc == nil {
			enc = &eventEncoder{redact: w.redact}
			encs[ev.Node] = enc
		}
		te := engine.TimedEvent{Time: ev.Time, Event: record.Event{Type: ev.Type, Node: ev.Node, Visit: ev.Visit, Iteration: ev.Iteration, Data: ev.Data}}
		if err := enc.add(te); err != nil {
			return fmt.Errorf("encoding %s event for %s: %w", ev.Type, filepath.Join(w.dir, ev.Node, eventsFile), err)
		}
	}
	stale := !w.fresh
	for _, id := range order {
		data, err := w.encode(byNode[id])
		if err != nil {
			return fmt.Errorf("encoding %s: %w", filepath.Join(w.dir, id, runFile), err)
		}
		var lines []byte
		if enc := encs[id]; enc != nil {
			lines = enc.buf.Bytes()
		}
		if err := w.writeNode(id, data, lines, stale); err != nil {
			return err
		}
	}
	return nil
}

// writeNode writes the run.json and events.jsonl of node id into its
// folder, made if need be, through a root opened on the folder (one
// lookup of the folder for both files).
func (w *Writer) writeNode(id string, run, events []byte, stale bool) error {
	if err := w.mkdir(id); err != nil {
		return err
	}
	dir := filepath.Join(w.dir, id)
	r, err := w.root.OpenRoot(id)
	if err != nil {
		return pathError("cannot open", dir, err)
	}
	err = writeFileAtomic(r, dir, runFile, run, stale)
	if err == nil {
		err = writeFileAtomic(r, dir, eventsFile, events, stale)
	}
	return errors.Join(err, r.Close())
}
