package durable

import (
	"context"
	"errors"
	"sort"
	"sync"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Collector is a Recorder that keeps, in memory, the latest record of each
// step it is given (a dry run's, which must write nothing), as a store
// keeps it (StepFromRecord).
type Collector struct {
	mu    sync.Mutex
	steps map[[2]any]*store.Step
}

// Step implements engine.Recorder.
func (c *Collector) Step(rec *engine.StepRecord) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.steps == nil {
		c.steps = map[[2]any]*store.Step{}
	}
	c.steps[[2]any{rec.Node, rec.Visit}] = StepFromRecord(rec.RunID, rec)
	return nil
}

// Event implements engine.Recorder: events are not kept.
func (c *Collector) Event(engine.TimedEvent) error { return nil }

// Steps returns the steps in step order.
func (c *Collector) Steps() []*store.Step {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*store.Step, 0, len(c.steps))
	for _, s := range c.steps {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StepOrder < out[j].StepOrder })
	return out
}

// PlanChildren gives the subworkflow nodes of a dry run of a resume child
// runs that record nothing: each reuses what the child run of the same id
// recorded, as a resume's child does (Host.ChildFactory), and its steps
// are kept for Verdicts in Runs.
type PlanChildren struct {
	// History reads the steps of every generation of a child run; a run
	// not recorded yet has none (nil, nil).
	History  func(ctx context.Context, runID string) ([]*store.Step, error)
	Registry *node.Registry

	mu   sync.Mutex
	runs []DryRun
}

// Factory is the dry run's engine.Host.Child.
func (p *PlanChildren) Factory(ctx context.Context) engine.ChildFactory {
	return func(cw *workflow.Workflow, id string, _ map[string]any) (*engine.ChildRun, error) {
		hist, err := p.History(ctx, id)
		if err != nil {
			return nil, err
		}
		plan, err := engine.NewPlan(cw, p.Registry)
		if err != nil {
			return nil, err
		}
		col := &Collector{}
		return &engine.ChildRun{Recorder: col, Reuse: ForResume(hist).Reuse, Finish: func(res *engine.Result) error {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.runs = append(p.runs, DryRun{RunID: id, Child: true, Plan: plan, History: hist, Steps: col.Steps(), Open: res.Open})
			return nil
		}}, nil
	}
}

// StoredHistory reads a child run's steps from st (PlanChildren.History).
func StoredHistory(st store.Store) func(ctx context.Context, runID string) ([]*store.Step, error) {
	return func(ctx context.Context, id string) ([]*store.Step, error) {
		if _, err := st.Run(ctx, id); errors.Is(err, store.ErrNotFound) {
			return nil, nil
		} else if err != nil {
			return nil, err
		}
		return st.StepHistory(ctx, id)
	}
}

// Runs returns the child runs' dry runs, in the order they ended.
func (p *PlanChildren) Runs() []DryRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]DryRun(nil), p.runs...)
}

// PlanResume plays a resume of run as a dry run (engine.Options.DryRun)
// and says what it does with each step (Verdicts). opts is the resume's
// own (its job's inputs, payload, secrets, reuse of hist, wakes): the
// dry run records in memory, plans child runs from their histories and
// applies the signals recorded since the run last ran, as the resume
// does. old is the workflow the run ran with (nil when unknown).
func (h *Host) PlanResume(ctx context.Context, run *store.Run, plan *engine.Plan, old *workflow.Workflow, hist []*store.Step, opts engine.Options) ([]Verdict, error) {
	col := &Collector{}
	children := &PlanChildren{History: StoredHistory(h.Store), Registry: h.Registry}
	opts.Recorder, opts.Child, opts.DryRun = col, children.Factory(ctx), true
	if AwaitsSignals(plan.W, h.Registry) {
		sigs, err := h.Store.Signals(ctx, run.ID, 0)
		if err != nil {
			return nil, err
		}
		opts.Signals = Signals(sigs)
	}
	res, err := engine.NewDriver(h.Registry, h.Clock, 0).Execute(ctx, plan, opts)
	if err != nil {
		return nil, err
	}
	runs := append([]DryRun{{RunID: run.ID, Plan: plan, Old: old, History: hist, Steps: col.Steps(), Open: res.Open}}, children.Runs()...)
	return Verdicts(runs), nil
}
