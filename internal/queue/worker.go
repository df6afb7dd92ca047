package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm/registry"
	mcppool "github.com/skeinhq/skein/internal/mcp"
	httpkind "github.com/skeinhq/skein/internal/nodes/http"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/internal/secrets"
	"github.com/skeinhq/skein/internal/services"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Enqueue starts a run of req.Workflow on the queue (Driver.Start): the
// workflow's file, read now, is the run's version, and the run's folder
// is named under root, to be made when something needs it (the files of
// its checks, a resume on this machine).
func Enqueue(ctx context.Context, cfg Config, root string, red *redact.Redactor, req StartRequest) (*store.Run, error) {
	w := req.Workflow
	src, err := workflow.ReadFile(w.File)
	if err != nil {
		return nil, err
	}
	d, err := New(cfg)
	if err != nil {
		return nil, err
	}
	rl, err := runlog.OpenOnDemand(root, w.Name, req.RunID, d.cfg.Clock.Now(), nil, red)
	if err != nil {
		return nil, err
	}
	req.Source, req.Dir = src, rl.Dir()
	_ = rl.Close() // nothing was written
	return d.Start(ctx, req)
}

// CancelRun applies the cancel request of a queued run on the queue at
// once (Driver.Cancel): the jobs no worker took are withdrawn and a run
// with no node running ends cancelled.
func CancelRun(ctx context.Context, cfg Config, runID string) error {
	d, err := New(cfg)
	if err != nil {
		return err
	}
	if err := d.Cancel(ctx, runID); err != nil {
		return fmt.Errorf("cancelling run %s on the queue: %w", runID, err)
	}
	return nil
}

// AppendEvents records events of a run that were made outside its
// workers (the verdict of its checks, run where the run is followed).
func AppendEvents(ctx context.Context, st store.Store, runID string, evs []engine.TimedEvent) error {
	return st.AppendEvents(ctx, runID, storeEvents(evs))
}

func storeEvents(evs []engine.TimedEvent) []store.Event {
	sevs := make([]store.Event, len(evs))
	for i, ev := range evs {
		sevs[i] = store.Event{Time: ev.Time, Type: ev.Type, Node: ev.Node, Visit: ev.Visit, Iteration: ev.Iteration, Data: ev.Data}
	}
	return sevs
}

// Workers are the queue workers of a process (skein worker, skein serve
// --worker): a Driver with Config.Queues whose tasks get the services of
// this machine and run their child workflows here.
type Workers struct {
	// Config is the driver's; its Services and Children are set by Work.
	Config Config
	// Grace is how long running nodes may finish after ctx ends (0: as
	// long as they take).
	Grace time.Duration
	// LookupEnv reads the environment the models' configs see.
	LookupEnv func(string) (string, bool)
	// DenyPrivate keeps HTTP nodes from private addresses.
	DenyPrivate bool
	// Execute runs a child run of a subworkflow node in this process, as
	// a local run, and returns its final record.
	Execute func(ctx context.Context, c ChildRun) (*store.Run, error)
	// Claim takes over a child run a stopped worker left, refusing one
	// whose owner is alive, and returns the claimed record.
	Claim func(ctx context.Context, prev *store.Run) (*store.Run, error)
}

// ChildRun is a child run of a subworkflow node of a queued run.
type ChildRun struct {
	ID       string
	Parent   string
	Workflow *workflow.Workflow
	Inputs   map[string]any
	// Budget is the parent run's: the child's own limits hold, and what
	// it spends counts against the parent's too.
	Budget *engine.Budget
	// Resume, when set, is the claimed record of the child a stopped
	// worker left; History is its steps, Spent what its earlier
	// executions spent.
	Resume  *store.Run
	History []*store.Step
	Spent   engine.Spent
}

// runChild runs the child run id of a subworkflow node of the queued run
// parent, or goes on with the one a stopped worker left (a completed one
// answers at once), and returns its final record.
func (ws Workers) runChild(ctx context.Context, parent string, budget *engine.Budget, cw *workflow.Workflow, id string, in map[string]any) (*store.Run, error) {
	st := ws.Config.Store
	prev, err := st.Run(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ws.Execute(ctx, ChildRun{ID: id, Parent: parent, Workflow: cw, Inputs: in, Budget: budget})
	case err != nil:
		return nil, err
	case engine.RunStatus(prev.Status) == engine.RunCompleted:
		return prev, nil
	}
	hist, err := st.StepHistory(ctx, id)
	if err != nil {
		return nil, err
	}
	claimed, err := ws.Claim(ctx, prev)
	if err != nil {
		return nil, err
	}
	// The parent's history does not hold what earlier executions of the
	// child spent; the child goes on from it.
	spent := engine.Spent{Tokens: claimed.Tokens, CostUSD: claimed.CostUSD}
	budget.Add(spent.Tokens, spent.CostUSD)
	return ws.Execute(ctx, ChildRun{ID: id, Parent: parent, Workflow: cw, Inputs: claimed.Inputs, Budget: budget,
		Resume: claimed, History: hist, Spent: spent})
}

// Work runs the workers until ctx ends, then drains them (Driver.Work).
func (ws Workers) Work(ctx context.Context) error {
	// MCP servers are pooled per worker: runs whose servers start the
	// same way (same command, arguments, environment and secrets) share
	// them; a server no run uses stops after a minute.
	shared := &mcppool.Shared{}
	defer func() { _ = shared.Close() }()
	cfg := ws.Config
	cfg.Services = func(w *workflow.Workflow, inputs map[string]any, sec map[string]string) (*node.Services, func()) {
		pool, release := shared.Acquire(w.MCPServers, mcppool.Scope(inputs, sec))
		models := registry.New(w, ws.LookupEnv)
		models.Render = secrets.Renderer(sec)
		mem := services.Memory{Store: cfg.Store, Workflow: w.Name}
		return services.Build(httpkind.Policy{DenyPrivate: ws.DenyPrivate}, w, pool, models, mem), release
	}
	cfg.Children = func(runID string, w *workflow.Workflow, t *engine.Task, _ map[string]string, budget *engine.Budget, waiting func()) node.Children {
		return &Child{Registry: cfg.Registry, ParentID: runID, Parent: w, Node: t.Node.Node, NodeID: t.Node.ID, Visit: t.Visit, Waiting: waiting,
			Run: func(ctx context.Context, cw *workflow.Workflow, id string, in map[string]any) (*store.Run, error) {
				return ws.runChild(ctx, runID, budget, cw, id, in)
			}}
	}
	d, err := New(cfg)
	if err != nil {
		return err
	}
	return d.Work(ctx, ws.Grace)
}
