package queue

import (
	"context"
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
	// RunChild executes the child run id of cw, a subworkflow node's, of
	// the queued run parent, or goes on with the one a stopped worker
	// left, and returns its final record (Child.Run). budget is the
	// parent run's.
	RunChild func(ctx context.Context, parent string, budget *engine.Budget, cw *workflow.Workflow, id string, in map[string]any) (*store.Run, error)
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
		return &Child{Registry: cfg.Registry, ParentID: runID, ParentFile: w.File, NodeID: t.Node.ID, Visit: t.Visit, Waiting: waiting,
			Run: func(ctx context.Context, cw *workflow.Workflow, id string, in map[string]any) (*store.Run, error) {
				return ws.RunChild(ctx, runID, budget, cw, id, in)
			}}
	}
	d, err := New(cfg)
	if err != nil {
		return err
	}
	return d.Work(ctx, ws.Grace)
}
