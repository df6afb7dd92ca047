package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// StepRecord is the record of one step (package record has it), and
// TimedEvent an event with its time, as written to events.jsonl.
type (
	StepRecord = record.Step
	TimedEvent = record.TimedEvent
)

// Recorder receives a run's records as they happen, in order, from one
// goroutine. The run folder, the database and the progress display are
// recorders.
type Recorder interface {
	Step(rec *StepRecord) error
	Event(ev TimedEvent) error
}

// Flusher is a Recorder that buffers: the driver calls Flush after each
// scheduler step, before starting the tasks it released, so the records
// of a step are handed over in the order they happened. Handing over is
// not committing: a recorder that writes in the background (the durable
// recorder's group commit) may still be writing a step when the nodes it
// released start. What must not run ahead of the disk — progress lines,
// the run's result — waits for the commit (durable.Recorder.AfterCommit,
// Finish). A node that ran but whose step was not committed when the
// process died runs again on resume (at-least-once, DESIGN §3).
type Flusher interface {
	Flush() error
}

// Options configure one run: what the scheduler and its driver need, and
// the run's Host.
type Options struct {
	// Host does the run's duties outside the scheduler and its driver.
	Host
	RunID   string
	Inputs  map[string]any
	Trigger string
	Payload map[string]any
	Secrets map[string]string
	// Redactor masks Secrets (redact.New of them); nil: the driver makes
	// one. The runner gives the run's own, shared by all its writers.
	Redactor *redact.Redactor
	// Concurrency caps the run's tasks running at once (default 16).
	Concurrency int
	// CancelGrace is how long running tasks may go on after a cancel
	// before their context is cancelled; 0 lets them finish.
	CancelGrace time.Duration
	// Hard, when closed, cancels running tasks at once.
	Hard <-chan struct{}
	// Stack lists the absolute paths of the parent workflows of this run,
	// outermost first, to stop recursion.
	Stack []string
	// Budget counts the run's tokens and cost; nil makes one from the
	// workflow's limits and Spent. A subworkflow's child run gets a budget
	// of its own limits whose parent is this one.
	Budget *Budget
	// Spent is what earlier executions of the run spent (a resume): the
	// result's totals go on from it, and so does a budget the driver makes.
	Spent Spent
	// Blobs keeps the run's big values in files of its run folder; nil
	// keeps every value in memory.
	Blobs *blob.Store
	// Memory bounds the output values the run keeps in memory (with
	// Blobs); nil makes one from the workflow's limits. Subworkflows
	// share their parent's.
	Memory *blob.Budget
	// Park, when set, lets the execution end while the run only waits,
	// rather than hold it in this process; see Park.
	Park *Park
	// Wakes returns the wake-up time an earlier execution recorded for
	// the step of node at visit that ran with config hash: a resumed wait
	// ends when it was due.
	Wakes func(node string, visit int, hash string) (time.Time, bool)
	// Signals were recorded before the execution started; each is applied
	// as soon as its step waits for it. SignalCh brings those that arrive
	// while it runs.
	Signals  []Signal
	SignalCh <-chan Signal
	// Leave, when closed, ends the execution without ending the run (its
	// process stops): a run that only waits ends waiting (as Park does,
	// whatever the time left); any other is cancelled as when ctx ends,
	// for the caller to leave it interrupted.
	Leave <-chan struct{}
	// Instant fires the timers that only wait at once — a retry's
	// backoff, a wait, a _delay_seconds — as a replay does: what the run
	// waited for is already known. A signal wait's timeout keeps its
	// time. Subworkflows inherit it.
	Instant bool
	// DryRun plays the run without effects, to show what it would do (the
	// plan of a resume): each task is prepared and hashed as in a real run
	// and offered to Reuse; one that is not answered runs only if its kind
	// is Pure, or is a subworkflow (whose child run is a dry run too).
	// Any other task is not called: its step stays running, and what
	// follows it is not known. The execution ends when nothing else can
	// go on, Result.Open holding those tasks' steps. Timers fire at once,
	// as with Instant (a signal's timeout keeps its time).
	DryRun bool
	// KeepSteps, when above 0, bounds the finished step records the
	// driver keeps for Result.Steps, for a run whose Recorder keeps them
	// all (a store): once more than KeepSteps finished records are kept,
	// it drops the finished ones but the latest visit of each node and
	// that node's latest to succeed or fail (what checks and a repair
	// read), so that a long loop's memory does not grow with its passes.
	// Result.Dropped then counts the records dropped: the recorder has
	// the whole list. 0 keeps every record.
	KeepSteps int
}

// DefaultKeepSteps is the KeepSteps of a run the runner records:
// ~60 MB of finished step records, a loop of 25,000 passes.
const DefaultKeepSteps = 50_000

// Host is what a run asks of the world around it: where its steps and
// events are recorded, where its nodes' files go and what they may read,
// the services its kinds reach, how its child runs are recorded and given
// services, which of its steps an earlier run answers, and how evidence is
// captured. The runner is a local run's host (a run folder, the store);
// each duty is optional, nil leaving it undone.
type Host struct {
	// Recorder records the run's steps and events (nil: not recorded).
	Recorder Recorder
	// ArtifactDir returns the artifacts folder of a node.
	ArtifactDir func(nodeID string) string
	// Files is the file-access policy every node call gets (node.Call.Files):
	// the runner allows the run's folder and the workflow's files:. Nil
	// allows the folders of the workflow's files: only.
	Files *node.Files
	// Services are handed to the kinds; the driver adds the run's budget
	// (node.BudgetService) and, for subworkflow nodes, child runs.
	Services *node.Services
	// Child records child runs of subworkflow nodes (nil: not recorded).
	Child ChildFactory
	// ChildServices, when set, gives a child run the services of its own
	// workflow (its MCP servers, its models) in place of the parent's; the
	// returned function releases them when the child ends.
	ChildServices func(w *workflow.Workflow, inputs map[string]any) (*node.Services, func())
	// Reuse, when set, may answer a task from an earlier run instead of
	// running it (resume and rerun --pin).
	Reuse func(ReuseQuery) (Reused, bool)
	// Evidence, when set, is called after a node with checks or expect:
	// succeeds, to capture evidence (a screenshot) into its artifacts.
	Evidence func(ctx context.Context, nodeID, artifactDir string)
}

// Park says when an execution ends with its run waiting (Result.Status
// waiting): when no task runs, no retry is due, and every live branch
// waits for a signal or for a timer that ends more than After from now.
// The run is then continued by a resume: when a signal comes, or at
// Result.WakeAt.
type Park struct {
	After time.Duration
	// SignalsOnly parks only when a branch waits for a signal: a run that
	// only waits for timers (a wait: 1h) is held in this process.
	SignalsOnly bool
}

// Signal is data sent to a wait node's step waiting for a signal (see
// Run.Signal). At is when it was sent: a signal sent after its step's
// timeout passed is too late and is ignored.
type Signal struct {
	// Node is the name of the wait it is for (Await.Signal): the node's
	// id, or <node>#<name> for a wait a parked kind named.
	Node  string
	Visit int
	Data  any
	At    time.Time
}

// Result is how a run ended.
type Result struct {
	RunID    string         `json:"execution_id"`
	Workflow string         `json:"workflow"`
	Status   RunStatus      `json:"status"`
	Outputs  map[string]any `json:"outputs"`
	Error    *node.Error    `json:"error"`
	Steps    []*StepRecord  `json:"steps"`
	// Dropped counts the finished step records Steps lacks
	// (Options.KeepSteps): the run's recorder has them.
	Dropped    int       `json:"-"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	DurationMS int64     `json:"duration_ms"`
	// Tokens and CostUSD sum the steps' usage (subworkflows included).
	Tokens  int     `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
	// WakeAt is, for a run left waiting (Options.Park), the earliest
	// wake-up time of its waits; nil when only signals can wake it.
	WakeAt *time.Time `json:"wake_at,omitempty"`
	// Awaiting lists, for a run left waiting, the steps that wait for a
	// signal.
	Awaiting []Await `json:"-"`
	// Open holds, for a dry run (Options.DryRun), the steps of the tasks
	// it did not call: they would run, and their results are not known;
	// when there are any, the run's end is not known either (Status is
	// running).
	Open []*StepRecord `json:"-"`
}

// Driver runs plans on this machine: tasks are goroutines, bounded per run
// and per process; a task of a pure kind (node.Spec.Pure) that gets its
// slots at once runs on the run's loop goroutine instead, with no hand-off
// (launch). A task released by the scheduler that finds no free
// slot waits for one: its step is recorded pending (not running), and its
// node_started event and start time come when it gets the slot; a cancel
// or a failure of the run withdraws it, and its step is skipped.
type Driver struct {
	Registry *node.Registry
	Clock    clock.Clock
	// slots bounds tasks across every run of this driver.
	slots chan struct{}
}

// NewDriver returns a driver allowing maxTasks tasks at once over all runs.
func NewDriver(reg *node.Registry, clk clock.Clock, maxTasks int) *Driver {
	if clk == nil {
		clk = clock.Real{}
	}
	if maxTasks <= 0 {
		maxTasks = 64
	}
	return &Driver{Registry: reg, Clock: clk, slots: make(chan struct{}, maxTasks)}
}

type taskDone struct {
	id      int64
	outcome Outcome
	params  map[string]any
	start   time.Time
	end     time.Time
	hash    string
	cached  bool
	pinned  bool
	mocked  bool
	kept    bool // Reused.Kept
	// ran is, for a kept step, when it ran (Reused.StartedAt, FinishedAt).
	ran  [2]time.Time
	open bool // a dry run did not call it (Options.DryRun)
}

// codeOpen is the code of the error a subworkflow node's child dry run
// ends with when its end is not known: the node is left open too.
const codeOpen = "dry_run_open"

// leaveOpen keeps a task a dry run did not call running: its step
// records the config hash it would run with, and the run goes on without
// it.
func (rs *runState) leaveOpen(t *Task, hash string) {
	rec := rs.steps[[2]int{t.Node.Index, t.Visit}]
	rs.open = append(rs.open, rec)
	if rec != nil {
		rec.ConfigHash = hash
		rs.record(rec)
		rs.flush()
	}
}

// runState is the driver's side of one run.
type runState struct {
	d      *Driver
	plan   *Plan
	opts   Options
	sched  *Run
	scope  expr.Scope
	redact *redact.Redactor
	steps  map[[2]int]*StepRecord // (node index, visit)
	order  []*StepRecord
	// orders counts the steps recorded (the next one's StepOrder is
	// orders+1); finished counts the finished records in order, and
	// dropped those let go of (Options.KeepSteps).
	orders   int
	finished int
	dropped  int
	recErr   error
	taskCtx  context.Context
	cancelT  context.CancelCauseFunc
	cancels  map[int64]context.CancelFunc
	mu       sync.Mutex
	events   chan func()
	runSlots chan struct{}
	wg       sync.WaitGroup
	timers   map[int64]func() bool
	// loopEnv is taskEnv(callNow), made at the first task run on the
	// loop goroutine: the same for all of them.
	loopEnv *TaskEnv
	// holds are the timers that hold a step (Timer.Hold), by id.
	holds map[int64]Timer
	// wakeAt is the wake-up time of each holding step, by node index and
	// visit; signals keep the signals not yet applied, by node and visit.
	wakeAt  map[[2]int]time.Time
	signals map[sigKey]Signal
	parked  bool
	// admitted holds, for each task the scheduler released, whether it got
	// its concurrency slots at once (true) or waits for them (false);
	// launch takes the answer. held keeps the node_started events of the
	// tasks that wait, to be recorded when they start. Both belong to the
	// loop goroutine.
	admitted map[int64]bool
	held     map[int64][]Event
	// queued are the tasks waiting for a slot, under mu: a cancel withdraws
	// them (closes their channel) so they never start.
	queued  map[int64]chan struct{}
	started time.Time
	closed  chan struct{}
	hashes  []string // latest step hash per node
	// open holds, in a dry run, the steps of the tasks not called
	// (Options.DryRun).
	open []*StepRecord
	// inline tells, by node index, whether the node's tasks run on the
	// loop goroutine (inlines). ready holds, from readyAt on, the tasks
	// released to run there, in order (runReady); cancelled is the
	// cancelled context the ones a cancel reached run with.
	inline    []bool
	ready     []inlineTask
	readyAt   int
	cancelled context.Context
	// batching is set while runReady runs a batch of those tasks: apply
	// leaves what they recorded with the recorder, and the batch's end
	// flushes it once (a flush per pure task cost ~3 µs of a node's ~45
	// in a long chain; a pure task has no effect its record must precede).
	batching bool
	// postFn is post, made once: a method value made per task allocates.
	postFn func(func())
	tokens int // this run's usage, its children's included
	cost   float64
}

type sigKey struct {
	node  string
	visit int
}

// closedChan is a closed channel: a select case on it is always ready.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// ErrRecorder wraps a failure to record the run (a full or read-only disk).
var ErrRecorder = errors.New("recording the run failed")

// Execute runs a plan to the end and returns its result. Cancelling ctx
// cancels the run (DESIGN §2.6); the result then has status cancelled.
func (d *Driver) Execute(ctx context.Context, plan *Plan, opts Options) (*Result, error) {
	starts, err := plan.StartNodes(opts.Trigger)
	if err != nil {
		return nil, err
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 16
	}
	if opts.DryRun {
		opts.Instant = true
	}
	if opts.Budget == nil {
		opts.Budget = NewBudget(plan.W.Limits.MaxTokens, plan.W.Limits.MaxCostUSD, nil, opts.Spent.Tokens, opts.Spent.CostUSD)
	}
	if opts.Memory == nil {
		opts.Memory = blob.NewBudget(plan.W.Limits.MaxOutputMemory)
	}
	opts.Services = node.BudgetService.Provide(opts.Services, opts.Budget)
	if opts.Files == nil {
		opts.Files = node.NewFiles(plan.W.Dir(), plan.W.FileRoots()...)
	}
	rs := &runState{
		d: d, plan: plan, opts: opts,
		sched:    NewRun(plan, opts.RunID),
		steps:    map[[2]int]*StepRecord{},
		cancels:  map[int64]context.CancelFunc{},
		events:   make(chan func(), 64),
		runSlots: make(chan struct{}, opts.Concurrency),
		timers:   map[int64]func() bool{},
		holds:    map[int64]Timer{},
		wakeAt:   map[[2]int]time.Time{},
		signals:  map[sigKey]Signal{},
		closed:   make(chan struct{}),
		tokens:   opts.Spent.Tokens,
		cost:     opts.Spent.CostUSD,
		admitted: map[int64]bool{},
		held:     map[int64][]Event{},
		queued:   map[int64]chan struct{}{},
		hashes:   make([]string, len(plan.Nodes)),
	}
	rs.postFn = rs.post
	rs.inline = make([]bool, len(plan.Nodes))
	for i, pn := range plan.Nodes {
		// Evidence of a node with checks is captured after its call, by
		// a tool call that may take a while: not on the loop.
		rs.inline[i] = Inlines(pn) && (opts.Evidence == nil || len(pn.Node.Checks) == 0 && pn.Node.Expect == "")
	}
	rs.redact = opts.Redactor
	if rs.redact == nil {
		rs.redact = redact.New(opts.Secrets)
	}
	rs.started = d.Clock.Now()
	rs.scope = RunScope(opts.RunID, plan.W.Name, rs.started, opts.Inputs, opts.Payload, opts.Secrets)
	rs.scope.Now = d.Clock.Now
	rs.taskCtx, rs.cancelT = context.WithCancelCause(context.WithoutCancel(ctx))
	defer rs.cancelT(nil)

	payload := opts.Payload
	if payload == nil {
		payload = opts.Inputs
	}
	for _, sig := range opts.Signals {
		rs.keepSignal(sig)
	}
	acts := rs.sched.Start(starts, payload)
	done := rs.apply(acts)
	cancelled := false
	var graceStop func() bool
	sigCh := opts.SignalCh
	leave, ctxDone := opts.Leave, ctx.Done()
	for !done {
		// Tasks of pure kinds run here, a few at a time, between the
		// events: a long foreach of them leaves room for the other
		// branches' ends, signals and a cancel.
		var readyCh chan struct{}
		if rs.readyAt < len(rs.ready) {
			readyCh = closedChan
		}
		select {
		case <-readyCh:
			rs.runReady()
			done = rs.over()
		case fn := <-rs.events:
			fn()
			done = rs.over()
		case sig, ok := <-sigCh:
			if !ok {
				sigCh = nil
				break
			}
			if rs.keepSignal(sig) {
				rs.deliver(sig)
			}
			done = rs.over()
		case <-leave:
			leave = nil
			if rs.mayPark(true) {
				// It only waits: it is left waiting, to go on later.
				rs.parked, done = true, true
				break
			}
			ctxDone = closedChan
		case <-ctxDone:
			if cancelled {
				break
			}
			cancelled = true
			rs.withdrawQueued()
			done = rs.apply(rs.sched.Cancel())
			if opts.CancelGrace > 0 {
				graceStop = d.Clock.AfterFunc(opts.CancelGrace, func() {
					rs.cancelT(errors.New("the run was cancelled and its grace period ran out"))
				})
			}
			ctxDone = nil // stop selecting on it
		case <-opts.Hard:
			rs.cancelT(errors.New("the run was cancelled"))
			opts.Hard = nil
		}
		if !done && !cancelled && rs.mayPark(false) {
			rs.parked, done = true, true
		}
	}
	if graceStop != nil {
		graceStop()
	}
	for _, stop := range rs.timers {
		stop()
	}
	close(rs.closed)
	rs.cancelT(nil)
	rs.wg.Wait()
	return rs.result(), rs.recErr
}

// apply carries out a scheduler step. It reports whether the run is over
// and nothing runs any more.
func (rs *runState) apply(a *Actions) bool {
	now := rs.d.Clock.Now()
	rs.admit(a)
	rs.holdUntil(a, now, nil)
	for _, su := range a.Steps {
		rs.recordStep(su, now, nil)
	}
	for _, ev := range a.Events {
		if !rs.hold(ev) {
			rs.recordEvent(ev, now)
		}
	}
	if !rs.batching {
		rs.flush()
	}
	for _, id := range a.Stop {
		if stop, ok := rs.timers[id]; ok {
			stop()
			delete(rs.timers, id)
			delete(rs.holds, id)
		}
	}
	for _, t := range a.Timers {
		id := t.ID
		delay := t.Delay
		if t.Hold {
			rs.holds[id] = t
			delay = max(0, rs.wakeAt[[2]int{t.Index, t.Visit}].Sub(now))
		}
		if rs.opts.Instant && !t.Timeout {
			delay = 0
		}
		rs.timers[id] = rs.d.Clock.AfterFunc(delay, func() {
			select {
			case rs.events <- func() {
				delete(rs.timers, id)
				delete(rs.holds, id)
				rs.apply(rs.sched.TimerFired(id))
			}:
			case <-rs.closed:
			}
		})
	}
	if a.CancelRunning {
		rs.withdrawQueued()
		rs.mu.Lock()
		for _, c := range rs.cancels {
			c()
		}
		rs.mu.Unlock()
		for i := rs.readyAt; i < len(rs.ready); i++ {
			rs.ready[i].cancelled = true
		}
	}
	for _, t := range a.Start {
		rs.launch(t)
	}
	for _, aw := range a.Awaits {
		if sig, ok := rs.signals[sigKey{aw.Signal, aw.Visit}]; ok {
			rs.deliver(sig)
		}
	}
	rs.sched.Recycle(a)
	return rs.over()
}

// over reports whether the run is over and nothing runs any more; or, in
// a dry run, whether nothing can go on: every task left is one not called
// (Options.DryRun), and no timer will fire but a signal's timeout.
func (rs *runState) over() bool {
	if rs.sched.Ended() && rs.sched.Running() == 0 {
		return true
	}
	if !rs.opts.DryRun || rs.sched.Running() != len(rs.open) {
		return false
	}
	for id := range rs.timers {
		if t, ok := rs.holds[id]; !ok || !t.Timeout {
			return false
		}
	}
	return true
}

// admit gives the tasks a releases their concurrency slots when some are
// free; the others wait for one in their goroutine (launch). A task that
// waits is not running: its step is recorded pending and its node_started
// event is held until it gets a slot (DESIGN §2.7).
func (rs *runState) admit(a *Actions) {
	for _, t := range a.Start {
		if _, ok := rs.admitted[t.ID]; ok {
			continue
		}
		rs.admitted[t.ID] = rs.trySlots()
	}
}

// trySlots takes a slot of the run and one of the process if both are
// free, without waiting.
func (rs *runState) trySlots() bool {
	select {
	case rs.runSlots <- struct{}{}:
	default:
		return false
	}
	select {
	case rs.d.slots <- struct{}{}:
		return true
	default:
		<-rs.runSlots
		return false
	}
}

// waits reports whether task id was released but waits for a slot.
func (rs *runState) waits(id int64) bool {
	ok, known := rs.admitted[id]
	return known && !ok
}

// hold keeps the node_started event of a task that waits for a slot, and
// reports whether it did.
func (rs *runState) hold(ev Event) bool {
	if ev.Type != EventNodeStarted {
		return false
	}
	for id, ok := range rs.admitted {
		if ok {
			continue
		}
		if t := rs.sched.Task(id); t != nil && t.Node.ID == ev.Node && t.Visit == ev.Visit {
			rs.held[id] = append(rs.held[id], ev)
			return true
		}
	}
	return false
}

// began records that a task that waited for a slot got one and starts
// now: its step is running from now and its node_started event is
// recorded.
func (rs *runState) began(t *Task, at time.Time) {
	evs := rs.held[t.ID]
	delete(rs.held, t.ID)
	rs.recordStep(StepUpdate{TaskID: t.ID, Node: t.Node.ID, Index: t.Node.Index, Visit: t.Visit, Iteration: t.Iteration,
		Attempt: t.Attempt, Status: StatusRunning}, at, nil)
	for _, ev := range evs {
		rs.recordEvent(ev, at)
	}
	rs.flush()
}

// withdrawQueued stops the tasks waiting for a slot from starting: the
// run is being cancelled or failed, and they end as never started.
func (rs *runState) withdrawQueued() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for id, ch := range rs.queued {
		close(ch)
		delete(rs.queued, id)
	}
}

// holdUntil sets the wake-up time of each step a timer of a will hold:
// the one an earlier execution recorded for it (Options.Wakes), else now
// plus the timer's delay. td is the task whose end set the timers, when
// one did.
func (rs *runState) holdUntil(a *Actions, now time.Time, td *taskDone) {
	for _, t := range a.Timers {
		if !t.Hold {
			continue
		}
		key := [2]int{t.Index, t.Visit}
		if _, ok := rs.wakeAt[key]; ok {
			continue // a step holds once: set when its task ended
		}
		wake := now.Add(t.Delay)
		if t.Delay == time.Duration(math.MaxInt64) || wake.Before(now) {
			wake = farFuture // a delay beyond time.Time's reach
		}
		if rs.opts.Wakes != nil && td != nil && td.hash != "" {
			if w, ok := rs.opts.Wakes(rs.plan.Nodes[t.Index].ID, t.Visit, td.hash); ok {
				wake = w
			}
		}
		rs.wakeAt[key] = wake
	}
}

// farFuture stands for a wake-up time too far to reach.
var farFuture = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// keepSignal keeps a signal until its step waits; the first signal for a
// step counts. It reports whether sig was kept.
func (rs *runState) keepSignal(sig Signal) bool {
	k := sigKey{sig.Node, sig.Visit}
	if _, ok := rs.signals[k]; ok {
		return false
	}
	if sig.At.IsZero() {
		sig.At = rs.d.Clock.Now()
	}
	rs.signals[k] = sig
	return true
}

// deliver applies a signal to its step, when the step waits for it and
// the signal came before the step's timeout.
func (rs *runState) deliver(sig Signal) {
	for _, aw := range rs.sched.Awaiting() {
		if aw.Signal != sig.Node || aw.Visit != sig.Visit {
			continue
		}
		if rs.hasTimeout(aw) {
			if wake := rs.wakeAt[[2]int{aw.Index, aw.Visit}]; sig.At.After(wake) {
				rs.recordEvent(Event{Type: EventWarning, Node: sig.Node, Visit: sig.Visit, Data: map[string]any{
					"message": fmt.Sprintf("the signal for %s came at %s, after its timeout (%s): ignored", sig.Node,
						sig.At.UTC().Format(time.RFC3339), wake.UTC().Format(time.RFC3339))}}, rs.d.Clock.Now())
				return
			}
		}
		if a, ok := rs.sched.Signal(sig.Node, sig.Visit, sig.Data, sig.At); ok {
			rs.apply(a)
		}
		return
	}
}

// hasTimeout reports whether a waiting step has a timeout timer.
func (rs *runState) hasTimeout(aw Await) bool {
	for _, t := range rs.holds {
		if t.Timeout && t.Index == aw.Index && t.Visit == aw.Visit {
			return true
		}
	}
	return false
}

// mayPark reports whether the execution may end with its run waiting
// (Options.Park): nothing runs, no retry is due, and every hold ends
// more than Park.After from now. With now set (Options.Leave), any wait
// will do.
func (rs *runState) mayPark(now bool) bool {
	p := rs.opts.Park
	if now {
		p = &Park{After: -1 << 62}
	}
	if p == nil || rs.sched.Ended() || rs.sched.Running() > 0 || rs.recErr != nil {
		return false
	}
	awaits := len(rs.sched.Awaiting())
	if awaits == 0 && (p.SignalsOnly || len(rs.timers) == 0) {
		return false
	}
	clk := rs.d.Clock.Now()
	for id := range rs.timers {
		t, ok := rs.holds[id]
		if !ok {
			return false // a retry
		}
		if p.SignalsOnly && !t.Timeout {
			return false
		}
		if rs.wakeAt[[2]int{t.Index, t.Visit}].Sub(clk) <= p.After {
			return false
		}
	}
	return true
}

func (rs *runState) recordEvent(ev Event, now time.Time) {
	ev.Data, _ = rs.redact.Map(ev.Data)
	if rs.opts.Recorder != nil && rs.recErr == nil {
		if err := rs.opts.Recorder.Event(TimedEvent{Time: now, Event: ev}); err != nil {
			rs.recErr = fmt.Errorf("%w: %w", ErrRecorder, err)
			rs.failRecording()
		}
	}
}

func (rs *runState) flush() {
	if f, ok := rs.opts.Recorder.(Flusher); ok && rs.recErr == nil {
		if err := f.Flush(); err != nil {
			rs.recErr = fmt.Errorf("%w: %w", ErrRecorder, err)
			rs.failRecording()
		}
	}
}

func (rs *runState) failRecording() {
	rs.cancelT(rs.recErr)
	rs.apply(rs.sched.Cancel())
}

func (rs *runState) recordStep(su StepUpdate, now time.Time, done *taskDone) {
	key := [2]int{su.Index, su.Visit}
	rec, ok := rs.steps[key]
	if !ok {
		rs.orders++
		rec = &StepRecord{StepOrder: rs.orders, Node: su.Node, Type: rs.plan.Nodes[su.Index].Type, Visit: su.Visit, Iteration: su.Iteration}
		rs.steps[key] = rec
		rs.order = append(rs.order, rec)
	}
	was := final(rec)
	o := StepOptions{Pending: su.Status == StatusRunning && rs.waits(su.TaskID), Redactor: rs.redact, Blobs: rs.opts.Blobs, Place: Here()}
	if w, ok := rs.wakeAt[key]; ok {
		wake := w // on the heap only here, not at every step's record
		o.WakeAt = &wake
	}
	var end *StepEnd
	if done != nil {
		end = &StepEnd{At: done.end, Outcome: done.outcome, Params: done.params, Hash: done.hash,
			Cached: done.cached, Pinned: done.pinned, Mocked: done.mocked}
		if done.kept && !done.ran[0].IsZero() {
			// The run's own step from before it parked: as it was.
			end.Started, end.At = done.ran[0], done.ran[1]
		}
	}
	ApplyStep(rec, su, now, end, o)
	rs.record(rec)
	if final(rec) != was {
		if was {
			rs.finished--
		} else {
			rs.finished++
		}
	}
	if keep := rs.opts.KeepSteps; keep > 0 && rs.finished > keep {
		rs.dropFinished()
	}
}

// final tells whether a step record will not change again: its step
// ended and no attempt of it is due.
func final(rec *StepRecord) bool {
	switch rec.Status {
	case StatusSuccess, StatusFailed, StatusSkipped, StatusCancelled:
		return !rec.Retry
	}
	return false
}

// dropFinished lets go of the finished step records but the latest visit
// of each node and its latest to succeed or fail (Options.KeepSteps).
// When what it keeps is still over half the bound, the bound doubles, so
// that each record is looked at a bounded number of times.
func (rs *runState) dropFinished() {
	type latest struct{ any, ended *StepRecord }
	last := make(map[string]latest, len(rs.plan.Nodes))
	for _, rec := range rs.order {
		if !final(rec) {
			continue
		}
		l := last[rec.Node]
		if l.any == nil || rec.Visit >= l.any.Visit {
			l.any = rec
		}
		if (rec.Status == StatusSuccess || rec.Status == StatusFailed) && (l.ended == nil || rec.Visit >= l.ended.Visit) {
			l.ended = rec
		}
		last[rec.Node] = l
	}
	kept := rs.order[:0]
	rs.finished = 0
	for _, rec := range rs.order {
		if final(rec) {
			if l := last[rec.Node]; rec != l.any && rec != l.ended {
				delete(rs.steps, [2]int{rs.plan.G.Index[rec.Node], rec.Visit})
				rs.dropped++
				continue
			}
			rs.finished++
		}
		kept = append(kept, rec)
	}
	clear(rs.order[len(kept):])
	rs.order = kept
	if rs.finished > rs.opts.KeepSteps/2 {
		rs.opts.KeepSteps *= 2
	}
}

// record hands a step's record to the recorder.
func (rs *runState) record(rec *StepRecord) {
	if rs.opts.Recorder != nil && rs.recErr == nil {
		if err := rs.opts.Recorder.Step(rec); err != nil {
			rs.recErr = fmt.Errorf("%w: %w", ErrRecorder, err)
			rs.failRecording()
		}
	}
}

// processStarted records the process group a running task's kind started
// on its step and flushes the recorder at once: the group must reach the
// store before Skein can die with it running.
func (rs *runState) processStarted(t *Task, pgid int) {
	rec := rs.steps[[2]int{t.Node.Index, t.Visit}]
	if rec == nil || rec.Status != StatusRunning {
		return
	}
	rec.ProcessGroup = pgid
	rs.record(rec)
	rs.flush()
}

// launch runs a task within the run's and the process's limits: a task
// of a pure kind that got its slots at once on the loop goroutine (queued
// for runReady), any other in a goroutine of its own, which posts its
// outcome back to the loop.
func (rs *runState) launch(t *Task) {
	upstream := rs.upstreamHashes(t.Node)
	admitted := rs.admitted[t.ID]
	delete(rs.admitted, t.ID)
	if admitted && rs.inline[t.Node.Index] {
		rs.ready = append(rs.ready, inlineTask{t: t, upstream: upstream})
		return
	}
	ctx, cancel := context.WithCancel(rs.taskCtx)
	var withdraw chan struct{}
	rs.mu.Lock()
	rs.cancels[t.ID] = cancel
	if !admitted {
		withdraw = make(chan struct{})
		rs.queued[t.ID] = withdraw
	}
	rs.mu.Unlock()
	rs.wg.Add(1)
	go func() {
		defer rs.wg.Done()
		defer cancel()
		start := rs.d.Clock.Now()
		var oc Outcome
		var params map[string]any
		td := &taskDone{id: t.ID}
		if admitted || rs.waitSlots(ctx, t, withdraw) {
			if !admitted {
				start = rs.d.Clock.Now()
				rs.post(func() { rs.began(t, start) })
			}
			oc, params = rs.runTask(ctx, t, upstream, td, rs.postFn)
			oc, params = Keep(rs.opts.Blobs, rs.opts.Memory, t.Node, oc, params)
			oc = KeepMessage(rs.opts.Blobs, rs.redact, oc)
			<-rs.d.slots
			<-rs.runSlots
			if rs.opts.DryRun && (td.open || oc.Err != nil && oc.Err.Code == codeOpen) {
				rs.mu.Lock()
				delete(rs.cancels, t.ID)
				rs.mu.Unlock()
				rs.events <- func() { rs.leaveOpen(t, td.hash) }
				return
			}
		} else {
			msg := "the run was cancelled before the node started"
			if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
				msg = cause.Error()
			}
			oc = Outcome{NotStarted: true, Err: &node.Error{Code: "cancelled", Category: node.CategoryCancelled, Permanent: true, Message: msg}}
		}
		if oc.Err != nil && ctx.Err() != nil && oc.Err.Category != node.CategoryTimeout {
			oc.Err.Category = node.CategoryCancelled
		}
		end := rs.d.Clock.Now()
		rs.mu.Lock()
		delete(rs.cancels, t.ID)
		rs.mu.Unlock()
		rs.events <- func() { rs.finish(t, td, oc, params, start, end) }
	}()
}

// finish hands a task's outcome to the scheduler, on the loop goroutine,
// records its step and carries out what follows.
func (rs *runState) finish(t *Task, td *taskDone, oc Outcome, params map[string]any, start, end time.Time) {
	a := rs.sched.Finished(t.ID, oc)
	now := rs.d.Clock.Now()
	td.outcome, td.params, td.start, td.end = oc, params, start, end
	rs.admit(a)
	rs.holdUntil(a, now, td)
	if td.hash != "" && oc.Err == nil {
		rs.hashes[t.Node.Index] = td.hash
	}
	if !td.cached && !td.pinned && !td.kept {
		tokens, cost := usageOf(oc.Directives)
		if oc.Err != nil {
			tokens, cost = failedUsage(oc.Err)
		}
		rs.opts.Budget.Add(tokens, cost)
		rs.tokens += tokens
		rs.cost += cost
	}
	for _, su := range a.Steps {
		if su.TaskID == t.ID {
			rs.recordStep(su, now, td)
		} else {
			rs.recordStep(su, now, nil)
		}
	}
	a.Steps = a.Steps[:0]
	rs.apply(a)
}

// inlineTask is a task of a pure kind waiting to run on the loop
// goroutine, with the upstream hashes it was released with. cancelled
// says a cancel reached it before it ran: it runs with a cancelled
// context, as a task in a goroutine whose context a cancel ended does.
type inlineTask struct {
	t         *Task
	upstream  []string
	cancelled bool
}

// inlineBatch is how many pure tasks the loop runs before it looks at its
// events again.
const inlineBatch = 16

// Inlines reports whether the tasks of pn may run where the run's state
// is, without a hand-off: its kind declares itself pure (node.Spec.Pure:
// it computes its output from its parameters, with no I/O) and runs no
// child runs, whose ends come back through the driver. The local driver
// runs them on its loop goroutine; a queue worker in the transaction that
// released them.
func Inlines(pn *PlanNode) bool {
	return pn.Spec.Pure && !pn.Spec.RunsChildren && pn.Spec.Role != node.RoleSubworkflow
}

// runReady runs up to inlineBatch of the tasks queued to run on the loop
// goroutine, in the order they were released.
//
// The records of the batch go to the recorder once, at its end, not at
// each task's (see runState.batching).
func (rs *runState) runReady() {
	rs.batching = true
	defer func() {
		rs.batching = false
		rs.flush()
	}()
	for n := 0; n < inlineBatch && rs.readyAt < len(rs.ready); n++ {
		it := rs.ready[rs.readyAt]
		rs.ready[rs.readyAt] = inlineTask{}
		rs.readyAt++
		if rs.readyAt == len(rs.ready) {
			rs.ready, rs.readyAt = rs.ready[:0], 0
		}
		rs.runInline(it)
	}
}

// runInline runs a task of a pure kind on the loop goroutine, holding the
// slots it was admitted with, as launch's goroutine would: what the task
// posts to the loop (an event it emits) is done at once, before its end.
func (rs *runState) runInline(it inlineTask) {
	t := it.t
	ctx := rs.taskCtx
	if it.cancelled {
		if rs.cancelled == nil {
			var cancel context.CancelFunc
			rs.cancelled, cancel = context.WithCancel(rs.taskCtx)
			cancel()
		}
		ctx = rs.cancelled
	}
	td := &taskDone{id: t.ID}
	start := rs.d.Clock.Now()
	oc, params := rs.runTask(ctx, t, it.upstream, td, nil)
	oc, params = Keep(rs.opts.Blobs, rs.opts.Memory, t.Node, oc, params)
	oc = KeepMessage(rs.opts.Blobs, rs.redact, oc)
	<-rs.d.slots
	<-rs.runSlots
	if rs.opts.DryRun && (td.open || oc.Err != nil && oc.Err.Code == codeOpen) {
		rs.leaveOpen(t, td.hash)
		return
	}
	if oc.Err != nil && ctx.Err() != nil && oc.Err.Category != node.CategoryTimeout {
		oc.Err.Category = node.CategoryCancelled
	}
	rs.finish(t, td, oc, params, start, rs.d.Clock.Now())
}

// callNow calls fn: what a task on the loop goroutine posts to the loop.
func callNow(fn func()) { fn() }

// waitSlots waits for a slot of the run and one of the process for a task
// that did not get them at once. It reports false, holding no slot, when
// the task was withdrawn or its context ended first.
func (rs *runState) waitSlots(ctx context.Context, t *Task, withdraw chan struct{}) bool {
	got := false
	select {
	case rs.runSlots <- struct{}{}:
		select {
		case rs.d.slots <- struct{}{}:
			got = true
		case <-ctx.Done():
		case <-withdraw:
		}
		if !got {
			<-rs.runSlots
		}
	case <-ctx.Done():
	case <-withdraw:
	}
	rs.mu.Lock()
	_, queued := rs.queued[t.ID]
	delete(rs.queued, t.ID)
	rs.mu.Unlock()
	if got && !queued { // withdrawn as it took its slots
		<-rs.d.slots
		<-rs.runSlots
		got = false
	}
	return got
}

// runTask renders the node's parameters and runs its kind; post runs a
// function on the loop goroutine (runState.post), nil for a task run on it.
func (rs *runState) runTask(ctx context.Context, t *Task, upstream []string, td *taskDone, post func(func())) (Outcome, map[string]any) {
	pn := t.Node
	onLoop := post == nil
	if onLoop {
		post = callNow
	}
	params, hash, err := Prepare(rs.scope, t, NodeDef(pn), upstream, TaskClock(rs.opts.Services, rs.d.Clock.Now, t))
	if err != nil {
		return Outcome{Err: err}, nil
	}
	td.hash = hash
	if rs.opts.Reuse != nil && !pn.Iterates() && t.Resume == nil {
		r, ok := rs.opts.Reuse(ReuseQuery{Node: pn.ID, Visit: t.Visit, Iteration: t.Iteration, Hash: td.hash})
		if ok && r.Mocked {
			td.mocked = true
			if r.Err != nil {
				e := *r.Err
				return Outcome{Err: &e}, params
			}
			return Outcome{Output: r.Output, Directives: r.Directives}, params
		}
		if ok {
			td.cached, td.pinned, td.kept = !r.Pinned && !r.Kept, r.Pinned, r.Kept
			td.ran = [2]time.Time{r.StartedAt, r.FinishedAt}
			return Outcome{Output: r.Output, Directives: reusedDirectives(r)}, params
		}
		if r.Miss != "" {
			msg := fmt.Sprintf("node %s runs again: %s", pn.ID, r.Miss)
			post(func() {
				rs.recordEvent(Event{Type: EventWarning, Node: pn.ID, Visit: t.Visit, Iteration: t.Iteration,
					Data: map[string]any{"message": msg, "reuse": "masked"}}, rs.d.Clock.Now())
			})
		}
	}
	if rs.opts.DryRun && !pn.Spec.Pure && pn.Spec.Role != node.RoleSubworkflow {
		td.open = true
		return Outcome{}, params
	}
	// A task on the loop shares the loop's env (Call does not change
	// it); one that runs children gets a copy with its own services.
	var env *TaskEnv
	if onLoop {
		if rs.loopEnv == nil {
			e := rs.taskEnv(callNow)
			rs.loopEnv = &e
		}
		env = rs.loopEnv
	} else {
		e := rs.taskEnv(post)
		env = &e
	}
	if pn.Spec.Role == node.RoleSubworkflow || pn.Spec.RunsChildren {
		own := *env
		own.Services = node.ChildrenService.Provide(own.Services, &subRunner{rs: rs, task: t})
		env = &own
	}
	return env.Call(ctx, t, params), params
}

// reusedDirectives are the directives of a reused step: a wait whose
// recorded step got its signal does not wait for one again (its output
// has the signal's data and time).
func reusedDirectives(r Reused) map[string]any {
	if r.Directives[DirectiveAwait] == nil || r.Output["signaled_at"] == nil {
		return r.Directives
	}
	d := make(map[string]any, len(r.Directives))
	for k, v := range r.Directives {
		if k != DirectiveAwait {
			d[k] = v
		}
	}
	return d
}

// taskEnv is what the run's tasks are called with; post runs a function
// on the loop goroutine.
func (rs *runState) taskEnv(post func(func())) TaskEnv {
	return TaskEnv{
		Registry: rs.d.Registry, RunID: rs.opts.RunID, Scope: rs.scope, Redactor: rs.redact,
		Files: rs.opts.Files, Services: rs.opts.Services, Blobs: rs.opts.Blobs,
		ArtifactDir: rs.opts.ArtifactDir, Evidence: rs.opts.Evidence, Now: rs.d.Clock.Now,
		Emit: func(t *Task, kind string, data map[string]any) {
			post(func() {
				rs.recordEvent(Event{Type: kind, Node: t.Node.ID, Visit: t.Visit, Iteration: t.Iteration, Data: data}, rs.d.Clock.Now())
				// Out now, not with the step's end: a streamed reply's
				// text and a tool's progress are for following the node
				// while it runs.
				rs.flush()
			})
		},
		ProcessStarted: func(t *Task, pgid int) {
			// Posted before Run returns, so it reaches the loop before
			// the task's end does.
			post(func() { rs.processStarted(t, pgid) })
		},
	}
}

func safeRun(ctx context.Context, k node.Kind, c *node.Call) (out map[string]any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &node.Error{Code: "panic", Category: node.CategoryInternal, Permanent: true,
				Message: fmt.Sprintf("node %s crashed: %v", c.NodeID, p)}
		}
	}()
	return k.Run(ctx, c)
}

// post runs fn on the run's loop goroutine.
func (rs *runState) post(fn func()) {
	select {
	case rs.events <- fn:
	case <-rs.closed:
	}
}

// waiting marks a task's step as waiting (a subworkflow's parent while its
// child runs).
func (rs *runState) waiting(t *Task) {
	rs.post(func() {
		rs.recordStep(StepUpdate{TaskID: t.ID, Node: t.Node.ID, Index: t.Node.Index, Visit: t.Visit, Iteration: t.Iteration,
			Attempt: t.Attempt, Status: StatusWaiting}, rs.d.Clock.Now(), nil)
		rs.flush() // waiting is a state others look at: record it now
	})
}

// RenderParams renders a node's parameters in scope, coerces each to its
// declared type (node.Param.Coerce) and fills in defaults. Bare expressions
// (conditions) are passed as written. A value that cannot be coerced, or a
// required parameter whose template renders null, fails the node with code
// param_type: the same value written literally is a validation error.
func RenderParams(pn *PlanNode, scope *expr.Scope) (map[string]any, *node.Error) {
	params := make(map[string]any, len(pn.Spec.Params))
	for _, p := range pn.Spec.Params {
		v, ok := pn.Node.Params[p.Name]
		if !ok || v == nil {
			if p.Default != nil {
				params[p.Name] = p.Default
			}
			continue
		}
		if p.Expr || p.Type == node.List && len(p.Items) > 0 {
			params[p.Name] = v // conditions and items holding them: the kind evaluates them
			continue
		}
		rv := v
		if !p.NoTemplate {
			var err error
			if rv, err = expr.RenderValue(v, scope); err != nil {
				return nil, &node.Error{Code: "template", Category: node.CategoryTemplate, Permanent: true, Err: err,
					Message: fmt.Sprintf("parameter %s (line %d): %v", p.Name, pn.Node.ParamPos(p.Name).Line, err),
					Details: TemplateDetails(err)}
			}
			// A kind gets its parameters whole: the big values a template
			// passed on as they were (`{{ fetch }}`) are read back. A
			// foreach's items are not: the scheduler hands them on one by
			// one, and templates load what they read of them.
			if !pn.IsForEach() {
				if rv, err = blob.Resolve(rv); err != nil {
					return nil, &node.Error{Code: "big_value", Category: node.CategoryInternal, Err: err,
						Message: fmt.Sprintf("parameter %s (line %d): %v", p.Name, pn.Node.ParamPos(p.Name).Line, err)}
				}
			}
		}
		cv, err := p.Coerce(rv)
		if err != nil {
			return nil, &node.Error{Code: "param_type", Category: node.CategoryValidation, Permanent: true, Err: err,
				Message: fmt.Sprintf("parameter %s (line %d): %v", p.Name, pn.Node.ParamPos(p.Name).Line, err)}
		}
		if cv == nil {
			if p.Default != nil {
				params[p.Name] = p.Default
			} else if p.Required {
				return nil, &node.Error{Code: "param_type", Category: node.CategoryValidation, Permanent: true,
					Message: fmt.Sprintf("parameter %s (line %d) is required, but its value is null", p.Name, pn.Node.ParamPos(p.Name).Line)}
			}
			continue
		}
		params[p.Name] = cv
	}
	return params, nil
}

// TemplateDetails are the details of a template's error: when it read a
// key an object lacked, the path it read (missing) and the object's keys
// (available_fields, sorted, at most expr.MaxAvailableFields).
func TemplateDetails(err error) map[string]any {
	var xe *expr.Error
	if !errors.As(err, &xe) || xe.Missing == "" {
		return nil
	}
	fields := make([]any, len(xe.AvailableFields))
	for i, f := range xe.AvailableFields {
		fields[i] = f
	}
	return map[string]any{"missing": xe.Missing, "available_fields": fields}
}

func (rs *runState) result() *Result {
	end := rs.d.Clock.Now()
	res := &Result{
		RunID: rs.opts.RunID, Workflow: rs.plan.W.Name, Steps: rs.order, Dropped: rs.dropped,
		StartedAt: rs.started, FinishedAt: end, DurationMS: end.Sub(rs.started).Milliseconds(),
		Tokens: rs.tokens, CostUSD: rs.cost,
	}
	a := rs.sched
	if len(rs.open) > 0 && !a.Stopping() {
		// A dry run that stopped at tasks it did not call: how the run
		// ends is not known.
		res.Status, res.Open, res.Outputs = RunRunning, rs.open, map[string]any{}
		return res
	}
	switch {
	case a.Stopping():
		res.Status, res.Error = a.Status()
	case rs.parked:
		res.Status = RunWaiting
		res.Awaiting = a.Awaiting()
		for _, t := range rs.holds {
			if w := rs.wakeAt[[2]int{t.Index, t.Visit}]; res.WakeAt == nil || w.Before(*res.WakeAt) {
				res.WakeAt = &w
			}
		}
	default:
		res.Status = RunCompleted
	}
	if rs.recErr != nil {
		res.Status = RunFailed
		res.Error = &node.Error{Code: "recorder", Category: node.CategoryInternal, Message: rs.recErr.Error()}
	}
	if res.Status == RunWaiting {
		res.Error, _ = rs.redact.Error(res.Error)
		res.Outputs = map[string]any{} // the run has not ended
		return res
	}
	outs, err := rs.outputs()
	if err != nil && res.Status == RunCompleted {
		res.Status = RunFailed
		res.Error = &node.Error{Code: "outputs", Category: node.CategoryTemplate, Message: err.Error(),
			Details: TemplateDetails(err)}
	}
	// The run's error is the failed step's, details and all (a command's
	// stderr, a response body): masked like the step's.
	res.Error, _ = rs.redact.Error(res.Error)
	res.Outputs, _ = rs.redact.Map(outs)
	var keepErr *node.Error
	if res.Outputs, keepErr = KeepOutputs(rs.opts.Blobs, res.Outputs); keepErr != nil && res.Error == nil {
		res.Status, res.Error = RunFailed, keepErr
	}
	res.Error = record.ErrorContext("", res.Error) // a step's names its node already
	return res
}

// outputs evaluates the workflow's outputs (see Outputs).
func (rs *runState) outputs() (map[string]any, error) {
	return Outputs(rs.plan, rs.scope, rs.sched)
}

// Redactor returns a function that masks the secrets' values, and their
// encoded forms, in a string (see redact.New).
func Redactor(secrets map[string]string) func(string) string {
	return redact.New(secrets).Func()
}
