package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm/registry"
	mcppool "github.com/skeinhq/skein/internal/mcp"
	httpkind "github.com/skeinhq/skein/internal/nodes/http"
	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/runlog"
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

// WaitingHint is how long Enqueue follows a run whose jobs nobody takes
// before it says that no worker runs.
const WaitingHint = 3 * time.Second

// Enqueue starts a run on the queue and follows it to its end: its steps
// and events go to the observer as the workers record them. Cancelling
// ctx cancels the run as a local run's first Ctrl-C does — nothing new
// starts, its nodes no worker took are skipped at once, running nodes
// finish — and follows it to its end; closing o.Hard after that has the
// workers stop the running nodes. Closing o.Hard before it, or o.Leave,
// stops following at once, the run going on.
// A subworkflow node's child runs in the process of the worker that runs
// the node (queueChild). Queued runs do not run delivery yet. Their records
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

// follow polls a queued run until it ends.
//
// With o.Park set to park for signals only (the CLI's), following ends as
// an execution that parks does: when the run only waits for signals. The
// result then says waiting, the run goes on with the workers as soon as a
// signal comes.
func (r *Runner) follow(ctx context.Context, pg *postgres.Store, w *workflow.Workflow, run *store.Run, o Options) (*Result, error) {
	const every = 100 * time.Millisecond
	seen := map[[2]any]string{}
	var seq int64
	cancelled := false
	hinted := false
	started := time.Now()
	t := time.NewTicker(every)
	defer t.Stop()
	// While the database is unreachable (it restarts), following waits
	// with backoff and goes on where it was: the workers go on too.
	lost := backoff.NewExponentialBackOff()
	lost.InitialInterval, lost.MaxInterval = every, 5*time.Second
	for {
		cur, err := r.st.Run(context.WithoutCancel(ctx), run.ID)
		var steps []*store.Step
		var evs []store.Event
		if err == nil {
			steps, err = r.st.Steps(context.WithoutCancel(ctx), run.ID)
		}
		if err == nil {
			evs, err = r.st.Events(context.WithoutCancel(ctx), run.ID, seq, 1000)
		}
		if postgres.Transient(err) {
			wait := time.NewTimer(lost.NextBackOff())
			select {
			case <-wait.C:
				continue
			case <-o.Hard:
				wait.Stop()
				return nil, fmt.Errorf("stopped following run %s while the database was unreachable (%w); its workers go on with it", run.ID, err)
			case <-o.Leave:
				wait.Stop()
				return nil, fmt.Errorf("left run %s to its workers while the database was unreachable: %w", run.ID, err)
			}
		}
		if err != nil {
			return nil, err
		}
		lost.Reset()
		res := resultFromStore(cur, steps)
		if o.Observer != nil {
			for _, ev := range evs {
				o.Observer.Event(engine.TimedEvent{Time: ev.Time, Event: engine.Event{Type: ev.Type, Node: ev.Node, Visit: ev.Visit, Iteration: ev.Iteration, Data: ev.Data}})
			}
			for _, rec := range res.Steps {
				key := [2]any{rec.Node, rec.Visit}
				state := fmt.Sprintf("%s/%d", rec.Status, rec.Attempts)
				if seen[key] != state {
					seen[key] = state
					o.Observer.Step(*rec)
				}
			}
		}
		if len(evs) > 0 {
			seq = evs[len(evs)-1].Seq
		}
		if len(evs) == 1000 {
			continue // more to read
		}
		if cur.Status.Final() {
			res.StartedAt = cur.StartedAt
			if cur.FinishedAt != nil {
				res.FinishedAt = *cur.FinishedAt
				res.DurationMS = cur.FinishedAt.Sub(cur.StartedAt).Milliseconds()
			}
			res.Tokens, res.CostUSD = cur.Tokens, cur.CostUSD
			out := &Result{Run: cur, Engine: res, redact: r.redactor(nil)}
			if hasChecks(w) {
				out.Verdict, out.Err = r.verifyQueued(context.WithoutCancel(ctx), w, cur, res, o)
			}
			return out, nil
		}
		if o.Park != nil && o.Park.SignalsOnly && !cancelled {
			if awaits := signalWaits(w, r.cfg.Registry, res.Steps); awaits != nil {
				if only, err := queue.OnlySignals(ctx, pg, run.ID); err == nil && only {
					parked := *cur
					parked.Status = engine.RunWaiting
					res.Status, res.Awaiting = engine.RunWaiting, awaits
					return &Result{Run: &parked, Engine: res, redact: r.redactor(nil)}, nil
				}
			}
		}
		if !hinted && time.Since(started) > WaitingHint && o.Observer != nil {
			if idle, queues, err := unclaimed(ctx, pg, run.ID, WaitingHint); err == nil && idle {
				hinted = true
				o.Observer.Note(Note{Kind: "problem", Text: fmt.Sprintf(
					"waiting for a worker: start skein worker --db %s --queues %s (no worker took this run's jobs in %s)",
					postgres.Redact(r.cfg.DB), queues, WaitingHint)})
			}
		}
		select {
		case <-ctx.Done():
			// As a local run's: nothing new starts, the running nodes
			// finish (o.Hard stops them), the rest is skipped.
			if !cancelled {
				cancelled = true
				ctx = context.WithoutCancel(ctx)
				if err := r.cancelFollowed(ctx, run.ID, true, o.Observer); err != nil {
					return nil, err
				}
			}
			ctx = context.WithoutCancel(ctx)
		case <-o.Hard:
			if cancelled {
				// A second Ctrl-C: the workers stop the running nodes.
				o.Hard = nil
				if err := r.cancelFollowed(ctx, run.ID, false, o.Observer); err != nil {
					return nil, err
				}
				break
			}
			return nil, fmt.Errorf("stopped following run %s; its workers go on with it (skein runs show %s)", run.ID, run.ID)
		case <-o.Leave:
			// This process stops (a server that shuts down); the run
			// goes on with its workers.
			return &Result{Run: cur, Engine: res, redact: r.redactor(nil)}, nil
		case <-t.C:
		}
	}
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
	evs := verdictEvents(v, r.clock.Now())
	sevs := make([]store.Event, len(evs))
	for i, ev := range evs {
		sevs[i] = store.Event{Time: ev.Time, Type: ev.Type, Node: ev.Node, Visit: ev.Visit, Iteration: ev.Iteration, Data: ev.Data}
	}
	if aerr := r.st.AppendEvents(ctx, run.ID, sevs); aerr != nil && err == nil {
		err = aerr
	}
	return v, err
}

// signalWaits returns the steps that wait for a signal when every step
// that has not ended is one, else nil.
func signalWaits(w *workflow.Workflow, reg *node.Registry, steps []*engine.StepRecord) []engine.Await {
	var out []engine.Await
	for _, s := range steps {
		if s.Status.Final() {
			continue
		}
		if s.Status != engine.StatusWaiting {
			return nil
		}
		n := w.Node(s.Node)
		if n == nil {
			return nil
		}
		spec, ok := reg.Lookup(n.Type)
		switch {
		case ok && spec.Parks != nil && s.Directives[engine.DirectiveAwait] == engine.AwaitSignal:
			out = append(out, engine.Await{Node: s.Node, Visit: s.Visit, Signal: engine.SignalName(s.Node, s.Directives)})
			continue
		case !ok || spec.Role != node.RoleWait:
			return nil
		}
		if u, _ := n.Params["until"].(string); u != "signal" {
			return nil
		}
		out = append(out, engine.Await{Node: s.Node, Visit: s.Visit, Signal: s.Node})
	}
	return out
}

// unclaimed reports whether the run has jobs that were due for longer
// than after and none that a worker took, and which queues they are in.
func unclaimed(ctx context.Context, pg *postgres.Store, runID string, after time.Duration) (bool, string, error) {
	var due, taken int
	var queues string
	err := pg.Pool().QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE state = 'available' AND scheduled_at < now() - $2::float8 * interval '1 second'),
		count(*) FILTER (WHERE attempted_at IS NOT NULL),
		COALESCE(string_agg(DISTINCT queue, ',') FILTER (WHERE state = 'available'), '')
		FROM river_job WHERE args->>'run' = $1`, runID, after.Seconds()).Scan(&due, &taken, &queues)
	return due > 0 && taken == 0, queues, err
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
			return runServices(httpkind.Policy{DenyPrivate: req.DenyPrivate}, w, pool, models, runMemory{st: pg, workflow: w.Name}), release
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
			return &queueChild{r: r, parentID: runID, parentFile: w.File, nodeID: t.Node.ID, visit: t.Visit, budget: budget, waiting: waiting,
				opts: Options{SecretsFile: req.SecretsFile, DenyPrivate: req.DenyPrivate, Concurrency: 16}}
		},
	})
	if err != nil {
		return err
	}
	return d.Work(ctx, req.Grace)
}
