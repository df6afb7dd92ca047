package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"golang.org/x/sync/singleflight"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// DefaultQueue is the queue of the nodes that name none.
const DefaultQueue = river.QueueDefault

// OwnerHost is the owner a queue run is recorded with while it runs: the
// run belongs to the workers, not to one process, so no takeover claims
// it and `skein runs` says who has it.
const OwnerHost = "river queue"

// ownerPrefix starts the owner token of a queue run.
const ownerPrefix = "queue:"

// queueLease is the lease of a queue run: the workers hold it together
// until it ends (a worker's own lease is River's job rescue).
const queueLease = 100 * 365 * 24 * time.Hour

// Config configures a Driver.
type Config struct {
	Store    *postgres.Store
	Registry *node.Registry
	// Secrets returns the values of a workflow's secrets on this machine
	// (nil: from the environment).
	Secrets func(w *workflow.Workflow) (map[string]string, error)
	// Services returns the services a run's tasks get on this worker (its
	// MCP pool, models, HTTP policy) and releases them; nil gives none.
	Services func(w *workflow.Workflow, inputs map[string]any, secrets map[string]string) (*node.Services, func())
	// Deliver makes the next attempt of the delivery of a queued run that
	// ended (DeliveryArgs), claiming it with DeliveryToken, and returns
	// when the next attempt is due (0: the delivery ended). nil: this
	// worker's delivery jobs are cancelled.
	Deliver func(ctx context.Context, run *store.Run, generation int, w *workflow.Workflow) (time.Duration, error)
	// Queues are the queues this process works, each with its number of
	// nodes running at once (slots.go); nil: this driver only starts runs
	// (skein run, serve without --worker).
	Queues map[string]int
	// Poll is how often a worker looks for cancel requests and signals
	// (default 1 s); FetchPoll how often River looks for jobs when no
	// notification came (default 1 s).
	Poll      time.Duration
	FetchPoll time.Duration
	// RescueAfter is how long this worker may go silent (killed, paused,
	// cut off from the database) before another worker records the
	// attempts it runs as lost (default DefaultRescueAfter; rescue.go).
	RescueAfter time.Duration
	// Children, when set, runs the child workflows of a run's
	// subworkflow tasks on this worker; nil: a subworkflow node fails.
	// budget is the parent run's, as its history has it: what the child
	// spends counts against it too. waiting marks the task's step waiting
	// (DESIGN §2.7: the parent step of a subworkflow waits while its
	// child runs); call it as the child starts.
	Children func(runID string, w *workflow.Workflow, t *engine.Task, secrets map[string]string, budget *engine.Budget, waiting func()) node.Children
	// TimerDelay, when set, replaces the delay of each timer (tests).
	TimerDelay func(t engine.Timer) time.Duration
	// Exec, when set, plays the tasks in place of their kinds (tests that
	// script outcomes, as the scheduler's property tests do).
	Exec   func(ctx context.Context, runID string, t *engine.Task) engine.Outcome
	Logger *slog.Logger
	// Clock times what the driver records (a run's start, its steps,
	// events and end) and the timers this process wakes itself, as the
	// local driver's clock does (engine.Driver.Clock); default the wall
	// clock. Leases and River's schedule are timed by the database.
	Clock clock.Clock
	// Blobs keeps the big values and artifacts of the nodes this driver
	// runs, where every worker and the server read them; default the
	// database's (Store.Blobs).
	Blobs blob.Backend
}

// Driver starts runs on the queue and, with Config.Queues, works its jobs.
type Driver struct {
	cfg    Config
	client *river.Client[pgx.Tx]
	// id names this worker in River and in its lease row (rescue.go).
	id, host string

	mu     sync.Mutex
	envs   map[string]*runEnv
	states map[string]*state
	plans  map[string]*planned
	groups map[string]*applyGroup
	// parts are the runs' applies waiting for the worker's next
	// transaction; committing is set while one is under way (commit.go).
	parts      []*part
	committing bool
	// contended counts, by run, the transactions of its own a run has
	// left (contendedFor).
	contended map[string]int
	// unexpected counts, by run, the transactions that read it under its
	// lock a run has left before one expects it (commit, expectAfter).
	unexpected map[string]int
	// held: a goroutine has the run's state (take); cond signals its put.
	held map[string]bool
	cond *sync.Cond
	// inflight counts the transactions led for applies nobody waits for.
	inflight sync.WaitGroup
	// artifacts is the worker's folder of its tasks' artifact folders.
	artifacts artifactRoot
	// wakes are the timers this process keeps for its timer jobs
	// (wake.go), by job id.
	wakes map[int64]func() bool
	// running stops the nodes this worker runs (cancel.go).
	running map[runningTask]context.CancelCauseFunc
	// stopping is set once Work stops taking jobs: no node takes its
	// successor any more (continue.go); continued counts those taken.
	stopping atomic.Bool
	// drained is set once Work's grace ran out, before it cancels the
	// running nodes: a node that gets a slot from then on does not run
	// (slots.go).
	drained   atomic.Bool
	continued atomic.Int64
	// inlined counts the pure nodes run in a transaction (pure.go).
	inlined atomic.Int64
	// expected counts the transactions that expected their runs (commit),
	// unexpected those of them that found a run otherwise.
	expected, unexpectedTx atomic.Int64
	// redactors are the Redactors of the secret values of its runs.
	redactors redact.Cache
	// slots bound the nodes of each queue running at once (slots.go).
	slots map[string]slots
	// announcer tells the workers of the jobs inserted (jobs.go).
	announcer announcer
	// starts are the runs being started, recorded together (start.go).
	starts starts
	// loading makes the jobs that need a run's environment or a
	// workflow's plan at once wait for one load of it.
	loading singleflight.Group
}

type planned struct {
	w     *workflow.Workflow
	plan  *engine.Plan
	nodes map[string]*engine.PlanNode // by id
}

// runEnv is what a worker holds for a run it works on.
type runEnv struct {
	id      string
	run     *store.Run
	w       *workflow.Workflow
	plan    *engine.Plan
	nodes   map[string]*engine.PlanNode // by id
	trigger string
	inputs  map[string]any
	red     *redact.Redactor
	secrets map[string]string
	// seal seals the run's history events that hold a secret (seal.go).
	seal  *sealer
	task  engine.TaskEnv
	blobs *blob.Store
	// inTx is blobs refusing new values, for the pure nodes a
	// transaction runs (pure.go).
	inTx    *blob.Store
	release func()
	// place is where the steps the scheduler ends without a task (a
	// trigger, a merge) ran: this process.
	place *record.Place
}

// TaskArgs is the job of one attempt of one node.
type TaskArgs struct {
	Run string `json:"run"`
	// Task is the scheduler's id of the attempt: the attempt token. A job
	// whose task is no longer running in the run's state changes nothing.
	Task    int64  `json:"task"`
	Node    string `json:"node"`
	Visit   int    `json:"visit"`
	Attempt int    `json:"attempt"`
}

// Kind is the River job kind.
func (TaskArgs) Kind() string { return "skein_task" }

// TimerArgs is the job of a timer: a retry's backoff, a _delay_seconds, a
// wait's duration or a signal wait's timeout.
type TimerArgs struct {
	Run   string `json:"run"`
	Timer int64  `json:"timer"`
	// Timeout is set for a signal wait's timeout: what a run that only
	// waits for signals still has queued.
	Timeout bool `json:"timeout,omitempty"`
}

// Kind is the River job kind.
func (TimerArgs) Kind() string { return "skein_timer" }

type taskWorker struct {
	river.WorkerDefaults[TaskArgs]
	d *Driver
}

func (w *taskWorker) Work(ctx context.Context, job *river.Job[TaskArgs]) error {
	return w.d.chain(ctx, job.JobRow, job.Args)
}

// Timeout: a node has its own timeout; River's must not cut it short.
func (w *taskWorker) Timeout(*river.Job[TaskArgs]) time.Duration { return -1 }

type timerWorker struct {
	river.WorkerDefaults[TimerArgs]
	d *Driver
}

func (w *timerWorker) Work(ctx context.Context, job *river.Job[TimerArgs]) error {
	return w.d.fire(ctx, job.Args)
}

// New returns a driver on cfg.Store's database, which must have been
// migrated (Migrate).
func New(cfg Config) (*Driver, error) {
	if cfg.Store == nil || cfg.Registry == nil {
		return nil, errors.New("queue: a driver needs a Postgres store and a node registry")
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Blobs == nil {
		cfg.Blobs = cfg.Store.Blobs()
	}
	if cfg.RescueAfter <= 0 {
		cfg.RescueAfter = DefaultRescueAfter
	}
	d := &Driver{cfg: cfg, envs: map[string]*runEnv{}, states: map[string]*state{}, plans: map[string]*planned{},
		groups: map[string]*applyGroup{}, held: map[string]bool{}, contended: map[string]int{}, unexpected: map[string]int{}, slots: newSlots(cfg.Queues)}
	d.cond = sync.NewCond(&d.mu)
	d.id, d.host = newWorkerID()
	workers := river.NewWorkers()
	river.AddWorker(workers, &taskWorker{d: d})
	river.AddWorker(workers, &timerWorker{d: d})
	river.AddWorker(workers, &deliveryWorker{d: d})
	rc := &river.Config{
		ID: d.id, Workers: workers, Logger: cfg.Logger, FetchPollInterval: cfg.FetchPoll,
		JobTimeout: -1, MaxAttempts: maxJobAttempts, RescueStuckJobsAfter: riverRescueAfter,
	}
	// A job a worker inserts for the next node is announced (LISTEN/
	// NOTIFY, jobs.go), but River fetches at most once per cooldown: its
	// default (100 ms) would be the latency of every hop of a chain of
	// nodes. River's least cooldown, 1 ms, also spaces the announcements
	// of the jobs River itself inserts (a timer woken early, wake.go): an
	// insert less than a cooldown after the last one is not announced,
	// and its job waits for the next poll (FetchPoll).
	rc.FetchCooldown = fetchCooldown
	if cfg.FetchPoll > 0 {
		rc.FetchCooldown = min(cfg.FetchPoll, fetchCooldown)
	}
	if len(cfg.Queues) > 0 {
		rc.Queues = map[string]river.QueueConfig{}
		for q, n := range cfg.Queues {
			rc.Queues[q] = river.QueueConfig{MaxWorkers: jobsPerQueue(n)}
		}
	}
	client, err := river.NewClient(riverpgxv5.New(cfg.Store.Pool()), rc)
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	d.client = client
	return d, nil
}

// fetchCooldown is the least time between two fetches of jobs by one
// worker's queue.
const fetchCooldown = river.FetchCooldownMin

// maxJobAttempts bounds how many times River runs one job: a node's own
// retries are new jobs, and a job taken again after its node began
// records the attempt as lost rather than run it twice (rescue.go); these
// are for errors before the node begins.
const maxJobAttempts = 5

// StartRequest starts a run on the queue.
type StartRequest struct {
	RunID    string
	Workflow *workflow.Workflow
	// Source is the workflow file's text, stored as the run's version:
	// workers read the workflow from the database. Version, when set, is
	// its stored version (Starter saved it), and Source is not needed.
	Source  []byte
	Version int
	Inputs  map[string]any
	Trigger string
	Payload map[string]any
	// StartedBy is how the run was started (store.Run.Source).
	StartedBy string
	// Secrets are the values of the run's secrets the starting process
	// knows (its environment, its secrets file): what the start records
	// is masked with them, as a local run's records are. Nil: those of
	// Config.Secrets.
	Secrets map[string]string
	// Dir is the run's folder, made when something needs it (a resume
	// on this machine).
	Dir string
}

// Start records a new run, its first history event and its first jobs
// in one transaction, and returns the run.
func (d *Driver) Start(ctx context.Context, req StartRequest) (*store.Run, error) {
	w := req.Workflow
	if req.Version == 0 {
		sum := sha256.Sum256(req.Source)
		ver, err := d.cfg.Store.SaveWorkflow(ctx, w.Name, req.Source, hex.EncodeToString(sum[:]))
		if err != nil {
			return nil, err
		}
		req.Version = ver.Version
	}
	abs, _ := filepath.Abs(w.File)
	run := &store.Run{
		ID: req.RunID, Workflow: w.Name, WorkflowVersion: req.Version, File: abs, Dir: req.Dir, Trigger: req.Trigger,
		Status: engine.RunRunning, Inputs: req.Inputs, StartedAt: d.now(),
		Owner: store.Owner{Host: OwnerHost, Token: ownerPrefix + req.RunID}, LeaseTTL: queueLease,
		Source: record.StartedBy(req.StartedBy, "", ""),
	}
	env, err := d.newEnv(ctx, run, req.Secrets)
	if err != nil {
		return nil, err
	}
	// The trigger's payload (a webhook body, a chat history, else the
	// inputs) is the trigger step's output: its values over 64 KiB go to
	// the blob store before the history and the step refer to them, as
	// any output's do.
	payload := req.Payload
	if payload == nil {
		payload = req.Inputs
	}
	if payload, _, err = env.blobs.Spill(payload, blob.InlineLimit); err != nil {
		env.release()
		return nil, fmt.Errorf("starting run %s: keeping its trigger's payload: %w", run.ID, err)
	}
	err = d.starts.do(ctx, d, &start{run: run, env: env, payload: payload})
	env.release() // a worker that starts runs runs no node of its own
	if err != nil {
		return nil, err
	}
	return run, nil
}

// newEnv loads what running a run's tasks needs on this machine: the
// run's secret values are known's, or (nil) Config.Secrets's.
func (d *Driver) newEnv(ctx context.Context, run *store.Run, known map[string]string) (*runEnv, error) {
	p, err := d.planOf(ctx, run)
	if err != nil {
		return nil, err
	}
	secrets := known
	if secrets == nil {
		if secrets, err = d.secrets(p.w); err != nil {
			return nil, fmt.Errorf("run %s: %w", run.ID, err)
		}
	}
	// A run's Redactor is shared by the runs with its secret values: made
	// once, not on each start (redact.New compiles their forms).
	red := d.redactors.For(secrets)
	if red == nil {
		red = redact.New(nil)
	}
	env := &runEnv{id: run.ID, run: run, w: p.w, plan: p.plan, nodes: p.nodes, trigger: run.Trigger, inputs: run.Inputs,
		red: red, secrets: secrets, release: func() {}, place: d.place()}
	if len(secrets) == len(p.w.Secrets) {
		// Sealed with a key made from every secret value, as the
		// workers make it; a process that knows only some of them (a
		// server starting runs whose other secrets only the workers
		// have) masks what it records, but leaves its history events
		// open for them.
		env.seal = newSealer(secrets, env.red)
	}
	env.blobs = blob.New(d.cfg.Blobs, env.red.Contains)
	env.inTx = blob.New(refuseWrites{d.cfg.Blobs}, env.red.Contains)
	var services *node.Services
	if d.cfg.Services != nil {
		services, env.release = d.cfg.Services(p.w, run.Inputs, secrets)
	}
	env.task = engine.TaskEnv{
		Registry: d.cfg.Registry, RunID: run.ID, Redactor: env.red,
		Scope:    engine.RunScope(run.ID, p.w.Name, run.StartedAt, run.Inputs, nil, secrets),
		Files:    node.NewFiles(p.w.Dir(), p.w.FileRoots()...),
		Services: services, Blobs: env.blobs, Now: d.cfg.Clock.Now,
	}
	env.task.Scope.Now = d.cfg.Clock.Now
	return env, nil
}

func (d *Driver) secrets(w *workflow.Workflow) (map[string]string, error) {
	if d.cfg.Secrets != nil {
		return d.cfg.Secrets(w)
	}
	out := map[string]string{}
	for _, name := range w.Secrets {
		if v, ok := os.LookupEnv(name); ok {
			out[name] = v
		}
	}
	return out, nil
}

// planOf returns the plan of a run's workflow version, read from the
// database once per version: the jobs that need it at once (a fan-out's
// first nodes, fetched together) wait for one read and one parse.
func (d *Driver) planOf(ctx context.Context, run *store.Run) (*planned, error) {
	key := fmt.Sprintf("%s\x00%d\x00%s", run.Workflow, run.WorkflowVersion, run.File)
	d.mu.Lock()
	p, ok := d.plans[key]
	d.mu.Unlock()
	if ok {
		return p, nil
	}
	v, err, _ := d.loading.Do("plan\x00"+key, func() (any, error) { return d.readPlan(ctx, run, key) })
	if err != nil {
		return nil, err
	}
	return v.(*planned), nil
}

// readPlan reads, parses and plans a run's workflow version, and keeps it
// under key.
func (d *Driver) readPlan(ctx context.Context, run *store.Run, key string) (*planned, error) {
	v, err := d.cfg.Store.Workflow(ctx, run.Workflow, run.WorkflowVersion)
	if err != nil {
		return nil, fmt.Errorf("run %s: reading workflow %s version %d: %w", run.ID, run.Workflow, run.WorkflowVersion, err)
	}
	w, ds := workflow.Decode(run.File, v.Source)
	if w != nil {
		ds = append(ds, workflow.ValidateOwn(w, d.cfg.Registry)...)
	}
	if ds.HasErrors() || w == nil {
		return nil, fmt.Errorf("run %s: workflow %s version %d does not load on this worker:\n%s", run.ID, run.Workflow, run.WorkflowVersion, ds.Error())
	}
	plan, err := engine.NewPlan(w, d.cfg.Registry)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID, err)
	}
	p := &planned{w: w, plan: plan, nodes: make(map[string]*engine.PlanNode, len(plan.Nodes))}
	for _, pn := range plan.Nodes {
		p.nodes[pn.ID] = pn
	}
	d.mu.Lock()
	if len(d.plans) >= 256 {
		clear(d.plans)
	}
	d.plans[key] = p
	d.mu.Unlock()
	return p, nil
}

// env returns the worker's environment of a run, loading it on first use
// (once for the jobs of the run that need it at once).
func (d *Driver) env(ctx context.Context, run *store.Run) (*runEnv, error) {
	d.mu.Lock()
	env, ok := d.envs[run.ID]
	d.mu.Unlock()
	if ok {
		return env, nil
	}
	v, err, _ := d.loading.Do("env\x00"+run.ID, func() (any, error) {
		env, err := d.newEnv(ctx, run, nil)
		if err != nil {
			return nil, err
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if e, ok := d.envs[run.ID]; ok {
			env.release()
			return e, nil
		}
		d.envs[run.ID] = env
		return env, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*runEnv), nil
}

// place is where this process runs steps: its host and process id and,
// when it works queues, its worker id.
func (d *Driver) place() *record.Place {
	p := &record.Place{Host: d.host, PID: os.Getpid()}
	if len(d.cfg.Queues) > 0 {
		p.Worker = d.id
	}
	return p
}

// forget drops what the worker holds for a run that ended.
func (d *Driver) forget(id string) {
	d.mu.Lock()
	env := d.envs[id]
	delete(d.envs, id)
	delete(d.states, id)
	d.mu.Unlock()
	if env != nil {
		env.release()
	}
}

// take removes the cached state of a run for the caller's exclusive use,
// waiting while another goroutine of this worker has it; put gives it
// back, drop gives up the use without a state. Waiting is cheaper than
// rebuilding the state from the whole history, which a wide fan-out would
// do for each of its nodes while one transaction holds the state. A state
// dropped (a failed transaction) is rebuilt from the history next time.
func (d *Driver) take(id string) *state {
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.held[id] {
		d.cond.Wait()
	}
	d.held[id] = true
	st := d.states[id]
	delete(d.states, id)
	return st
}

func (d *Driver) put(st *state) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unhold(st.env.id)
	if cur, ok := d.states[st.env.id]; ok && cur.seq >= st.seq {
		return
	}
	if _, live := d.envs[st.env.id]; !live {
		return
	}
	if len(d.states) >= 1024 {
		clear(d.states)
	}
	d.states[st.env.id] = st
}

func (d *Driver) drop(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unhold(id)
}

func (d *Driver) unhold(id string) {
	if d.held[id] {
		delete(d.held, id)
		d.cond.Broadcast()
	}
}

// now is the clock's time as the store keeps it: UTC, to the
// microsecond.
func (d *Driver) now() time.Time {
	return d.cfg.Clock.Now().UTC().Truncate(time.Microsecond)
}

// readRun reads a run without locking it.
func (d *Driver) readRun(ctx context.Context, id string) (*store.Run, error) {
	return d.cfg.Store.Run(ctx, id)
}

// work runs one task job: it finds the task in the run's state, runs it,
// and records its outcome, with the job taken to run next (h).
func (d *Driver) work(ctx context.Context, job *rivertype.JobRow, args TaskArgs, h *hop) error {
	var env *runEnv
	err := d.persist(ctx, "reading run "+args.Run, func() (err error) {
		env, err = d.envOf(ctx, args.Run)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return river.JobCancel(err) // the run was pruned
	}
	if err != nil || env == nil {
		return err
	}
	// What the run's state says of the task: gone (recorded already: a
	// job run again after its worker was presumed dead), the run stopping
	// (a node that has not started does not start), begun already.
	var (
		t                     *engine.Task
		gone, stopping, begun bool
		upstream              []string
		spent                 engine.Spent
		scope                 expr.Scope
	)
	look := func(st *state) {
		t = st.run.Task(args.Task)
		if gone = t == nil; gone {
			return
		}
		status, _ := st.run.Status()
		stopping = status != engine.RunCompleted
		begun = st.begun[args.Task]
		spent = engine.Spent{Tokens: st.tokens, CostUSD: st.cost}
		scope = st.scope
		upstream = engine.UpstreamHashes(env.plan, t.Node, st.hashes)
	}
	notStarted := func() *event {
		return &event{Kind: kindFinished, Task: args.Task, NotStarted: true,
			Err: &node.Error{Code: "cancelled", Category: node.CategoryCancelled, Message: "the run stopped before the node started"}}
	}
	// The step is marked running, durably, before the node runs: a job
	// handed out again after that records the attempt lost instead of
	// running the node twice under it (rescue.go). The mark is an apply
	// like any other, so it shares its transaction with the run's other
	// records of the moment, and that transaction is where the worker
	// learns the task's state. A pure kind's node (set, if…), which may run
	// twice, is marked with its outcome, in one transaction.
	started := d.now()
	beganEvent := func(st *state) *event {
		if st.run.Task(args.Task) == nil {
			return nil
		}
		return &event{Kind: kindBegan, Task: args.Task, At: started, Started: started, RanOn: env.place}
	}
	var first func(st *state) *event
	// stopped: the run stopped before a pure kind's node, which runs
	// before its began is recorded, could be marked began; its outcome
	// is then recorded as never started.
	stopped := false
	if b := h.begun; b != nil {
		// The transaction that took the job marked the node running
		// (continue.go), and kept what it knew of the run.
		t, started, spent, scope, upstream = b.task, b.started, b.spent, b.scope, b.upstream
	} else if pn := env.nodes[args.Node]; pn != nil && pn.Spec.Pure {
		// The state this worker kept, when it knows the task: a chain's
		// next node on the worker that released it needs no read. Whether
		// the run stopped meanwhile is decided again under the run's lock
		// (first), as is whether the task is still to run (the attempt
		// token).
		if job.Attempt == 1 {
			if st := d.take(env.id); st != nil && st.env == env {
				look(st)
				d.put(st)
			} else {
				d.drop(env.id)
				gone = true
			}
		}
		if job.Attempt > 1 || gone || stopping || begun {
			var run *store.Run
			var st *state
			err := d.persist(ctx, "reading run "+args.Run, func() (err error) {
				run, st, err = d.load(ctx, args.Run)
				return err
			})
			if errors.Is(err, store.ErrNotFound) {
				return river.JobCancel(err)
			}
			if err != nil || st == nil {
				return err
			}
			look(st)
			d.put(st)
			if gone {
				return nil
			}
			if stopping || run.CancelRequested != nil {
				return d.apply(context.WithoutCancel(ctx), args.Run, func(st *state) *event {
					if st.run.Task(args.Task) == nil {
						return nil
					}
					return notStarted()
				}, nil)
			}
			if begun && job.Attempt > 1 {
				return d.retaken(ctx, job, args.Run, t)
			}
		}
		first = func(st *state) *event {
			if status, _ := st.run.Status(); status != engine.RunCompleted && st.run.Task(args.Task) != nil {
				stopped = true
				return nil
			}
			stopped = false
			return beganEvent(st)
		}
	} else {
		err = d.persist(ctx, "starting node "+args.Node, func() error {
			return d.apply(ctx, args.Run, func(st *state) *event {
				look(st)
				switch {
				case gone, begun && job.Attempt > 1:
					return nil
				case stopping:
					return notStarted()
				}
				return beganEvent(st)
			}, nil)
		})
		if err != nil || gone || stopping {
			return err
		}
		if begun && job.Attempt > 1 {
			return d.retaken(ctx, job, args.Run, t)
		}
	}
	run := env.run
	tenv := env.task
	tenv.Scope = scope
	// The run's budget goes on from what its recorded history spent, on
	// whichever worker runs the node.
	budget := engine.NewBudget(env.w.Limits.MaxTokens, env.w.Limits.MaxCostUSD, nil, spent.Tokens, spent.CostUSD)
	if (t.Node.Spec.Role == node.RoleSubworkflow || t.Node.Spec.RunsChildren) && d.cfg.Children != nil {
		waiting := func() { d.waiting(ctx, run.ID, t) }
		tenv.Services = node.ChildrenService.Provide(tenv.Services, d.cfg.Children(run.ID, env.w, t, env.secrets, budget, waiting))
	}
	tenv.Services = node.BudgetService.Provide(tenv.Services, budget)
	// What the kind reports as it runs (tool calls, LLM calls) is
	// recorded at once, for whoever follows the run, in order.
	tenv.Emit = func(t *engine.Task, kind string, data map[string]any) {
		data, _ = env.red.Map(data)
		d.applyAsync(ctx, run.ID, nil, []engine.TimedEvent{{Time: d.cfg.Clock.Now().UTC(),
			Event: engine.Event{Type: kind, Node: t.Node.ID, Visit: t.Visit, Iteration: t.Iteration, Data: data}}})
	}
	var oc engine.Outcome
	var params map[string]any
	hash := ""
	// A cancel of the run that stops running nodes stops this one
	// (cancel.go); the job's own context is the worker's.
	nodeCtx, stopNode := context.WithCancelCause(ctx)
	defer stopNode(nil)
	d.track(run.ID, args.Task, stopNode)
	// The node holds a slot of its queue only while it runs (slots.go).
	release, serr := d.acquire(nodeCtx, job.Queue)
	switch {
	case serr != nil:
		oc.Err = &node.Error{Code: "cancelled", Category: node.CategoryCancelled, Message: "the node was stopped before it started: " + serr.Error()}
	case d.cfg.Exec != nil:
		oc = d.cfg.Exec(nodeCtx, run.ID, t)
	default:
		var perr *node.Error
		if params, hash, perr = engine.Prepare(tenv.Scope, t, engine.NodeDef(t.Node), upstream, engine.TaskClock(tenv.Services, tenv.Now, t)); perr != nil {
			oc.Err = perr
		} else {
			oc, params = d.call(nodeCtx, env, tenv, t, params)
		}
	}
	if serr == nil {
		release()
	}
	d.untrack(run.ID, args.Task)
	if oc.Err != nil && errors.Is(context.Cause(nodeCtx), errRunCancelled) && oc.Err.Category != node.CategoryTimeout {
		oc.Err.Category = node.CategoryCancelled
	}
	if ctx.Err() != nil || errors.Is(serr, errDrained) {
		// The worker stops and its drain ran out (the run's own cancel
		// lets running nodes finish): nothing is recorded, the step goes
		// back to pending, and River gives the job to a worker again.
		d.unbegin(ctx, run.ID, t)
		cause := context.Cause(ctx)
		if cause == nil {
			cause = serr
		}
		return fmt.Errorf("node %s of run %s was stopped with its worker; it runs again: %w", t.Node.ID, run.ID, cause)
	}
	e := &event{Kind: kindFinished, Task: args.Task, Output: oc.Output, Directives: oc.Directives, Err: oc.Err,
		Params: params, Started: started, Hash: hash}
	cont := d.continues(ctx)
	return d.persist(ctx, "recording node "+t.Node.ID, func() error {
		req := &applyReq{first: first, cont: cont, complete: h.complete, done: make(chan applyResult, 1)}
		req.mk = func(st *state) *event {
			if st.run.Task(args.Task) == nil {
				// Another worker recorded this attempt first, or recorded
				// it lost (this worker was paused or cut off past its
				// lease), or the run was cancelled before a pure node's
				// began: the attempt token drops a stale result.
				if !st.cancelled {
					d.cfg.Logger.Warn("dropped a stale result: the attempt was recorded without this worker", "run", run.ID, "node", t.Node.ID, "attempt", t.Attempt)
				}
				return nil
			}
			if stopped {
				return notStarted()
			}
			return e
		}
		err := d.submit(context.WithoutCancel(ctx), run.ID, req)
		if err == nil && req.ended.Final() && req.ended != record.RunCancelled {
			// A run ends only once no node of it runs: this attempt
			// was judged lost and its node run again elsewhere.
			d.cfg.Logger.Warn("dropped a stale result: the run ended without this worker", "run", run.ID, "node", t.Node.ID, "attempt", t.Attempt, "status", req.ended)
		}
		h.next, h.completed = req.next, req.completed
		return err
	})
}

// waiting records that a task's step waits (its child run runs), unless
// the attempt was recorded already. The step is running still when that
// fails: nothing else depends on it.
func (d *Driver) waiting(ctx context.Context, runID string, t *engine.Task) {
	err := d.apply(ctx, runID, func(st *state) *event {
		if st.run.Task(t.ID) == nil || !st.begun[t.ID] {
			return nil
		}
		return &event{Kind: kindWaiting, Task: t.ID}
	}, nil)
	if err != nil && ctx.Err() == nil {
		d.cfg.Logger.Warn("recording that a step waits for its child run", "run", runID, "node", t.Node.ID, "error", err)
	}
}

// envOf returns the worker's environment of a run, reading the run the
// first time; nil when the run ended. The first read of a run brings its
// whole history and its count of events, in the same round trip: the
// state built from them is kept, so the worker's first transaction of
// the run may expect it as read (commit.go) instead of reading it again.
func (d *Driver) envOf(ctx context.Context, runID string) (*runEnv, error) {
	d.mu.Lock()
	env := d.envs[runID]
	d.mu.Unlock()
	if env != nil {
		return env, nil
	}
	_, env, st, err := d.readNew(ctx, runID)
	if err != nil || st == nil {
		return nil, err
	}
	d.put(st)
	return env, nil
}

// readNew reads a run new to this worker, its row (its status, a cancel
// request, its count of events) and its whole history, in one round trip,
// and returns its environment and its state caught up with the history,
// held (the caller puts it back); a nil state when the run ended. The
// history is opened once the environment (its sealer) is made. The two
// reads are not one snapshot: a transaction that expects the run as the
// state has it checks both the count of events and the history, so a
// write between them only sends it the other way.
func (d *Driver) readNew(ctx context.Context, runID string) (*store.Run, *runEnv, *state, error) {
	var (
		raws   []rawEvent
		run    *store.Run
		events int64
	)
	b := &pgx.Batch{}
	queueReadRawLog(b, runID, &raws)
	postgres.QueueReadRun(b, runID, &run, &events)
	if err := d.cfg.Store.Pool().SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, nil, err
	}
	if run.Status.Final() {
		d.forget(run.ID)
		return run, nil, nil, nil
	}
	env, err := d.env(ctx, run)
	if err != nil {
		return nil, nil, nil, err
	}
	evs, err := openLog(raws, runID, env.seal)
	if err != nil {
		return nil, nil, nil, err
	}
	// Another job of the run may have read it meanwhile: its state is
	// caught up.
	st := d.take(env.id)
	fresh := st == nil || st.env != env
	if fresh {
		st = newState(env)
	}
	fed := false
	for _, e := range evs {
		if e.Seq <= st.seq {
			continue
		}
		if _, _, err := st.feed(e); err != nil {
			d.drop(env.id)
			return nil, nil, nil, err
		}
		fed = true
	}
	switch {
	case fresh:
		st.events, st.eventsKnown = events, events > 0
	case fed:
		st.eventsKnown = false // the events that came with them are not counted
	}
	return run, env, st, nil
}

// load reads the run of a job and returns its state caught up with the
// history, for the caller's exclusive use (put it back); a nil state
// when the run ended.
func (d *Driver) load(ctx context.Context, runID string) (*store.Run, *state, error) {
	d.mu.Lock()
	env := d.envs[runID]
	d.mu.Unlock()
	if env == nil {
		run, _, st, err := d.readNew(ctx, runID)
		return run, st, err
	}
	// The run (its status, a cancel request) and what its history gained
	// since this worker's state: one round trip.
	st := d.take(env.id)
	if st == nil || st.env != env {
		st = newState(env)
	}
	var (
		run *store.Run
		evs []*event
	)
	b := &pgx.Batch{}
	queueReadLog(b, env.id, env.seal, st.seq, &evs)
	run, err := d.cfg.Store.WithTx(d.cfg.Store.Pool(), b).Run(ctx, env.id)
	if err != nil {
		d.drop(env.id)
		return nil, nil, err
	}
	for _, e := range evs {
		if _, _, err := st.feed(e); err != nil {
			d.drop(env.id)
			return nil, nil, err
		}
	}
	if len(evs) > 0 {
		st.eventsKnown = false // the events that came with them are not counted
	}
	if run.Status.Final() {
		d.drop(env.id)
		d.forget(run.ID)
		return run, nil, nil
	}
	return run, st, nil
}

// fire applies a timer job.
func (d *Driver) fire(ctx context.Context, args TimerArgs) error {
	return d.persist(ctx, "firing a timer", func() error {
		return d.apply(ctx, args.Run, func(*state) *event { return &event{Kind: kindTimer, Timer: args.Timer} }, nil)
	})
}

// apply records an event on a run: mk returns it from the run's state
// (nil: none), extra are events a kind reported that could not be recorded
// at once. It returns once the event is committed.
//
// The applies of one run in this process are grouped: while one
// transaction holds the run's row, the applies that arrive wait, and the
// next transaction records them all. The row lock serializes the workers
// of a run; grouping makes each hold of it record as many outcomes as
// finished meanwhile, so a fan-out's throughput grows with its workers
// instead of stopping at one transaction at a time. The runs of a worker
// share its transactions in turn (record): the outcomes of many runs that
// finish meanwhile are committed together.
func (d *Driver) apply(ctx context.Context, runID string, mk func(st *state) *event, extra []engine.TimedEvent) error {
	return d.applyWith(ctx, runID, nil, mk, extra)
}

// applyWith is apply with the event first makes recorded before mk's, in
// the same transaction (nil: none).
func (d *Driver) applyWith(ctx context.Context, runID string, first, mk func(st *state) *event, extra []engine.TimedEvent) error {
	return d.submit(ctx, runID, &applyReq{first: first, mk: mk, extra: extra, done: make(chan applyResult, 1)})
}

// submit records req in its run's next transaction and returns once it
// is committed.
func (d *Driver) submit(ctx context.Context, runID string, req *applyReq) error {
	if g := d.enqueue(runID, req); g != nil {
		d.lead(ctx, runID, g)
	} else if r := <-req.done; !r.lead {
		return r.err
	} else {
		d.lead(ctx, runID, d.group(runID))
	}
	return (<-req.done).err
}

// applyAsync records an event as apply does, without waiting for it: an
// error is logged.
func (d *Driver) applyAsync(ctx context.Context, runID string, mk func(st *state) *event, extra []engine.TimedEvent) {
	req := &applyReq{mk: mk, extra: extra, async: true}
	if g := d.enqueue(runID, req); g != nil {
		d.goLead(context.WithoutCancel(ctx), runID, g)
	}
}

// goLead leads a run's next transaction in a goroutine that Work waits
// for before it returns.
func (d *Driver) goLead(ctx context.Context, runID string, g *applyGroup) {
	d.inflight.Add(1)
	go func() {
		defer d.inflight.Done()
		d.lead(ctx, runID, g)
	}()
}

// enqueue adds an apply to its run's group, and returns the group when
// the caller is to lead its transaction (no transaction of the run is
// under way).
func (d *Driver) enqueue(runID string, req *applyReq) *applyGroup {
	d.mu.Lock()
	defer d.mu.Unlock()
	g := d.groups[runID]
	if g == nil {
		g = &applyGroup{}
		d.groups[runID] = g
	}
	g.pending = append(g.pending, req)
	if g.leading {
		return nil
	}
	g.leading = true
	return g
}

func (d *Driver) group(runID string) *applyGroup {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.groups[runID]
}

// applyGroup holds the applies of one run waiting for its transaction.
type applyGroup struct {
	pending []*applyReq
	leading bool
}

type applyReq struct {
	first func(st *state) *event
	mk    func(st *state) *event
	extra []engine.TimedEvent
	// withdraw cancels the jobs no worker took of a run that is cancelled
	// (cancel.go).
	withdraw bool
	// cont lets the apply take a job its transaction releases, to run
	// next on this worker (next, once committed); complete is the job
	// taken so whose node it records, to mark completed with it
	// (completed, once committed). continue.go.
	cont      bool
	complete  int64
	next      *localJob
	completed bool
	// done answers the apply; an async one has none.
	done  chan applyResult
	async bool
	// ended is the status of the run when it had ended before the apply
	// came to be recorded: nothing of it was.
	ended record.RunStatus
}

// applyResult answers an apply: its error, or that it leads the next
// transaction.
type applyResult struct {
	err  error
	lead bool
}

// lead records the applies waiting on a run in one transaction (record:
// the worker's next, with other runs' applies), hands the lead to an apply
// that arrived meanwhile, and answers the ones it recorded.
func (d *Driver) lead(ctx context.Context, runID string, g *applyGroup) {
	d.mu.Lock()
	reqs := g.pending
	g.pending = nil
	d.mu.Unlock()
	// The transaction records the applies of others too: the leader's
	// cancel must not fail theirs.
	ctx = context.WithoutCancel(ctx)
	errs := d.record(ctx, runID, reqs)
	d.mu.Lock()
	switch {
	case len(g.pending) == 0:
		g.leading = false
		delete(d.groups, runID)
	case g.pending[0].async:
		d.goLead(ctx, runID, g)
	default:
		g.pending[0].done <- applyResult{lead: true}
	}
	d.mu.Unlock()
	for i, r := range reqs {
		switch {
		case !r.async:
			r.done <- applyResult{err: errs[i]}
		case errs[i] != nil:
			d.cfg.Logger.Warn("recording that a node started", "run", runID, "error", errs[i])
		}
	}
}

// feedMk feeds the event mk makes of the state, if any, unless the run
// ended.
func (d *Driver) feedMk(ctx context.Context, tx *postgres.Pipe, w *write, mk func(*state) *event) error {
	st := w.st
	if mk == nil || st.run.Ended() && st.run.Running() == 0 {
		return nil
	}
	if e := mk(st); e != nil {
		return d.feed(ctx, tx, w, e)
	}
	return nil
}

// write gathers what a transaction's events changed, to be written at
// once (flushAll): the history rows, the step records, the events, the jobs.
type write struct {
	st  *state
	log *pgx.Batch
	// logRows are the history's new rows, inserted by flushAll.
	logRows [][]any
	changed map[*engine.StepRecord]bool
	order   []*engine.StepRecord
	events  []engine.TimedEvent
	jobs    []river.InsertManyParams
	// pending are the timer jobs of jobs this process wakes itself, and
	// wakes the same once inserted (wake.go).
	pending []pendingWake
	wakes   []wake
	// claims are the task jobs (indexes in jobs) this worker takes in the
	// transaction, taken what it runs of them (continue.go).
	claims []int
	taken  []*localJob
	// announce are the queues of the jobs inserted available, to tell
	// their workers of once committed, and ended the run that ended, to
	// tell who follows it of (jobs.go).
	announce []string
	ended    []string
	wasDone  bool
	// stopRunning is set when the run failed while nodes of it run: they
	// are stopped, on whichever worker runs them, as a local run stops
	// them (engine.Actions.CancelRunning).
	stopRunning bool
	// last is the seq of the run's last event, read under its lock (or,
	// in a transaction that expects the run, kept from the last); next
	// is what it is once the transaction committed.
	last, next int64
	// skipPure are the tasks of pure nodes runPure left to their jobs.
	skipPure []int64
	// jobIDs are the ids of the jobs inserted available (they are
	// inserted with the COMMIT) once it committed, of all the runs of the
	// transaction (flushAll): jobsAll of them, this run's from jobsFrom;
	// jobsAt the index in jobs of each of this run's.
	jobIDs            *[]int64
	jobsAll, jobsFrom int
	jobsAt            []int
}

func (d *Driver) newWrite(st *state) *write {
	return &write{st: st, log: &pgx.Batch{}, changed: map[*engine.StepRecord]bool{},
		wasDone: st.run.Ended() && st.run.Running() == 0}
}

// feed appends an event to the run's history and feeds it to the
// scheduler, gathering what it changed into w: steps, events, the jobs of
// the tasks and timers it set. A wait that begins picks up its signal if
// one was sent already.
func (d *Driver) feed(ctx context.Context, tx *postgres.Pipe, w *write, evs ...*event) error {
	st := w.st
	env := st.env
	for len(evs) > 0 {
		e := evs[0]
		evs = evs[1:]
		e.Seq = st.seq + 1
		if e.At.IsZero() {
			e.At = d.now()
		}
		e, raw, err := e.roundTrip(env.seal)
		if err != nil {
			return fmt.Errorf("run %s: recording its history: %w", env.id, err)
		}
		a, recs, err := st.feed(e)
		if err != nil {
			return err
		}
		if a.CancelRunning {
			w.stopRunning = true
		}
		w.logRows = append(w.logRows, logRow(env.id, e, raw))
		for _, r := range recs {
			if !w.changed[r] {
				w.changed[r] = true
				w.order = append(w.order, r)
			}
		}
		released := map[[2]any]bool{}
		for _, t := range a.Start {
			released[[2]any{t.Node.ID, t.Visit}] = true
		}
		for _, ev := range a.Events {
			if ev.Type == engine.EventNodeStarted && released[[2]any{ev.Node, ev.Visit}] {
				continue // recorded when a worker takes the job (began)
			}
			ev.Data, _ = env.red.Map(ev.Data)
			w.events = append(w.events, engine.TimedEvent{Time: e.At, Event: ev})
		}
		for _, t := range a.Start {
			q := t.Node.Node.Queue
			if q == "" {
				q = DefaultQueue
			}
			w.jobs = append(w.jobs, river.InsertManyParams{
				Args:       TaskArgs{Run: env.id, Task: t.ID, Node: t.Node.ID, Visit: t.Visit, Attempt: t.Attempt},
				InsertOpts: &river.InsertOpts{Queue: q, MaxAttempts: maxJobAttempts},
			})
		}
		for _, t := range a.Timers {
			at := st.fireAt(t, e.At)
			if d.cfg.TimerDelay != nil {
				at = e.At.Add(d.cfg.TimerDelay(t))
			}
			opts := &river.InsertOpts{MaxAttempts: maxJobAttempts}
			args := TimerArgs{Run: env.id, Timer: t.ID, Timeout: t.Timeout}
			if at.After(e.At) {
				opts.ScheduledAt = at
				if delay := at.Sub(e.At); delay <= maxLocalWake {
					w.pending = append(w.pending, pendingWake{job: len(w.jobs), args: args, delay: delay})
				}
			}
			w.jobs = append(w.jobs, river.InsertManyParams{Args: args, InsertOpts: opts})
		}
		for _, aw := range a.Awaits {
			sig, ok, err := storedSignal(ctx, tx, env.id, aw.Signal, aw.Visit)
			if err != nil {
				return err
			}
			if ok && !st.late(aw.Node, aw.Visit, sig.Sent) {
				evs = append(evs, sig)
			}
		}
	}
	return nil
}

// flushAll queues the writes of what the writes ws of several runs in
// one transaction gathered, and of the final records of those that ended,
// in front of the next round trip of tx: the insert of the jobs, whose
// notification rides with the COMMIT; with no jobs, the COMMIT. The rows
// of all go in the same statements: each statement costs the database
// more than a row of it. With counted, the rows of their runs count their
// events already (the runs are new: QueueStartRun).
func (d *Driver) flushAll(ctx context.Context, tx *postgres.Pipe, ws []*write, counted bool) error {
	b := ws[0].log
	var logRows [][]any
	bts := make([]store.Batch, 0, len(ws))
	lasts := make([]int64, 0, len(ws))
	for _, w := range ws {
		logRows = append(logRows, w.logRows...)
		w.logRows = nil
	}
	queueLogRows(b, logRows)
	for _, w := range ws {
		st := w.st
		env := st.env
		w.log = b
		steps := make([]*store.Step, 0, len(w.order))
		for _, r := range w.order {
			s := durable.StepFromRecord(env.id, r)
			steps = append(steps, durable.RedactStep(env.red, s))
		}
		var finish *store.Run
		if !w.wasDone && st.run.Ended() && st.run.Running() == 0 {
			finish = d.finish(st)
			d.oweDelivery(w, finish)
		}
		if w.stopRunning && finish == nil {
			// The run failed and nodes of it still run: a request to stop
			// them, which every worker running one sees at its next look
			// (stopCancelled). The run still ends failed: the scheduler's
			// failure comes before a cancel.
			b.Queue(`UPDATE runs SET cancel_requested_at = COALESCE(cancel_requested_at, $2), cancel_let_finish = false
			WHERE id = $1`, env.id, d.now())
		}
		bts = append(bts, store.Batch{RunID: env.id, Steps: steps, Events: storeEvents(w.events), Finish: finish})
		lasts = append(lasts, w.last)
		w.next = w.last + int64(len(w.events))
		if finish != nil {
			// Who follows the run (follow.go) learns of its end once the
			// transaction committed (announce).
			w.ended = append(w.ended, env.id)
		}
	}
	if _, err := postgres.QueueSaves(b, bts, lasts, counted); err != nil {
		return fmt.Errorf("%s: recording its history: %w", writeRuns(ws), err)
	}
	tx.Defer(b)
	// The jobs this worker takes go in running (continue.go), the others
	// available (jobs.go); both inserts ride with the COMMIT, and their
	// ids are read back with it (a failed read fails the COMMIT).
	var others []river.InsertManyParams
	for _, w := range ws {
		if len(w.jobs) == 0 {
			continue
		}
		if taken := d.queueTaken(w); taken != nil {
			tx.Defer(taken)
		}
		w.jobsFrom = len(others)
		others, w.jobsAt = w.untaken(others)
	}
	if len(others) == 0 {
		return nil
	}
	jb, ids, queues, err := queueJobs(others)
	if err != nil {
		return fmt.Errorf("%s: queueing its jobs: %w", writeRuns(ws), err)
	}
	tx.Defer(jb)
	for _, w := range ws {
		if len(w.jobsAt) > 0 {
			w.jobIDs, w.jobsAll = ids, len(others)
		}
	}
	ws[0].announce = queues
	return nil
}

// writeRuns names the runs of ws for an error.
func writeRuns(ws []*write) string {
	if len(ws) == 1 {
		return "run " + ws[0].st.env.id
	}
	return fmt.Sprintf("%d runs", len(ws))
}

// finish is the final record of a run that ended.
func (d *Driver) finish(st *state) *store.Run {
	status, runErr := st.run.Status()
	outs, err := engine.Outputs(st.env.plan, st.scope, st.run)
	if err != nil && status == engine.RunCompleted {
		status = engine.RunFailed
		runErr = &node.Error{Code: "outputs", Category: node.CategoryTemplate, Message: err.Error(), Details: engine.TemplateDetails(err)}
	}
	if status != engine.RunCompleted && status != engine.RunFailed {
		outs = map[string]any{}
	}
	now := d.now()
	r := &store.Run{ID: st.env.id, Status: status, Outputs: outs, Error: runErr, FinishedAt: &now,
		Tokens: st.tokens, CostUSD: st.cost}
	r = durable.RedactRun(st.env.red, r)
	// Kept in the shared store, which writes on connections of its own:
	// safe in the transaction that ends the run. A failure fails the run
	// and keeps none of its outputs.
	outs, keepErr := engine.KeepOutputs(st.env.blobs, r.Outputs)
	c := *r
	c.Outputs = outs
	if keepErr != nil {
		c.Outputs = map[string]any{}
		if c.Error == nil {
			c.Status, c.Error = engine.RunFailed, keepErr
		}
	}
	c.Error = record.ErrorContext("", c.Error) // a step's names its node already
	return &c
}

// OnlySignals reports whether a run that has not ended only waits for
// signals: none of its nodes runs or is queued, no retry or delay is due,
// only signal waits' timeouts are.
func OnlySignals(ctx context.Context, st *postgres.Store, runID string) (bool, error) {
	var pending int
	err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM river_job WHERE args->>'run' = $1
		AND state IN ('available', 'running', 'retryable', 'scheduled', 'pending')
		AND (kind = 'skein_task' OR NOT COALESCE((args->>'timeout')::boolean, false))`, runID).Scan(&pending)
	return pending == 0, err
}

// storedSignal returns the signal sent for a step, if any, as a history
// event.
func storedSignal(ctx context.Context, tx pgx.Tx, runID, nodeID string, visit int) (*event, bool, error) {
	var raw []byte
	var at time.Time
	err := tx.QueryRow(ctx, `SELECT data, created_at FROM signals WHERE run_id = $1 AND node = $2 AND visit = $3`,
		runID, nodeID, visit).Scan(&raw, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("run %s: reading its signals: %w", runID, err)
	}
	m, err := store.DecodeMap(raw)
	if err != nil {
		return nil, false, fmt.Errorf("run %s: reading its signals: %w", runID, err)
	}
	return &event{Kind: kindSignal, Node: nodeID, Visit: visit, Data: m["data"], Sent: at.UTC()}, true, nil
}
