package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/check/judge"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm/registry"
	mcppool "github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/internal/memory"
	httpkind "github.com/skeinhq/skein/internal/nodes/http"
	mcpkind "github.com/skeinhq/skein/internal/nodes/mcp"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
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
	Options
}

// Start runs a workflow to its end, in this process or on the queue's
// workers as Place decides.
func (r *Runner) Start(ctx context.Context, req StartRequest) (*Result, error) {
	if r.Place(req) == PlaceQueue {
		return r.Enqueue(ctx, req)
	}
	id := req.RunID
	if id == "" {
		id = NewRunID()
	}
	res, err := r.execute(ctx, job{w: req.Workflow, inputs: req.Inputs, trigger: req.Trigger, payload: req.Payload, runID: id}, req.Options)
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
	// finished, when set, sees the result once the run has ended and
	// returns events to record with it (--auto-repair's business-error
	// warnings).
	finished func(res *engine.Result, now time.Time) []engine.TimedEvent
	// spent is what the run spent before this execution (a resume goes on
	// from it) plus what was spent for it meanwhile (the repair model).
	spent engine.Spent
	// budget is the parent run's budget of a child run on a worker: what
	// the child spends counts against it too (nil: no parent).
	budget *engine.Budget
	// replay answers the run's interactions from a cassette.
	replay *ReplaySource
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
		getenv = replayEnv(getenv, w, j.replay.Cassette.Header.Env)
	}
	secrets, err := resolveSecrets(w, getenv, o.SecretsFile)
	if err != nil {
		return nil, err
	}
	// The one Redactor of the run: every writer of its records gets it.
	red := r.redactor(secrets)
	plan, err := r.plan(w)
	if err != nil {
		return nil, &InvalidError{File: w.File, Diagnostics: workflow.Diagnostics{{File: w.File, Severity: workflow.Error, Message: err.Error()}}}
	}
	if _, err := plan.StartNodes(j.trigger); err != nil {
		return nil, usagef("%s: %v", w.File, err)
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	raiseMemoryLimit(w.Limits.MaxOutputMemory)
	started := r.clock.Now()
	abs, _ := filepath.Abs(w.File)
	meta := map[string]any{"file": abs}
	if j.rerunOf != "" {
		meta["rerun_of"] = j.rerunOf
	}
	var rl *runlog.Writer
	run := j.resume
	if run != nil {
		if rl, err = r.reopenFolder(run.Dir, w.Name, run.ID, started, meta, red); err != nil {
			r.release(ctx, run)
			return nil, err
		}
		run.File = abs
		if err := r.st.UpdateRun(ctx, run); err != nil {
			rl.Close()
			r.release(ctx, run)
			return nil, err
		}
	} else {
		if rl, err = r.openFolder(w.Name, j.runID, started, meta, red); err != nil {
			return nil, err
		}
		ver, err := r.saveWorkflow(ctx, w)
		if err != nil {
			rl.Close()
			return nil, err
		}
		run = &store.Run{
			ID: j.runID, Workflow: w.Name, WorkflowVersion: ver, File: abs, Dir: rl.Dir(),
			Trigger: j.trigger, Status: engine.RunRunning, Inputs: j.inputs, StartedAt: started,
			Owner: r.newOwner(), LeaseTTL: r.cfg.LeaseTTL, ParentID: j.parent,
		}
		if err := r.st.CreateRun(ctx, run); err != nil {
			rl.Close()
			return nil, err
		}
	}
	defer rl.Close()
	blobs, err := r.blobStore(rl, red)
	if err == nil && j.resume != nil {
		err = blobs.RemoveStale() // what a killed execution was writing
	}
	var recBlobs *blob.Store
	if err == nil {
		recBlobs, err = r.blobStore(rl, nil) // its records are masked already
	}
	if err != nil {
		r.release(ctx, run)
		return nil, err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	hard := make(chan struct{})
	var hardOnce sync.Once
	stopHard := func() { hardOnce.Do(func() { close(hard) }) }
	if o.Hard != nil {
		// Hard is watched until the execution returns, not only until
		// runCtx ends: a hard stop follows a cancel.
		ended := make(chan struct{})
		defer close(ended)
		go func() {
			select {
			case <-o.Hard:
				stopHard()
			case <-ended:
			}
		}()
	}
	lease := r.keep(runCtx, run, func(letFinish bool) {
		// A cancel request: nothing new starts; running nodes are stopped
		// unless it lets them finish.
		cancel()
		if !letFinish {
			stopHard()
		}
	})
	defer lease.stop()

	var signals []engine.Signal
	var sigCh chan engine.Signal
	if awaitsSignals(w, r.cfg.Registry) {
		// Signals recorded while no process ran the run are applied as soon
		// as their steps wait; later ones come through the lease's poll.
		sigs, err := r.st.Signals(ctx, run.ID, 0)
		if err != nil {
			r.release(ctx, run)
			return nil, err
		}
		signals = engineSignals(sigs)
		sigCh = make(chan engine.Signal, signalBuffer)
		lease.watchSignals(run.ID, lastSeq(sigs), sigCh)
	}

	rec := durable.NewRecorder(r.commit, run.ID, recBlobs, red)
	rec.Generation, rec.Token = run.Generation, run.Owner.Token
	rl.Later = rec.AfterCommit // the folder is written from committed records
	recs := tee{rl}
	var obs *observed
	if o.Observer != nil {
		if wo, ok := o.Observer.(WorkflowObserver); ok {
			wo.Workflow(w)
		}
		o.Observer.Started(run, j.resume != nil)
		obs = &observed{o: o.Observer, later: rec.AfterCommit, redact: red}
		recs = append(recs, obs) // before rec: its calls wait for rec's commit
	}
	recs = append(recs, rec)

	// MCP servers start on first use and stop when the run ends.
	pool := mcppool.NewPool(w.MCPServers, mcppool.Scope(j.inputs, secrets))
	defer pool.Close()
	models := registry.New(w, getenv)
	models.Render = secretRenderer(secrets)
	tape := j.tape(w, o, run.ID, started, red, getenv)
	services := runServices(httpkind.Policy{DenyPrivate: o.DenyPrivate}, w, pool, models,
		tapedMemory(runMemory{st: r.st, workflow: w.Name, replaces: j.rerunOf}, tape))
	if tape != nil {
		pool.Tape, models.HTTPClient = tape, tapeClient(tape)
		services = node.ClockService.Provide(cassette.Service.Provide(services, tape), tape)
	}
	// The runner is the run's host: its run folder, its store, the
	// services of its workflow.
	host := engine.Host{
		Recorder:    recs,
		ArtifactDir: artifactDir(rl),
		Files:       runFiles(w, rl.Dir()),
		Services:    services,
		ChildServices: func(cw *workflow.Workflow, inputs map[string]any) (*node.Services, func()) {
			// A child uses the servers and models its own file declares.
			cpool := mcppool.NewPool(cw.MCPServers, mcppool.Scope(inputs, secrets))
			cmodels := registry.New(cw, getenv)
			cmodels.Render = secretRenderer(secrets)
			var ct *cassette.Tape
			if tape != nil {
				ct = tape.Scoped(cw.Name)
				cpool.Tape, cmodels.HTTPClient = ct, tapeClient(ct)
			}
			cs := runServices(httpkind.Policy{DenyPrivate: o.DenyPrivate}, cw, cpool, cmodels, tapedMemory(runMemory{st: r.st, workflow: cw.Name}, ct))
			if ct != nil {
				cs = node.ClockService.Provide(cassette.Service.Provide(cs, ct), ct)
			}
			return cs, func() { _ = cpool.Close() }
		},
		Child: r.childFactory(ctx, run, lease, red),
	}
	opts := engine.Options{
		RunID: run.ID, Inputs: j.inputs, Trigger: j.trigger, Payload: j.payload, Secrets: secrets, Redactor: red, Host: host,
		Concurrency: o.Concurrency, Hard: hard, Blobs: blobs,
		Park:    o.Park.engine(),
		Wakes:   j.wakes,
		Signals: signals,
		Leave:   o.Leave, // a run that only waits is parked, any other stopped
		Spent:   j.spent,
		// A replay does not wait again for what the recorded run waited.
		Instant: j.replay != nil,
	}
	if j.budget != nil {
		opts.Budget = engine.NewBudget(w.Limits.MaxTokens, w.Limits.MaxCostUSD, j.budget, j.spent.Tokens, j.spent.CostUSD)
	}
	if sigCh != nil {
		opts.SignalCh = sigCh
	}
	if j.reuse != nil {
		opts.Reuse = j.reuse.Reuse
	}
	if o.Mock != nil {
		opts.Reuse = mockReuse(o.Mock, opts.Reuse)
	}
	opts.Evidence = evidenceHook(w, pool)
	res, runErr := engine.NewDriver(r.cfg.Registry, r.clock, 0).Execute(runCtx, plan, opts)
	if res == nil {
		r.release(ctx, run)
		return nil, runErr
	}
	if tape != nil {
		if err := saveTape(tape, rl, j); err != nil && runErr == nil {
			runErr = err
		}
	}
	if lease.lost() {
		// Someone else owns the run now: write nothing more.
		return &Result{Run: run, Engine: res, Resumed: j.resume != nil, Err: fmt.Errorf("run %s: %w", run.ID, store.ErrLeaseLost), redact: red}, nil
	}
	if left(o.Leave) && res.Status == engine.RunCancelled {
		out := r.leave(ctx, run, res, rec, recs, rl, lease, runErr, j.resume != nil)
		out.redact = red
		return out, nil
	}
	if res.Status == engine.RunWaiting {
		return r.park(ctx, run, res, rec, recs, obs, rl, lease, runErr, j.resume != nil, red), nil
	}
	now := r.clock.Now()
	var extra []engine.TimedEvent
	if j.finished != nil {
		extra = append(extra, j.finished(res, now)...)
	}
	var verdict *check.RunVerdict
	var verr error
	if hasChecks(w) {
		verr = rec.Sync() // the judge reads the node's events from the store
		if verr == nil {
			verr = rl.Materialize() // the verdicts are written in it
		}
	}
	if verr == nil {
		verdict, verr = r.verify(context.WithoutCancel(ctx), w, res, run.ID, rl.Dir(), secrets, red, tape)
		if tape != nil && hasChecks(w) {
			verr = errors.Join(verr, saveTape(tape, rl, j)) // with the judge's calls
		}
	}
	if verr != nil && runErr == nil {
		runErr = verr
	}
	if verdict != nil {
		extra = append(extra, verdictEvents(verdict, now)...)
		// The judge's calls are the run's spending too.
		res.Tokens += verdict.Tokens
		res.CostUSD += verdict.CostUSD
	}
	for _, ev := range extra {
		_ = recs.Event(ev)
	}
	fin := res.FinishedAt
	run.Status, run.Outputs, run.Error, run.FinishedAt = res.Status, res.Outputs, res.Error, &fin
	run.Tokens, run.CostUSD = res.Tokens, res.CostUSD
	_ = rl.Flush() // written once rec.Finish commits it
	if obs != nil {
		_ = obs.Flush()
	}
	lease.stop() // no renewal may race the release
	// The delivery is owed before the run's final record: a process that
	// dies between the two leaves it for the next (Redeliver).
	hold := r.oweDelivery(ctx, w, run, o)
	if err := rec.Finish(run); err != nil {
		// The run stays owned until its lease runs out: then it is
		// interrupted, and resumable. Its folder's run.json keeps
		// saying running, as the database does.
		if runErr == nil {
			runErr = err
		}
	} else {
		run.Owner, run.LeaseUntil, run.LeaseExpired = store.Owner{}, time.Time{}, true
		out := &Result{Run: run, Engine: res, Verdict: verdict, Resumed: j.resume != nil, redact: red}
		if err := rl.Finish(r.Doc(ctx, out)); err != nil && runErr == nil {
			runErr = err
		}
		if w.Delivery.Delivers(string(run.Status)) {
			r.deliver(ctx, w, run, j, secrets, o, hold, goOn{})
		}
	}
	return &Result{Run: run, Engine: res, Verdict: verdict, Resumed: j.resume != nil, Err: runErr, redact: red, tape: tape}, nil
}

// plan returns the plan of w. A plan does not change once made, so the
// runs of one loaded workflow (a served one) share it.
func (r *Runner) plan(w *workflow.Workflow) (*engine.Plan, error) {
	r.planMu.Lock()
	p, ok := r.plans[w]
	r.planMu.Unlock()
	if ok {
		return p, nil
	}
	p, err := engine.NewPlan(w, r.cfg.Registry)
	if err != nil {
		return nil, err
	}
	r.planMu.Lock()
	defer r.planMu.Unlock()
	if len(r.plans) >= maxPlans {
		clear(r.plans) // the workflows of a long-lived server were reloaded
	}
	if r.plans == nil {
		r.plans = map[*workflow.Workflow]*engine.Plan{}
	}
	r.plans[w] = p
	return p, nil
}

// maxPlans bounds the plans a Runner keeps.
const maxPlans = 256

// openFolder opens the folder of a new run: at once, or on demand
// (Config.OnDemandFolders).
func (r *Runner) openFolder(workflow, runID string, started time.Time, meta map[string]any, red *redact.Redactor) (*runlog.Writer, error) {
	if r.cfg.OnDemandFolders {
		return runlog.OpenOnDemand(r.cfg.Dir, workflow, runID, started, meta, red)
	}
	return runlog.Open(r.cfg.Dir, workflow, runID, started, meta, red)
}

// reopenFolder opens the folder of a run that goes on, as openFolder.
func (r *Runner) reopenFolder(dir, workflow, runID string, started time.Time, meta map[string]any, red *redact.Redactor) (*runlog.Writer, error) {
	if r.cfg.OnDemandFolders {
		return runlog.ReopenOnDemand(dir, workflow, runID, started, meta, red)
	}
	return runlog.Reopen(dir, workflow, runID, started, meta, red)
}

// leave ends an execution stopped by Options.Leave without ending its
// run: its records are committed with the run still running and no owner,
// so it is interrupted, and a resume continues it (reusing what succeeded).
// The run folder keeps saying running, as after a crash.
func (r *Runner) leave(ctx context.Context, run *store.Run, res *engine.Result, rec *durable.Recorder, recs tee, rl *runlog.Writer, l *lease, runErr error, resumed bool) *Result {
	_ = recs.Event(engine.TimedEvent{Time: r.clock.Now(), Event: engine.Event{Type: EventExecutionLeft,
		Data: map[string]any{"reason": "the process running it stopped; resume continues the run"}}})
	_ = rl.Flush()
	l.stop()
	run.Status, run.Outputs, run.Error, run.FinishedAt = engine.RunRunning, nil, nil, nil
	run.Tokens, run.CostUSD = res.Tokens, res.CostUSD
	if err := rec.Finish(run); err != nil && runErr == nil {
		runErr = err
	} else if err == nil {
		run.Owner, run.LeaseUntil, run.LeaseExpired = store.Owner{}, time.Time{}, true
	}
	run.Status = StatusInterrupted
	return &Result{Run: run, Engine: res, Resumed: resumed, Err: runErr}
}

// left reports whether Options.Leave is closed.
func left(leave <-chan struct{}) bool {
	select {
	case <-leave:
		return true
	default:
		return false
	}
}

// EventExecutionLeft is the event recorded when an execution stops
// without ending its run (Options.Leave): the run is interrupted.
const EventExecutionLeft = "execution_left"

// park ends an execution whose run only waits (Options.Park): its records
// are committed with the run waiting, its earliest wake-up time and no
// owner, and the process holds nothing for it. A signal (Runner.Signal)
// or its wake-up time (Runner.Due) resumes it.
func (r *Runner) park(ctx context.Context, run *store.Run, res *engine.Result, rec *durable.Recorder, recs tee, obs *observed,
	rl *runlog.Writer, l *lease, runErr error, resumed bool, red *redact.Redactor) *Result {
	data := map[string]any{"reason": "every live branch waits; a signal or the wake-up time resumes the run"}
	var awaiting []any
	for _, a := range res.Awaiting {
		awaiting = append(awaiting, map[string]any{"node": a.Node, "visit": a.Visit})
	}
	if len(awaiting) > 0 {
		data["awaiting"] = awaiting
	}
	if res.WakeAt != nil {
		data["wake_at"] = res.WakeAt.UTC().Format(time.RFC3339Nano)
	}
	_ = recs.Event(engine.TimedEvent{Time: r.clock.Now(), Event: engine.Event{Type: EventExecutionParked, Data: data}})
	_ = rl.Flush()
	if obs != nil {
		_ = obs.Flush()
	}
	l.stop()
	run.Status, run.Outputs, run.Error, run.FinishedAt = engine.RunWaiting, nil, nil, nil
	run.WakeAt = usecPtr(res.WakeAt)
	run.Tokens, run.CostUSD = res.Tokens, res.CostUSD
	out := &Result{Run: run, Engine: res, Resumed: resumed, redact: red}
	if err := rec.Finish(run); err != nil {
		// The run stays owned until its lease runs out: then it is
		// interrupted, and a resume continues it.
		out.Err = errors.Join(runErr, err)
		return out
	}
	run.Owner, run.LeaseUntil, run.LeaseExpired = store.Owner{}, time.Time{}, true
	out.Err = runErr
	if err := rl.Finish(r.Doc(ctx, out)); err != nil && out.Err == nil {
		out.Err = err
	}
	// A signal saved while this execution parked found the run owned and
	// left it to its owner, which no longer looks: it is resumed for it.
	out.signalled = r.signalled(context.WithoutCancel(ctx), run.ID, res.Awaiting)
	return out
}

// EventExecutionParked is the event recorded when an execution ends with
// its run waiting (Options.Park).
const EventExecutionParked = "execution_parked"

// release gives up a claimed run that could not start: it is left as it
// was, failed or interrupted, for the next resume.
func (r *Runner) release(ctx context.Context, run *store.Run) {
	if run.Owner.Token == "" {
		return
	}
	now := r.clock.Now()
	fin := *run
	fin.Status, fin.FinishedAt = engine.RunFailed, &now
	if fin.Error == nil {
		fin.Error = &node.Error{Code: "not_started", Category: node.CategoryInternal, Message: "the run could not start"}
	}
	_ = r.st.SaveBatch(context.WithoutCancel(ctx), []store.Batch{{RunID: run.ID, Token: run.Owner.Token, Finish: &fin}})
}

// lease keeps a run's lease and watches for cancel requests.
type lease struct {
	stopOnce sync.Once
	done     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	isLost   bool
	// children are child runs that share the lease.
	children map[string]bool
	// watches are the runs whose signals the lease polls for.
	watches map[string]*signalWatch
}

// signalWatch hands the signals of one run to its execution.
type signalWatch struct {
	seq int64 // the last signal handed over; only the keeper changes it
	ch  chan<- engine.Signal
}

// signalBuffer is how many signals wait for an execution to take them.
const signalBuffer = 16

// watchSignals makes the lease poll the signals of run id after seq and
// hand them to ch.
func (l *lease) watchSignals(id string, seq int64, ch chan<- engine.Signal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watches[id] = &signalWatch{seq: seq, ch: ch}
}

func (l *lease) stop() {
	l.stopOnce.Do(func() { close(l.done) })
	l.wg.Wait()
}

func (l *lease) lost() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.isLost
}

func (l *lease) addChild(id string, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if on {
		l.children[id] = true
	} else {
		delete(l.children, id)
		delete(l.watches, id)
	}
}

// keep renews run's lease every LeaseTTL/3 and polls for a cancel request
// and for signals (lease.watchSignals) every CancelPoll; on a cancel
// request it calls stop with the request's mode (letFinish), and when the
// lease is lost to another owner, stop(false).
func (r *Runner) keep(ctx context.Context, run *store.Run, stop func(letFinish bool)) *lease {
	l := &lease{done: make(chan struct{}), children: map[string]bool{}, watches: map[string]*signalWatch{}}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		poll := time.NewTicker(r.cfg.CancelPoll)
		defer poll.Stop()
		renewEvery := r.cfg.LeaseTTL / 3
		next := time.Now().Add(renewEvery)
		bg := context.WithoutCancel(ctx)
		for {
			select {
			case <-l.done:
				return
			case <-poll.C:
			}
			r.pollSignals(bg, l)
			if time.Now().Before(next) {
				cur, err := r.st.Run(bg, run.ID)
				if err != nil {
					continue
				}
				if cur.Owner.Token != run.Owner.Token {
					l.mu.Lock()
					l.isLost = true
					l.mu.Unlock()
					stop(false)
					return
				}
				if cur.CancelRequested != nil {
					stop(cur.CancelLetFinish)
				}
				continue
			}
			next = time.Now().Add(renewEvery)
			cancelled, err := r.st.RenewLease(bg, run.ID, run.Owner.Token, r.cfg.LeaseTTL)
			if errors.Is(err, store.ErrLeaseLost) {
				l.mu.Lock()
				l.isLost = true
				l.mu.Unlock()
				stop(false)
				return
			}
			if cancelled {
				// Its mode is read with the run (a request that lets
				// nodes finish may be made hard later).
				letFinish := false
				if cur, err := r.st.Run(bg, run.ID); err == nil {
					letFinish = cur.CancelLetFinish
				}
				stop(letFinish)
			}
			l.mu.Lock()
			kids := make([]string, 0, len(l.children))
			for id := range l.children {
				kids = append(kids, id)
			}
			l.mu.Unlock()
			for _, id := range kids {
				_, _ = r.st.RenewLease(bg, id, run.Owner.Token, r.cfg.LeaseTTL)
			}
		}
	}()
	return l
}

// pollSignals hands each watched run's new signals to its execution. A
// signal that does not fit in the buffer waits for the next poll.
func (r *Runner) pollSignals(ctx context.Context, l *lease) {
	l.mu.Lock()
	ws := make(map[string]*signalWatch, len(l.watches))
	for id, w := range l.watches {
		ws[id] = w
	}
	l.mu.Unlock()
	for id, w := range ws {
		sigs, err := r.st.Signals(ctx, id, w.seq)
		if err != nil {
			continue
		}
	handing:
		for _, sg := range sigs {
			select {
			case w.ch <- engineSignal(sg):
				w.seq = sg.Seq
			default:
				break handing
			}
		}
	}
}

// childFactory records each subworkflow's child run as a run of its own,
// owned with the parent's token, with its own folder. A child run that
// exists already (the parent was resumed) is claimed again and reuses what
// it completed.
func (r *Runner) childFactory(ctx context.Context, parent *store.Run, l *lease, red *redact.Redactor) engine.ChildFactory {
	return func(cw *workflow.Workflow, id string) (*engine.ChildRun, error) {
		bg := context.WithoutCancel(ctx)
		started := r.clock.Now()
		abs, _ := filepath.Abs(cw.File)
		var crl *runlog.Writer
		var reuse *durable.Reuser
		var spent engine.Spent
		child, err := r.st.Run(bg, id)
		switch {
		case err == nil:
			hist, herr := r.st.StepHistory(bg, id)
			if herr != nil {
				return nil, herr
			}
			if child, err = r.st.ClaimRun(bg, id, parent.Owner, r.cfg.LeaseTTL, child.Owner.Token); err != nil {
				return nil, err
			}
			r.killOrphans(hist)
			reuse = durable.ForResume(hist)
			spent = r.spentBefore(bg, child, hist)
			if crl, err = r.reopenFolder(child.Dir, cw.Name, id, started, map[string]any{"file": abs, "parent": parent.ID}, red); err != nil {
				return nil, err
			}
		case errors.Is(err, store.ErrNotFound):
			if crl, err = r.openFolder(cw.Name, id, started, map[string]any{"file": abs, "parent": parent.ID}, red); err != nil {
				return nil, err
			}
			child = &store.Run{ID: id, Workflow: cw.Name, File: abs, Dir: crl.Dir(), ParentID: parent.ID,
				Status: engine.RunRunning, StartedAt: started, Owner: parent.Owner, LeaseTTL: r.cfg.LeaseTTL}
			if err := r.st.CreateRun(bg, child); err != nil {
				crl.Close()
				return nil, err
			}
		default:
			return nil, err
		}
		l.addChild(id, true)
		blobs, err := r.blobStore(crl, red)
		if err == nil && reuse != nil {
			err = blobs.RemoveStale()
		}
		var recBlobs *blob.Store
		if err == nil {
			recBlobs, err = r.blobStore(crl, nil) // its records are masked already
		}
		if err != nil {
			l.addChild(id, false)
			crl.Close()
			return nil, err
		}
		rec := durable.NewRecorder(r.commit, id, recBlobs, red)
		rec.Generation, rec.Token = child.Generation, parent.Owner.Token
		crl.Later = rec.AfterCommit
		cr := &engine.ChildRun{
			Blobs:       blobs,
			Recorder:    tee{crl, rec},
			ArtifactDir: artifactDir(crl),
			Files:       runFiles(cw, crl.Dir()),
			Spent:       spent,
		}
		if awaitsSignals(cw, r.cfg.Registry) {
			// A child waits in its parent's process: the parent's lease
			// polls the child's signals.
			sigs, err := r.st.Signals(bg, id, 0)
			if err != nil {
				l.addChild(id, false)
				crl.Close()
				return nil, err
			}
			ch := make(chan engine.Signal, signalBuffer)
			cr.Signals, cr.SignalCh = engineSignals(sigs), ch
			l.watchSignals(id, lastSeq(sigs), ch)
		}
		cr.Finish = func(res *engine.Result) error {
			defer l.addChild(id, false)
			defer crl.Close()
			fin := res.FinishedAt
			child.Status, child.Outputs, child.Error, child.FinishedAt = res.Status, res.Outputs, res.Error, &fin
			child.Tokens, child.CostUSD = res.Tokens, res.CostUSD
			_ = crl.Flush()
			if err := rec.Finish(child); err != nil {
				return err
			}
			return crl.Finish(r.Doc(bg, &Result{Run: child, Engine: res, redact: red}))
		}
		if reuse != nil {
			cr.Reuse = reuse.Reuse
		}
		return cr, nil
	}
}

// spentBefore is what a run spent in its earlier executions: its recorded
// totals or, when an execution died before recording them, the sum of its
// recorded steps and of its child runs' spend, whichever is more.
func (r *Runner) spentBefore(ctx context.Context, run *store.Run, hist []*store.Step) engine.Spent {
	return r.spent(ctx, run, hist, 0)
}

func (r *Runner) spent(ctx context.Context, run *store.Run, hist []*store.Step, depth int) engine.Spent {
	var sum engine.Spent
	for _, s := range hist {
		if s.Cached || s.Pinned {
			continue
		}
		sum.Tokens += s.Tokens
		sum.CostUSD += s.CostUSD
	}
	if depth < engine.MaxDepth {
		kids, _ := r.st.ListRuns(ctx, store.RunFilter{Parent: run.ID})
		for _, kid := range kids {
			kh, err := r.st.StepHistory(ctx, kid.ID)
			if err != nil {
				continue
			}
			k := r.spent(ctx, kid, kh, depth+1)
			sum.Tokens += k.Tokens
			sum.CostUSD += k.CostUSD
		}
	}
	out := engine.Spent{Tokens: max(run.Tokens, sum.Tokens), CostUSD: max(run.CostUSD, sum.CostUSD)}
	return out
}

// verify runs the evaluation pass of a finished run and writes its verdict
// files, masking the run's secrets with red; it returns nil when the
// workflow has no checks.
func (r *Runner) verify(ctx context.Context, w *workflow.Workflow, res *engine.Result, runID, dir string, secrets map[string]string, red *redact.Redactor, tape *cassette.Tape) (*check.RunVerdict, error) {
	jd := r.cfg.Judge(w, r.cfg.LookupEnv, secrets)
	if j, ok := jd.(*judge.LLM); ok && tape != nil {
		if m, ok := j.Models.(*registry.Models); ok {
			// The judge's model calls are recorded, or answered by a replay.
			m.HTTPClient = tapeClient(tape)
		}
	}
	return verify(ctx, w, res, dir, storedEvents(ctx, r.st, runID), jd, red)
}

// artifactDir gives each node its artifacts folder in the run folder, as an
// absolute path: the paths of saved files a node outputs (an mcp node's
// images) are read by later nodes whose relative paths resolve against the
// workflow's folder, not the working directory.
func artifactDir(rl *runlog.Writer) func(nodeID string) string {
	// The run folder made absolute once: filepath.Abs asks the system for
	// the working folder, and the engine asks for every node's visit.
	dir := rl.Dir()
	base, berr := filepath.Abs(dir)
	return func(nodeID string) string {
		d, err := rl.ArtifactDir(nodeID)
		if err != nil || d == "" || berr != nil {
			return d
		}
		rel, err := filepath.Rel(dir, d)
		if err != nil {
			return d
		}
		return filepath.Join(base, rel)
	}
}

// runFiles is the file-access policy of a run's nodes and its judge: they
// may read the run's folder (its artifacts) and the workflow's files:, and
// relative paths are relative to the workflow's folder.
func runFiles(w *workflow.Workflow, runDir string) *node.Files {
	roots := w.FileRoots()
	if runDir != "" {
		if abs, err := filepath.Abs(runDir); err == nil {
			runDir = abs
		}
		roots = append(roots, runDir)
	}
	return node.NewFiles(w.Dir(), roots...)
}

// tee sends every record to several recorders, in order.
type tee []engine.Recorder

func (t tee) Flush() error {
	var first error
	for _, r := range t {
		if f, ok := r.(engine.Flusher); ok {
			if err := f.Flush(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

func (t tee) Step(rec *engine.StepRecord) error {
	for _, r := range t {
		if err := r.Step(rec); err != nil {
			return err
		}
	}
	return nil
}

func (t tee) Event(ev engine.TimedEvent) error {
	for _, r := range t {
		if err := r.Event(ev); err != nil {
			return err
		}
	}
	return nil
}

// observed hands a run's records to an Observer once they are committed.
// Events come from the engine and from the runner (verdicts, repair
// warnings): their data is masked with the run's Redactor here.
type observed struct {
	o      Observer
	later  func(func())
	redact *redact.Redactor
	mu     sync.Mutex
	calls  []func()
	// out serialises the calls: commits call back from one goroutine,
	// but the final flush may come from another.
	out sync.Mutex
}

func (b *observed) Step(rec *engine.StepRecord) error {
	c := *rec
	b.mu.Lock()
	b.calls = append(b.calls, func() { b.o.Step(c) })
	b.mu.Unlock()
	return nil
}

func (b *observed) Event(ev engine.TimedEvent) error {
	ev.Data, _ = b.redact.Map(ev.Data)
	b.mu.Lock()
	b.calls = append(b.calls, func() { b.o.Event(ev) })
	b.mu.Unlock()
	return nil
}

func (b *observed) Flush() error {
	b.mu.Lock()
	calls := b.calls
	b.calls = nil
	b.mu.Unlock()
	if len(calls) == 0 {
		return nil
	}
	b.later(func() {
		b.out.Lock()
		defer b.out.Unlock()
		for _, c := range calls {
			c()
		}
	})
	return nil
}

// runServices are the services the kinds of one run get: the HTTP policy,
// the run's MCP servers, its models, its memory (memory:), and the models
// as the judge.
func runServices(pol httpkind.Policy, w *workflow.Workflow, pool *mcppool.Pool, models *registry.Models, mem memory.Store) *node.Services {
	s := httpkind.PolicyService.Provide(nil, pol)
	s = mcppool.Service.Provide(s, pool)
	if w.File != "" {
		// The tools a node uses are checked against the lock file beside
		// the workflow, read afresh for each run.
		s = mcppool.LockService.Provide(s, mcppool.NewPins(w.File))
	}
	s = registry.Service.Provide(s, models)
	s = memory.Service.Provide(s, mem)
	// resolve: arguments of mcp nodes are picked by the workflow's models
	// and kept for the run.
	s = mcpkind.PickerService.Provide(s, models)
	s = mcpkind.ResolutionsService.Provide(s, mcpkind.NewResolutions())
	return node.JudgeService.Provide(s, models)
}

// holdsSecret is how a run's blobs tell a value that holds a secret: none
// without secrets.
func holdsSecret(red *redact.Redactor) func(string) bool {
	if red == nil {
		return nil
	}
	return red.Contains
}

// MemoryLimit is the soft memory limit (GOMEMLIMIT) a process needs to run
// a run that keeps up to budget bytes of output values in memory: twice
// that, and room for the rest, so that the garbage collector keeps the
// garbage of big values under it without running all the time.
func MemoryLimit(budget int64) int64 {
	return 2*budget + 64<<20
}

var memoryLimitMu sync.Mutex

// raiseMemoryLimit raises the process's soft memory limit, when it has
// one, to what a run with this output budget needs.
func raiseMemoryLimit(budget int64) {
	if budget <= 0 {
		budget = blob.DefaultBudget
	}
	memoryLimitMu.Lock()
	defer memoryLimitMu.Unlock()
	if cur := debug.SetMemoryLimit(-1); cur != math.MaxInt64 && cur < MemoryLimit(budget) {
		debug.SetMemoryLimit(MemoryLimit(budget))
	}
}
