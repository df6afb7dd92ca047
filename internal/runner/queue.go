package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm/registry"
	mcppool "github.com/skeinhq/skein/internal/mcp"
	httpkind "github.com/skeinhq/skein/internal/nodes/http"
	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/internal/services"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Runs on the queue (DESIGN §7): with a Postgres store, a run's nodes may
// be jobs that `skein worker` processes run, on this machine or others.

// ErrNoQueue: the store is not Postgres, so runs cannot be queued.
var ErrNoQueue = errors.New("queued runs need a Postgres database")

// pgStore returns the runner's Postgres store, with the queue's tables.
func (r *Runner) pgStore(ctx context.Context) (*postgres.Store, error) {
	pg, ok := r.st.(*postgres.Store)
	if !ok {
		return nil, usagef("the nodes of queued runs are jobs in Postgres: give --db postgres://user@host:5432/db (%v)", ErrNoQueue)
	}
	r.queueOnce.Do(func() { _, r.queueErr = queue.Migrate(ctx, pg.Pool()) })
	if r.queueErr != nil {
		return nil, r.queueErr
	}
	return pg, nil
}

// Enqueue starts a run on the queue and follows it to its end: its steps
// and events go to the observer as the workers record them. Cancelling
// ctx cancels the run as a local run's first Ctrl-C does — nothing new
// starts, its nodes no worker took are skipped at once, running nodes
// finish — and follows it to its end; closing o.Hard after that has the
// workers stop the running nodes. Closing o.Hard before it, or o.Leave,
// stops following at once, the run going on.
// A subworkflow node's child runs in the process of the worker that runs
// the node (queue.Child). Queued runs do not run delivery yet. Their records
// are in the database; their folder is made for the files of their checks
// (run here when the run ends) or of a resume here.
func (r *Runner) Enqueue(ctx context.Context, req StartRequest) (*Result, error) {
	if req.Record || req.Replay != nil || req.Workflow.Record {
		// The nodes would run on workers, out of this cassette's reach.
		return nil, usagef("%s: a recorded or replayed run runs its nodes in one process, not on the queue's workers; run it with --local", req.Workflow.File)
	}
	pg, err := r.pgStore(ctx)
	if err != nil {
		return nil, err
	}
	w := req.Workflow
	src, err := workflow.ReadFile(w.File)
	if err != nil {
		return nil, err
	}
	plan, err := r.plan(w)
	if err != nil {
		return nil, &InvalidError{File: w.File, Diagnostics: workflow.Diagnostics{{File: w.File, Severity: workflow.Error, Message: err.Error()}}}
	}
	if _, err := plan.StartNodes(req.Trigger); err != nil {
		return nil, usagef("%s: %v", w.File, err)
	}
	d, err := queue.New(queue.Config{Store: pg, Registry: r.cfg.Registry, Blobs: r.blobs, Clock: r.clock})
	if err != nil {
		return nil, err
	}
	id := req.RunID
	if id == "" {
		id = NewRunID()
	}
	// The run's folder is named now and made when needed: by a resume
	// here, which runs the rest of a failed run in this process.
	rl, err := runlog.OpenOnDemand(r.cfg.Dir, w.Name, id, r.clock.Now(), nil, r.redactor(nil))
	if err != nil {
		return nil, err
	}
	dir := rl.Dir()
	_ = rl.Close() // nothing was written
	run, err := d.Start(ctx, queue.StartRequest{RunID: id, Workflow: w, Source: src, Inputs: req.Inputs, Trigger: req.Trigger,
		Payload: req.Payload, Dir: dir})
	if err != nil {
		return nil, err
	}
	if o := req.Observer; o != nil {
		o.Started(run, false)
	}
	return r.follow(ctx, pg, w, run, req.Options)
}

// follow follows a queued run until it ends (queue.Follow): its records
// go to the observer; a run that ended has its checks run here.
func (r *Runner) follow(ctx context.Context, pg *postgres.Store, w *workflow.Workflow, run *store.Run, o Options) (*Result, error) {
	f := queue.Follow{Store: pg, Registry: r.cfg.Registry, Workflow: w, RunID: run.ID, DBName: postgres.Redact(r.cfg.DB),
		ParkOnSignals: o.Park != nil && o.Park.SignalsOnly, Hard: o.Hard, Leave: o.Leave,
		Cancel: func(ctx context.Context, letFinish bool) error {
			return r.cancelFollowed(ctx, run.ID, letFinish, o.Observer)
		}}
	if obs := o.Observer; obs != nil {
		f.Step, f.Event = obs.Step, obs.Event
		f.Note = func(kind, text string) { obs.Note(Note{Kind: kind, Text: text}) }
	}
	out, err := f.Run(ctx)
	if err != nil {
		return nil, err
	}
	res := &Result{Run: out.Run, Engine: out.Result, redact: r.redactor(nil)}
	if out.Ended && check.Has(w) {
		res.Verdict, res.Err = r.verifyQueued(context.WithoutCancel(ctx), w, out.Run, out.Result, o)
	}
	return res, nil
}

// cancelFollowed cancels a run that follow follows, on the queue at once.
// Once the request is recorded the workers apply it: a failure to apply
// it here is told to obs, and following goes on.
func (r *Runner) cancelFollowed(ctx context.Context, runID string, letFinish bool, obs Observer) error {
	if _, err := r.st.RequestCancel(ctx, runID, letFinish); err != nil {
		return err
	}
	if err := r.cancelQueued(ctx, runID); err != nil && obs != nil {
		obs.Note(Note{Kind: "problem", Text: fmt.Sprintf("the cancel is recorded for the workers, but applying it here failed: %v", err)})
	}
	return nil
}

// queued reports whether a run is a queued run that has not ended.
func queued(run *store.Run) bool {
	return run.Owner.Host == queue.OwnerHost && !run.Status.Final()
}

// cancelQueued applies the cancel request of a queued run on the queue at
// once (queue.Driver.Cancel): the jobs no worker took are withdrawn and a
// run with no node running ends cancelled.
func (r *Runner) cancelQueued(ctx context.Context, runID string) error {
	pg, err := r.pgStore(ctx)
	if err != nil {
		return err
	}
	d, err := queue.New(queue.Config{Store: pg, Registry: r.cfg.Registry, Blobs: r.blobs})
	if err != nil {
		return err
	}
	if err := d.Cancel(ctx, runID); err != nil {
		return fmt.Errorf("cancelling run %s on the queue: %w", runID, err)
	}
	return nil
}

// verifyQueued runs the checks of a queued run that ended, in the process
// that follows it (skein run, the server that started it): the
// verdict files go to the run's folder, made now, and the verdict events
// to the database.
func (r *Runner) verifyQueued(ctx context.Context, w *workflow.Workflow, run *store.Run, res *engine.Result, o Options) (*check.RunVerdict, error) {
	secrets, err := resolveSecrets(w, r.cfg.LookupEnv, o.SecretsFile)
	if err != nil {
		return nil, err
	}
	red := r.redactor(secrets)
	rl, err := runlog.ReopenOnDemand(run.Dir, w.Name, run.ID, run.StartedAt, nil, red)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rl.Close() }()
	if err := rl.Materialize(); err != nil {
		return nil, err
	}
	v, err := r.verify(ctx, w, res, run.ID, rl.Dir(), secrets, red, nil)
	if v == nil {
		return nil, err
	}
	evs := check.Events(v, r.clock.Now())
	sevs := make([]store.Event, len(evs))
	for i, ev := range evs {
		sevs[i] = store.Event{Time: ev.Time, Type: ev.Type, Node: ev.Node, Visit: ev.Visit, Iteration: ev.Iteration, Data: ev.Data}
	}
	if aerr := r.st.AppendEvents(ctx, run.ID, sevs); aerr != nil && err == nil {
		err = aerr
	}
	return v, err
}

// WorkRequest runs queue workers.
type WorkRequest struct {
	// Queues are the queues worked, each with the number of its jobs run
	// at once.
	Queues map[string]int
	// Grace is how long running nodes may finish after ctx ends (0: as
	// long as they take).
	Grace       time.Duration
	SecretsFile string
	DenyPrivate bool
	// RescueAfter is how long this worker may go silent before the nodes
	// it runs count as lost and run again elsewhere (0: the default,
	// queue.DefaultRescueAfter).
	RescueAfter time.Duration
	// Logger gets what the worker reports: lost workers, a database
	// that went away and came back (nil: nothing).
	Logger *slog.Logger
}

// Work runs queue workers until ctx ends, then drains them (see
// queue.Driver.Work).
func (r *Runner) Work(ctx context.Context, req WorkRequest) error {
	pg, err := r.pgStore(ctx)
	if err != nil {
		return err
	}
	// MCP servers are pooled per worker: runs whose servers start the
	// same way (same command, arguments, environment and secrets) share
	// them; a server no run uses stops after a minute.
	shared := &mcppool.Shared{}
	defer func() { _ = shared.Close() }()
	d, err := queue.New(queue.Config{
		Store: pg, Registry: r.cfg.Registry, Queues: req.Queues, Blobs: r.blobs, RescueAfter: req.RescueAfter, Logger: req.Logger,
		Clock: r.clock,
		Secrets: func(w *workflow.Workflow) (map[string]string, error) {
			return resolveSecrets(w, r.cfg.LookupEnv, req.SecretsFile)
		},
		Services: func(w *workflow.Workflow, inputs map[string]any, secrets map[string]string) (*node.Services, func()) {
			pool, release := shared.Acquire(w.MCPServers, mcppool.Scope(inputs, secrets))
			models := registry.New(w, r.cfg.LookupEnv)
			models.Render = secretRenderer(secrets)
			return services.Build(httpkind.Policy{DenyPrivate: req.DenyPrivate}, w, pool, models, services.Memory{Store: pg, Workflow: w.Name}), release
		},
		Deliver: func(ctx context.Context, run *store.Run, generation int, w *workflow.Workflow) (time.Duration, error) {
			token := queue.DeliveryToken(run.ID, generation)
			o := Options{SecretsFile: req.SecretsFile, DenyPrivate: req.DenyPrivate, Hard: ctx.Done()}
			next, err := r.goOnDelivering(ctx, run, generation, w, o, store.Owner{Host: r.host, PID: r.pid, Token: token}, token, true)
			if err == nil && ctx.Err() != nil {
				err = ctx.Err() // stopped: the job is given again
			}
			return next, err
		},
		Children: func(runID string, w *workflow.Workflow, t *engine.Task, _ map[string]string, budget *engine.Budget, waiting func()) node.Children {
			opts := Options{SecretsFile: req.SecretsFile, DenyPrivate: req.DenyPrivate, Concurrency: 16}
			return &queue.Child{Registry: r.cfg.Registry, ParentID: runID, ParentFile: w.File, NodeID: t.Node.ID, Visit: t.Visit, Waiting: waiting,
				Run: func(ctx context.Context, cw *workflow.Workflow, id string, in map[string]any) (*store.Run, error) {
					return r.runQueueChild(ctx, runID, budget, opts, cw, id, in)
				}}
		},
	})
	if err != nil {
		return err
	}
	return d.Work(ctx, req.Grace)
}

// runQueueChild runs the child run id of a subworkflow node of a queued
// run, parent, in a worker (queue.Child), or goes on with the one a
// stopped worker left, and returns its final record. budget is the parent
// run's: the child's own limits hold, and what it spends counts against
// the parent's too.
func (r *Runner) runQueueChild(ctx context.Context, parent string, budget *engine.Budget, opts Options, cw *workflow.Workflow, id string, in map[string]any) (*store.Run, error) {
	// The node's context ends when its run's cancel stops running nodes,
	// or its worker stops them: the child's running nodes stop with it,
	// as a local child's stop with its parent's (Options.Hard).
	o := opts
	o.Hard = ctx.Done()
	prev, err := r.st.Run(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		res, err := r.execute(ctx, job{w: cw, inputs: in, runID: id, parent: parent, budget: budget}, o)
		if err != nil {
			return nil, err
		}
		return res.Run, nil
	case err != nil:
		return nil, err
	case engine.RunStatus(prev.Status) == engine.RunCompleted:
		return prev, nil
	}
	if live, err := r.liveOwner(prev); err != nil {
		return nil, err
	} else if live {
		return nil, ownedError(prev)
	}
	hist, err := r.st.StepHistory(ctx, id)
	if err != nil {
		return nil, err
	}
	claimed, err := r.claim(ctx, prev)
	if err != nil {
		return nil, err
	}
	// The parent's history does not hold what earlier executions of the
	// child spent; the child goes on from it.
	spent := engine.Spent{Tokens: claimed.Tokens, CostUSD: claimed.CostUSD}
	budget.Add(spent.Tokens, spent.CostUSD)
	res, err := r.execute(ctx, job{w: cw, inputs: claimed.Inputs, runID: id, parent: parent,
		resume: claimed, reuse: durable.ForResume(hist), wakes: durable.Wakes(hist), spent: spent, budget: budget}, o)
	if err != nil {
		return nil, err
	}
	return res.Run, nil
}
