package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/check/judge"
	"github.com/skeinhq/skein/internal/delivery"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm/registry"
	mcppool "github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/internal/services"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// StartRequest starts a new run of a workflow.
type StartRequest struct {
	// Workflow is the validated workflow (Runner.Load).
	Workflow *workflow.Workflow
	// Inputs are the run's inputs, already resolved against the
	// workflow's declared inputs (workflow.ResolveInputs).
	Inputs  map[string]any
	Trigger string
	// Payload is what the trigger fired with (a webhook's request, a chat
	// message, a schedule's time): the trigger node's output and the
	// templates' `trigger`. Nil: the trigger outputs the inputs and
	// `trigger` is empty. A resume or rerun reads it back from the
	// trigger's recorded step.
	Payload map[string]any
	// RunID, when set, is the new run's id; default a random one.
	RunID string
	// Placement, when set, overrides the runner's (Config.Placement).
	Placement Placement
	// Detach returns a queued run once committed, not following it unless
	// its end writes files here (checks, traced nodes).
	Detach bool
	Options
}

// Start runs a workflow to its end, in this process or on the queue's
// workers as Place decides.
func (r *Runner) Start(ctx context.Context, req StartRequest) (*Result, error) {
	if r.Place(req) == PlaceQueue {
		return r.Enqueue(ctx, req)
	}
	res, err := r.execute(ctx, job{w: req.Workflow, inputs: req.Inputs, trigger: req.Trigger, payload: req.Payload,
		runID: cmp.Or(req.RunID, NewRunID())}, req.Options)
	return r.continueSignalled(ctx, res, err, req.Options)
}

// continueSignalled resumes a run whose execution parked while a signal
// for it was being saved (see park), until an execution ends otherwise.
// When another process resumed it first, the parked result stands.
func (r *Runner) continueSignalled(ctx context.Context, res *Result, err error, o Options) (*Result, error) {
	for err == nil && res.signalled {
		next, nerr := r.resume(ctx, ResumeRequest{RunID: res.Run.ID, Options: o})
		if errors.Is(nerr, store.ErrOwned) {
			return res, nil
		}
		res, err = next, nerr
	}
	return res, err
}

// job is one execution: a fresh run, a resumed one, or a rerun.
type job struct {
	w       *workflow.Workflow
	inputs  map[string]any
	trigger string
	payload map[string]any
	runID   string
	// resume continues a run this process has claimed: its folder and row
	// are reused.
	resume *store.Run
	reuse  *durable.Reuser
	// wakes keeps the wake-up times of the waits a resumed run recorded.
	wakes func(node string, visit int, hash string) (time.Time, bool)
	// rerunOf is the run a rerun was made from.
	rerunOf string
	// parent is the run whose subworkflow node runs this one (a child of
	// a queued run, run on a worker).
	parent string
	// finished, when set, sees the result once the run has ended and returns
	// events to record with it (--auto-repair's business-error warnings).
	finished func(res *engine.Result, now time.Time) []engine.TimedEvent
	// spent is what the run spent before this execution (a resume goes on
	// from it) plus what was spent for it meanwhile (the repair model).
	spent engine.Spent
	// budget is the parent run's budget of a child run on a worker: what
	// the child spends counts against it too (nil: no parent).
	budget *engine.Budget
	stack  []string // a child run's parent workflow files (engine.Options.Stack)
	// replay answers the run's interactions from a cassette.
	replay   *ReplaySource
	replayOf string // the run a replay (Runner.Replay) replays
	// signals are a replay's: those the recorded run received, applied
	// as soon as their steps wait.
	signals []engine.Signal
}

// execute runs a job to its end: it records the run in the store and the
// run folder, keeps its lease, and tells the observer.
func (r *Runner) execute(ctx context.Context, j job, o Options) (*Result, error) {
	w := j.w
	if j.replay == nil {
		j.replay = o.Replay
	}
	getenv := r.cfg.LookupEnv
	if j.replay != nil {
		getenv = cassette.ReplayEnv(getenv, w.Secrets, j.replay.Cassette.Header.Env)
	}
	secrets, err := resolveSecrets(w, getenv, o.SecretsFile)
	if err != nil {
		return nil, err
	}
	// The one Redactor of the run: every writer of its records gets it.
	red := r.redactors.For(secrets)
	plan, err := r.plans.Get(w, r.cfg.Registry)
	if err != nil {
		return nil, &InvalidError{File: w.File, Diagnostics: workflow.Diagnostics{{File: w.File, Severity: workflow.Error, Message: err.Error()}}}
	}
	if _, err := plan.StartNodes(j.trigger); err != nil {
		return nil, usagef("%s: %v", w.File, err)
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	blob.RaiseMemoryLimit(w.Limits.MaxOutputMemory)
	started := r.clock.Now()
	abs, _ := filepath.Abs(w.File)
	meta := map[string]any{"file": abs}
	if j.rerunOf != "" {
		meta["rerun_of"] = j.rerunOf
	}
	opened, err := r.runs().Open(ctx, j.resume, j.runID, w.Name, abs, func(dir string) (*store.Run, error) {
		ver, err := r.versions.Save(ctx, r.st, w)
		return &store.Run{
			ID: j.runID, Workflow: w.Name, WorkflowVersion: ver, File: abs, Dir: dir,
			Trigger: j.trigger, Status: engine.RunRunning, Inputs: j.inputs, StartedAt: started,
			Owner: r.newOwner(), LeaseTTL: r.cfg.LeaseTTL, ParentID: j.parent,
			Source: record.StartedBy(o.Source, j.replayOf, j.parent), ReplayOf: j.replayOf,
		}, err
	}, started, meta, red)
	if err != nil {
		return nil, err
	}
	run, rl, blobs, recBlobs := opened.Run, opened.Folder, opened.Blobs, opened.RecordBlobs
	defer rl.Close()
	runs := r.runs()
	runs.SyncEnds = j.parent != "" // a child on a worker: as its queued parent's nodes
	runs.Trace = o.Trace           // --trace, over the workflows' trace:
	runs.TraceFolder(ctx, rl, w, run.ID)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	hard := make(chan struct{})
	var hardOnce sync.Once
	stopHard := func() { hardOnce.Do(func() { close(hard) }) }
	// Hard is watched until the execution returns, not only until runCtx
	// ends: a hard stop follows a cancel.
	defer durable.StopOn(o.Hard, stopHard)()
	lease := durable.Keep(runCtx, r.st, run, r.cfg.LeaseTTL, r.cfg.CancelPoll, func(letFinish bool) {
		// A cancel request: nothing new starts; running nodes are stopped
		// unless it lets them finish.
		cancel()
		if !letFinish {
			stopHard()
		}
	})
	defer lease.Stop()

	// Signals recorded while no process ran the run are applied as soon as
	// their steps wait; later ones come through the lease's poll.
	signals, sigCh, err := lease.WatchRunSignals(ctx, r.st, w, r.cfg.Registry, run.ID)
	if err != nil {
		r.runs().Release(ctx, run)
		return nil, err
	}
	signals = append(j.signals, signals...)

	rec := durable.NewRecorder(r.commit, run.ID, recBlobs, red)
	rec.Generation, rec.Token, rec.SyncEnds = run.Generation, run.Owner.Token, runs.SyncEnds
	rl.Later = rec.AfterCommit // the folder is written from committed records
	recs := durable.Tee{rl}
	var obs *durable.Deferred
	if o.Observer != nil {
		if wo, ok := o.Observer.(WorkflowObserver); ok {
			wo.Workflow(w)
		}
		o.Observer.Started(run, j.resume != nil)
		obs = &durable.Deferred{OnStep: o.Observer.Step, OnEvent: o.Observer.Event, Later: rec.AfterCommit, Redact: red}
		recs = append(recs, obs) // before rec: its calls wait for rec's commit
	}
	recs = append(recs, rec)

	// MCP servers start on first use and stop when the run ends.
	// A player for a replay, a recorder when the run records (Options.Record, or record: true).
	tape := cassette.ForRun(j.replay, o.Record || w.Record, w.Name, run.ID, started, getenv, red.Func())
	sc := services.Config{Store: r.st, LookupEnv: getenv, Secrets: secrets, DenyPrivate: o.DenyPrivate, Tape: tape}
	svc, pool, closePool := services.ForRun(w, j.inputs, j.rerunOf, sc)
	defer closePool()
	// The runner is the run's host: its run folder, its store, the
	// services of its workflow.
	host := engine.Host{
		Recorder:      recs,
		ArtifactDir:   rl.AbsArtifactDir(),
		Files:         runlog.Files(w, rl.Dir()),
		Services:      svc,
		ChildServices: sc.Child, // a child uses the servers and models its own file declares
		Child:         runs.ChildFactory(ctx, run, lease, red),
	}
	opts := engine.Options{
		RunID: run.ID, Inputs: j.inputs, Trigger: j.trigger, Payload: j.payload, Secrets: secrets, Redactor: red, Host: host,
		Concurrency: o.Concurrency, Hard: hard, Blobs: blobs,
		Park:      o.Park,
		Wakes:     j.wakes,
		KeepSteps: max(cmp.Or(r.cfg.KeptSteps, engine.DefaultKeepSteps), 0),
		Signals:   signals,
		Leave:     o.Leave, // a run that only waits is parked, any other stopped
		Spent:     j.spent,
		Stack:     j.stack,
		// A replay does not wait again for what the recorded run waited.
		Instant: j.replay != nil,
	}
	if j.replay != nil || w.Traces(o.Trace) == workflow.TraceNodes {
		opts.KeepSteps = 0 // a replay compares every step with the recorded run's; node files list every visit
	}
	if j.budget != nil {
		opts.Budget = engine.NewBudget(w.Limits.MaxTokens, w.Limits.MaxCostUSD, j.budget, j.spent.Tokens, j.spent.CostUSD)
	}
	opts.SignalCh = sigCh
	if j.reuse != nil {
		opts.Reuse = j.reuse.Reuse
	}
	if o.Mock != nil {
		opts.Reuse = engine.MockReuse(o.Mock, opts.Reuse)
	}
	opts.Evidence = mcppool.EvidenceHook(w, pool)
	res, runErr := engine.NewDriver(r.cfg.Registry, r.clock, 0).Execute(runCtx, plan, opts)
	if res == nil {
		r.runs().Release(ctx, run)
		return nil, runErr
	}
	if tape != nil {
		if err := saveTape(tape, rl, j); err != nil && runErr == nil {
			runErr = err
		}
	}
	if lease.Lost() {
		// Someone else owns the run now: write nothing more.
		return &Result{Run: run, Engine: res, Resumed: j.resume != nil, Err: fmt.Errorf("run %s: %w", run.ID, store.ErrLeaseLost), redact: red}, nil
	}
	if durable.Closed(o.Leave) && res.Status == engine.RunCancelled {
		if err := r.runs().Leave(run, res, rec, recs, rl, lease); err != nil && runErr == nil {
			runErr = err
		}
		run.Status = StatusInterrupted
		return &Result{Run: run, Engine: res, Resumed: j.resume != nil, Err: runErr, redact: red}, nil
	}
	var flush func()
	if obs != nil {
		flush = func() { _ = obs.Flush() }
	}
	if res.Status == engine.RunWaiting {
		signalled, err := r.runs().Park(ctx, run, res, rec, recs, flush, rl, lease, red)
		return &Result{Run: run, Engine: res, Resumed: j.resume != nil, Err: errors.Join(runErr, err), redact: red, signalled: signalled}, nil
	}
	now := r.clock.Now()
	var extra []engine.TimedEvent
	if j.finished != nil {
		extra = append(extra, j.finished(res, now)...)
	}
	var verdict *check.RunVerdict
	var verr error
	if check.Has(w) {
		verr = rec.Sync() // the judge reads the node's events from the store
		if verr == nil {
			verr = rl.Materialize() // the verdicts are written in it
		}
	}
	if verr == nil {
		verdict, verr = r.verify(context.WithoutCancel(ctx), w, res, run, rl.Dir(), secrets, red, tape)
		if tape != nil && check.Has(w) {
			verr = errors.Join(verr, saveTape(tape, rl, j)) // with the judge's calls
		}
	}
	if verr != nil && runErr == nil {
		runErr = verr
	}
	if verdict != nil {
		extra = append(extra, check.Events(verdict, now)...)
		// The judge's calls are the run's spending too.
		res.Tokens += verdict.Tokens
		res.CostUSD += verdict.CostUSD
	}
	hold, ended, err := r.runs().End(run, res, rec, recs, flush, rl, lease, extra, func() store.Owner { return r.oweDelivery(ctx, w, run, o) },
		func(ended *store.Run) any {
			return r.StreamDoc(ctx, &Result{Run: ended, Engine: res, Verdict: verdict, Resumed: j.resume != nil, redact: red})
		})
	if err != nil && runErr == nil {
		runErr = err
	}
	if ended && w.Delivery.Delivers(string(run.Status)) {
		r.deliver(ctx, delivery.Job{Workflow: w, Run: run, Inputs: j.inputs, Payload: j.payload, Secrets: secrets, Hold: hold}, o)
	}
	return &Result{Run: run, Engine: res, Verdict: verdict, Resumed: j.resume != nil, Err: runErr, redact: red, tape: tape}, nil
}

// runs is where the runner's executions keep their runs.
func (r *Runner) runs() *durable.Host {
	return &durable.Host{Store: r.st, Commit: r.commit, Clock: r.clock, Registry: r.cfg.Registry, Dir: r.cfg.Dir,
		OnDemandFolders: r.cfg.OnDemandFolders, LeaseTTL: r.cfg.LeaseTTL, Blobs: r.blobs,
		Doc: func(ctx context.Context, run *store.Run, res *engine.Result, red *redact.Redactor) any {
			return r.StreamDoc(ctx, &Result{Run: run, Engine: res, redact: red})
		}}
}

// spentBefore is what a run spent in its earlier executions (durable.Spent).
func (r *Runner) spentBefore(ctx context.Context, run *store.Run, hist []*store.Step) engine.Spent {
	return durable.Spent(ctx, r.st, run, hist)
}

// verify runs the evaluation pass of a finished run and writes its verdict
// files, masking the run's secrets with red; it returns nil when the
// workflow has no checks.
func (r *Runner) verify(ctx context.Context, w *workflow.Workflow, res *engine.Result, run *store.Run, dir string, secrets map[string]string, red *redact.Redactor, tape *cassette.Tape) (*check.RunVerdict, error) {
	jd := r.cfg.Judge(w, r.cfg.LookupEnv, secrets)
	if j, ok := jd.(*judge.LLM); ok && tape != nil {
		if m, ok := j.Models.(*registry.Models); ok {
			// The judge's model calls are recorded, or answered by a replay.
			m.HTTPClient = tape.Client()
		}
	}
	// What the nodes' templates read of the run (engine.RunScope).
	scope := engine.RunScope(run.ID, run.Workflow, run.StartedAt, run.Inputs, durable.TriggerPayload(r.cfg.Registry, res.Steps, run.Trigger), secrets)
	return check.Verify(ctx, w, res, &scope, dir, durable.NodeEvents(ctx, r.st, run.ID), jd, red)
}
