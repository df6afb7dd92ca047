package queue

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/skeinhq/skein/internal/durable"
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

// Starter starts runs on the queue for a process that hands them to the
// workers (skein run, skein serve): one driver, made once, whose River
// client only inserts jobs, and the stored version of each workflow it
// started, saved on its first start. A start is then one transaction: the
// run, its first history event and steps, its first jobs.
type Starter struct {
	d        *Driver
	root     string
	red      *redact.Redactor
	versions durable.Versions
}

// Open migrates cfg.Store's database (Migrate) and returns a starter on
// it; the runs' folders are named under root, red masks what their names
// could show.
func Open(ctx context.Context, cfg Config, root string, red *redact.Redactor) (*Starter, error) {
	if _, err := Migrate(ctx, cfg.Store.Pool()); err != nil {
		return nil, err
	}
	cfg.Queues = nil
	d, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &Starter{d: d, root: root, red: red}, nil
}

// Cancel applies the cancel request of a queued run on the queue at once
// (Driver.Cancel): the jobs no worker took are withdrawn and a run with
// no node running ends cancelled.
func (s *Starter) Cancel(ctx context.Context, runID string) error {
	if err := s.d.Cancel(ctx, runID); err != nil {
		return fmt.Errorf("cancelling run %s on the queue: %w", runID, err)
	}
	return nil
}

// Jobs counts the jobs of one queue in one state.
type Jobs struct {
	Queue string
	// State is River's: available (waiting for a worker), scheduled (due
	// later: a retry's backoff, a timer), retryable, or running.
	State string
	Count int64
}

// JobStates are the states Starter.Jobs counts: the jobs of the queue
// that have not ended.
var JobStates = []string{"available", "scheduled", "retryable", "running"}

// Ready readies the starter for a server's intake, before it listens,
// and counts the queue's jobs that have not ended (Jobs). The pool opens
// as many connections as start transactions may be under way at once
// (startWriters; half the pool at most), each reading the tables a start
// writes: the first starts a server takes would each wait for a new
// connection, and pay a new database process's first reads of the
// tables.
func (s *Starter) Ready(ctx context.Context) ([]Jobs, error) {
	pool := s.d.cfg.Store.Pool()
	n := max(1, min(int(pool.Config().MaxConns)/2, startWriters))
	conns := make(chan *pgxpool.Conn, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			c, err := pool.Acquire(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			conns <- c // held until every one is open: n connections
			_, errs[i] = c.Exec(ctx, readySQL)
		})
	}
	wg.Wait()
	close(conns)
	for c := range conns {
		c.Release()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("opening the database's connections: %w", err)
	}
	return s.Jobs(ctx)
}

// readySQL reads, with no row, every table a run's start writes.
const readySQL = `SELECT 1 FROM runs, steps, events, ` + logTable + `, river_job, workflows WHERE false`

// Jobs counts the queue's jobs that have not ended, by queue and state
// (JobStates), for the queue depth a server exports.
func (s *Starter) Jobs(ctx context.Context) ([]Jobs, error) {
	rows, err := s.d.cfg.Store.Pool().Query(ctx,
		`SELECT queue, state::text, count(*) FROM river_job WHERE state = ANY($1::river_job_state[]) GROUP BY queue, state ORDER BY queue, state`, JobStates)
	if err != nil {
		return nil, fmt.Errorf("counting the queue's jobs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Jobs, error) {
		var j Jobs
		return j, row.Scan(&j.Queue, &j.State, &j.Count)
	})
	if err != nil {
		return nil, fmt.Errorf("counting the queue's jobs: %w", err)
	}
	// The default queue has every state, at 0 when it has no such job, so
	// a queue that drained counts 0 rather than nothing.
	for _, st := range JobStates {
		if !slices.ContainsFunc(out, func(j Jobs) bool { return j.Queue == DefaultQueue && j.State == st }) {
			out = append(out, Jobs{Queue: DefaultQueue, State: st})
		}
	}
	return out, nil
}

// Start starts a run of req.Workflow on the queue (Driver.Start): the
// workflow's file, read on the first start of the loaded workflow, is the
// run's version, and the run's folder is named under the starter's root,
// to be made when something needs it (the files of its checks, a resume
// on this machine).
func (s *Starter) Start(ctx context.Context, req StartRequest) (*store.Run, error) {
	w := req.Workflow
	ver, err := s.versions.Save(ctx, s.d.cfg.Store, w)
	if err != nil {
		return nil, err
	}
	rl, err := runlog.OpenOnDemand(s.root, w.Name, req.RunID, s.d.cfg.Clock.Now(), nil, s.red)
	if err != nil {
		return nil, err
	}
	req.Version, req.Dir = ver, rl.Dir()
	_ = rl.Close() // nothing was written
	return s.d.Start(ctx, req)
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
	// Claim takes over a child run a lost worker left, whether its
	// process lives (paused, cut off) or not, and returns the claimed
	// record: the lost worker's writes to the child fail from then on.
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
	// Stack is the absolute path of the parent's workflow file: the
	// child's own subworkflows count it in their depth and their
	// recursion check, as a local run's do (engine.Options.Stack).
	Stack []string
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
func (ws Workers) runChild(ctx context.Context, parent string, pw *workflow.Workflow, budget *engine.Budget, cw *workflow.Workflow, id string, in map[string]any) (*store.Run, error) {
	st := ws.Config.Store
	stack := []string{pw.File}
	if abs, err := filepath.Abs(pw.File); err == nil {
		stack[0] = abs
	}
	prev, err := st.Run(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ws.Execute(ctx, ChildRun{ID: id, Parent: parent, Workflow: cw, Inputs: in, Budget: budget, Stack: stack})
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
	return ws.Execute(ctx, ChildRun{ID: id, Parent: parent, Workflow: cw, Inputs: claimed.Inputs, Budget: budget, Stack: stack,
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
				return ws.runChild(ctx, runID, w, budget, cw, id, in)
			}}
	}
	d, err := New(cfg)
	if err != nil {
		return err
	}
	return d.Work(ctx, ws.Grace)
}
