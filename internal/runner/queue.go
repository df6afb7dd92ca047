package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/internal/secrets"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
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
	r.queueOnce.Do(func() {
		// What it records is masked with the secret values it has.
		known := func(w *workflow.Workflow) (map[string]string, error) { return secrets.Known(w, r.cfg.LookupEnv), nil }
		r.starter, r.queueErr = queue.Open(ctx, queue.Config{Store: pg, Registry: r.cfg.Registry, Blobs: r.blobs, Clock: r.clock,
			Secrets: known}, r.cfg.Dir, r.redactors.For(nil))
	})
	if r.queueErr != nil {
		return nil, r.queueErr
	}
	return pg, nil
}

// Enqueue starts a run on the queue and follows it to its end (unless
// req.Detach), its steps and events going to the observer as the workers
// record them. Cancelling ctx cancels the run as a local run's first
// Ctrl-C does; closing o.Hard then stops its running nodes; closing o.Hard
// before, or o.Leave, stops following, the run going on. Its folder is
// made for the files of its checks (run here) or of a resume here.
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
	plan, err := r.plans.Get(w, r.cfg.Registry)
	if err != nil {
		return nil, &InvalidError{File: w.File, Diagnostics: workflow.Diagnostics{{File: w.File, Severity: workflow.Error, Message: err.Error()}}}
	}
	if _, err := plan.StartNodes(req.Trigger); err != nil {
		return nil, usagef("%s: %v", w.File, err)
	}
	known, err := secrets.Available(w, r.cfg.LookupEnv, req.SecretsFile)
	if err != nil {
		return nil, usagef("the secrets file: %v", err)
	}
	run, err := r.starter.Start(ctx, queue.StartRequest{RunID: cmp.Or(req.RunID, NewRunID()), Workflow: w, Inputs: req.Inputs,
		Trigger: req.Trigger, Payload: req.Payload, StartedBy: req.Source, Secrets: known})
	if err != nil {
		return nil, err
	}
	if o := req.Observer; o != nil {
		o.Started(run, false)
	}
	if req.Detach && !check.Has(w) && w.Traces(req.Trace) != workflow.TraceNodes {
		return &Result{Run: run, Detached: true, redact: r.redactors.For(nil)}, nil
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
	res := &Result{Run: out.Run, Engine: out.Result, redact: r.redactors.For(nil)}
	if out.Ended {
		res.Verdict, res.Err = r.endQueued(context.WithoutCancel(ctx), w, out.Run, out.Result, o)
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

// cancelQueued applies the cancel request of a queued run on the queue at
// once (queue.Driver.Cancel): the jobs no worker took are withdrawn and a
// run with no node running ends cancelled.
func (r *Runner) cancelQueued(ctx context.Context, runID string) error {
	if _, err := r.pgStore(ctx); err != nil {
		return err
	}
	return r.starter.Cancel(ctx, runID)
}

// QueueJobs readies the queue for a server's intake (queue.Starter.Ready)
// and counts its jobs not ended; ErrNoQueue without a Postgres database.
func (r *Runner) QueueJobs(ctx context.Context) ([]QueueJobs, error) {
	if _, err := r.pgStore(ctx); err != nil {
		return nil, err
	}
	return r.starter.Ready(ctx)
}

// QueueJobs counts the jobs of one queue in one state.
type QueueJobs = queue.Jobs

// endQueued writes into the folder of a queued run that ended, made now by
// the process that follows it (skein run, the server that started it), the
// verdict of its checks and, traced with nodes, its run.json and node files.
func (r *Runner) endQueued(ctx context.Context, w *workflow.Workflow, run *store.Run, res *engine.Result, o Options) (*check.RunVerdict, error) {
	checks, traced := check.Has(w), w.Traces(o.Trace) == workflow.TraceNodes
	if !checks && !traced {
		return nil, nil
	}
	secrets, err := resolveSecrets(w, r.cfg.LookupEnv, o.SecretsFile)
	if err != nil {
		return nil, err
	}
	red := r.redactors.For(secrets)
	rl, err := runlog.ReopenOnDemand(run.Dir, w.Name, run.ID, run.StartedAt, nil, red)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rl.Close() }()
	var v *check.RunVerdict
	if checks {
		v, err = queue.VerifyEnded(ctx, r.st, rl, run, r.clock.Now(), func(dir string) (*check.RunVerdict, error) {
			return r.verify(ctx, w, res, run, dir, secrets, red, nil)
		})
	}
	if traced {
		runs := r.runs()
		runs.Trace = o.Trace
		runs.TraceFolder(ctx, rl, w, run.ID)
		err = errors.Join(err, rl.Finish(r.Doc(ctx, &Result{Run: run, Engine: res, Verdict: v, redact: red})))
	}
	return v, err
}

// WorkRequest runs queue workers.
type WorkRequest struct {
	// Queues are the queues worked, each with the number of its nodes
	// running at once.
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
	opts := Options{SecretsFile: req.SecretsFile, DenyPrivate: req.DenyPrivate, Concurrency: 16}
	return queue.Workers{Grace: req.Grace, LookupEnv: r.cfg.LookupEnv, DenyPrivate: req.DenyPrivate,
		Config: queue.Config{Store: pg, Registry: r.cfg.Registry, Queues: req.Queues, Blobs: r.blobs, RescueAfter: req.RescueAfter,
			Logger: req.Logger, Clock: r.clock,
			Secrets: func(w *workflow.Workflow) (map[string]string, error) {
				return resolveSecrets(w, r.cfg.LookupEnv, req.SecretsFile)
			},
			Deliver: func(ctx context.Context, run *store.Run, generation int, w *workflow.Workflow) (time.Duration, error) {
				token := queue.DeliveryToken(run.ID, generation)
				o := Options{SecretsFile: req.SecretsFile, DenyPrivate: req.DenyPrivate, Hard: ctx.Done()}
				next, err := r.goOnDelivering(ctx, run, generation, w, o, store.Owner{Host: r.host, PID: r.pid, Token: token}, token, true)
				if err == nil && ctx.Err() != nil {
					err = ctx.Err() // stopped: the job is given again
				}
				return next, err
			}},
		Execute: func(ctx context.Context, c queue.ChildRun) (*store.Run, error) {
			return r.executeQueueChild(ctx, c, opts)
		},
		// Whether the child's owner is alive is not asked: the queue gives
		// the node to this worker only once it judged the one that ran it
		// lost (killed, paused, cut off), and the claim fences that one off
		// the child (its token is replaced).
		Claim: r.claim,
	}.Work(ctx)
}

// executeQueueChild runs a child run of a subworkflow node of a queued run in
// a worker (queue.Workers.Execute), or goes on with the one a stopped worker
// left. The node's context ends when its run's cancel stops running nodes, or
// its worker stops them: the child's running nodes stop with it, as a local
// child's stop with its parent's (Options.Hard).
func (r *Runner) executeQueueChild(ctx context.Context, c queue.ChildRun, o Options) (*store.Run, error) {
	o.Hard = ctx.Done()
	j := job{w: c.Workflow, inputs: c.Inputs, runID: c.ID, parent: c.Parent, budget: c.Budget, stack: c.Stack}
	if c.Resume != nil {
		j.resume, j.reuse, j.wakes, j.spent = c.Resume, durable.ForResume(c.History), durable.Wakes(c.History), c.Spent
	}
	res, err := r.execute(ctx, j, o)
	if err != nil {
		return nil, err
	}
	return res.Run, nil
}
