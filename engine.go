package skein

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard" // the built-in kinds
	"github.com/skeinhq/skein/workflow"
)

// DefaultEventPoll is how often Follow looks for new events by default.
const DefaultEventPoll = 200 * time.Millisecond

// Config configures an Engine. The zero value runs workflows in the
// folder .skein with the built-in node kinds.
type Config struct {
	// Dir is the folder that keeps runs: the SQLite database skein.db
	// (unless Database names another) and a folder per run (its events,
	// artifacts and big outputs). Default ".skein", created when missing.
	Dir string
	// Database, when set, is the database instead of Dir/skein.db: a
	// postgres:// URL, or the path of a SQLite file. The run folders stay
	// in Dir.
	Database string
	// FoldersOnDemand makes a run's folder only when the run has something
	// to keep there (a node's files, an output too big for the database),
	// as `skein serve` does: a run's events and run document are then in
	// the database only (Get, Events). Default false: every run has its
	// folder with run.json and events.jsonl, as `skein run` makes.
	FoldersOnDemand bool
	// Queue hands the runs Start begins to skein workers (skein worker
	// --db with the same Postgres database) instead of running their nodes
	// in this process; Start then follows the run to its end. It needs a
	// Postgres Database.
	Queue bool
	// Registry holds the node kinds workflows may use; default
	// node.Default, which holds the built-in kinds and those registered
	// with node.Register.
	Registry *node.Registry
	// Kinds are node kinds of this program, added for this Engine to a
	// copy of Registry (Registry itself is not changed). A kind that
	// Registry holds already is refused.
	Kinds []Kind
	// Concurrency caps the nodes of one run that run at once (default 16).
	Concurrency int
	// SecretsFile is a dotenv file with the values of the workflows'
	// secrets; the environment (LookupEnv) is read for the others.
	SecretsFile string
	// LookupEnv reads the environment (secrets, SKEIN_LLM_*); default
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// EventPoll is how often Follow looks for new events of a run that
	// has not ended (default DefaultEventPoll).
	EventPoll time.Duration
}

// Kind is a node kind of the program: what node.Register takes.
type Kind struct {
	Spec node.Spec
	New  node.Constructor
}

// Engine runs workflows and reads their runs. It is safe for concurrent
// use; Close it when done.
type Engine struct {
	r      *runner.Runner
	reg    *node.Registry
	opts   runner.Options
	poll   time.Duration
	valid  validated
	queued bool // Config.Queue
}

// workerKinds are the kinds skein workers run: node.Default's when this
// package initialised, before a program that imports it registered its
// own (node.Register).
var workerKinds = func() map[string]bool {
	out := map[string]bool{}
	for _, k := range node.Default.Kinds() {
		out[k] = true
	}
	return out
}()

// ownKind returns a kind of w's nodes that skein workers do not have (the
// program's own), or "".
func ownKind(w *workflow.Workflow) string {
	for _, n := range w.Nodes {
		if !workerKinds[n.Type] {
			return n.Type
		}
	}
	return ""
}

// Open opens the engine of cfg.Dir (or cfg.Database), creating the folder
// and the database when they do not exist.
func Open(cfg Config) (*Engine, error) {
	reg := cfg.Registry
	if reg == nil {
		reg = node.Default
	}
	if len(cfg.Kinds) > 0 {
		reg = reg.Clone()
		for _, k := range cfg.Kinds {
			if err := reg.Register(k.Spec, k.New); err != nil {
				return nil, fmt.Errorf("skein: node kind %q: %w", k.Spec.Kind, err)
			}
		}
	}
	place := runner.PlaceLocal
	if cfg.Queue {
		if !runner.IsDatabaseURL(cfg.Database) {
			return nil, &UsageError{Msg: "skein: Config.Queue hands nodes to skein workers through Postgres: set Config.Database to a postgres:// URL"}
		}
		place = runner.PlaceQueue
	}
	r, err := runner.Open(runner.Config{Dir: cfg.Dir, DB: cfg.Database, Placement: place, Registry: reg, LookupEnv: cfg.LookupEnv, OnDemandFolders: cfg.FoldersOnDemand})
	if err != nil {
		return nil, err
	}
	poll := cfg.EventPoll
	if poll <= 0 {
		poll = DefaultEventPoll
	}
	return &Engine{r: r, reg: reg, poll: poll, queued: cfg.Queue, opts: runner.Options{
		Concurrency: cfg.Concurrency,
		SecretsFile: cfg.SecretsFile,
		// A run whose every branch waits for a signal is left waiting,
		// held by no process, and Start returns; Signal continues it.
		// Waits for timers are held here, as a sleep would be.
		Park: &runner.Park{After: time.Minute, SignalsOnly: true},
	}}, nil
}

// Close waits until what the engine recorded is committed, and closes the
// database. Call it once the calls that run workflows have returned.
func (e *Engine) Close() error { return e.r.Close() }

// Dir is the folder the engine keeps runs in.
func (e *Engine) Dir() string { return e.r.Dir() }

// Registry is the node kinds the engine's workflows may use.
func (e *Engine) Registry() *node.Registry { return e.reg }

// Load reads and validates a workflow file against the engine's node
// kinds. Every problem is in the *InvalidError's Diagnostics.
func (e *Engine) Load(file string) (*workflow.Workflow, error) { return e.r.Load(file) }

// StartOpts are the optional parts of a start.
type StartOpts struct {
	// RunID is the new run's id; default a random one. An id a run has
	// already is refused.
	RunID string
	// Trigger names the trigger node to start from; default the
	// workflow's manual trigger.
	Trigger string
	// Payload is what the trigger fired with: the trigger node's output
	// and the templates' `trigger`. Nil: the trigger outputs the inputs.
	Payload map[string]any
}

// Start runs the workflow of file with inputs (checked against the
// workflow's declared inputs, defaults filled in) until the run ends, or
// until it waits for a signal, and returns its document. A run that fails
// is not an error: doc.Status says how it ended. The error is one of a
// run that could not be carried out: an invalid workflow (*InvalidError),
// bad inputs, a missing secret (*UsageError), a store that fails.
//
// Cancelling ctx cancels the run: nothing new starts, the running nodes
// are stopped (their contexts end) and the run ends cancelled; Resume
// continues it. Cancel with LetFinish lets running nodes finish instead.
func (e *Engine) Start(ctx context.Context, file string, inputs map[string]any, opts *StartOpts) (*RunDoc, error) {
	w, err := e.r.Load(file)
	if err != nil {
		return nil, err
	}
	return e.start(ctx, w, inputs, opts)
}

// StartWorkflow is Start for a workflow the program holds (decoded with
// workflow.Decode, or built). It is validated first. Resume and Rerun read
// a run's workflow from its file (w.File) again, or from ResumeOpts.File.
//
// A workflow must not change once started: the engine keeps what it made
// of it (its plan, and that it is valid) for the next runs of the same w.
// To run a changed workflow, start a new one.
func (e *Engine) StartWorkflow(ctx context.Context, w *workflow.Workflow, inputs map[string]any, opts *StartOpts) (*RunDoc, error) {
	if w == nil {
		return nil, &UsageError{Msg: "StartWorkflow needs a workflow (it was given nil): decode one with workflow.Decode, or use Start with its file"}
	}
	if !e.valid.has(w) {
		if ds := workflow.Validate(w, e.reg); ds.HasErrors() {
			return nil, &InvalidError{File: w.File, Diagnostics: ds}
		}
		e.valid.add(w)
	}
	return e.start(ctx, w, inputs, opts)
}

// validated is the workflows StartWorkflow found valid, so that the runs
// of a workflow a program starts again and again (a server's) are not
// each validated anew. The zero value is ready; safe for concurrent use.
type validated struct {
	mu sync.Mutex
	ws map[*workflow.Workflow]struct{}
}

// maxValidated bounds the workflows a validated keeps.
const maxValidated = 256

func (v *validated) has(w *workflow.Workflow) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.ws[w]
	return ok
}

func (v *validated) add(w *workflow.Workflow) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ws == nil || len(v.ws) >= maxValidated {
		v.ws = map[*workflow.Workflow]struct{}{}
	}
	v.ws[w] = struct{}{}
}

func (e *Engine) start(ctx context.Context, w *workflow.Workflow, inputs map[string]any, opts *StartOpts) (*RunDoc, error) {
	in, err := w.ResolveInputs(inputs)
	if err != nil {
		return nil, err
	}
	o, done := e.options(ctx)
	defer done()
	req := runner.StartRequest{Workflow: w, Inputs: in, Options: o}
	if e.queued && ownKind(w) != "" {
		// The workers have only the built-in kinds: a run of the
		// program's own runs here, as with Queue off.
		req.Placement = runner.PlaceLocal
	}
	if opts != nil {
		req.RunID, req.Trigger, req.Payload = opts.RunID, opts.Trigger, opts.Payload
	}
	return e.doc(ctx)(e.r.Start(ctx, req))
}

// options are the runner's options of one execution: when ctx ends, the
// run is cancelled (the runner does that) and its running nodes are
// stopped at once (Hard) rather than let finish. done releases them.
func (e *Engine) options(ctx context.Context) (o runner.Options, done func()) {
	o = e.opts
	hard := make(chan struct{})
	o.Hard = hard
	stop := context.AfterFunc(ctx, func() { close(hard) })
	return o, func() { stop() }
}

// doc turns the result of an execution into its document.
func (e *Engine) doc(ctx context.Context) func(*runner.Result, error) (*RunDoc, error) {
	return func(res *runner.Result, err error) (*RunDoc, error) {
		if err != nil || res == nil {
			return nil, err
		}
		// res.Err is a failure to record or check the run, beside its
		// status: the document is still the run's.
		return e.r.Doc(ctx, res), res.Err
	}
}

// ResumeOpts are the optional parts of a resume.
type ResumeOpts struct {
	// File, when set, is the workflow to resume with instead of the run's
	// file (an edited one: its node ids must still hold the run's steps).
	File string
}

// Resume continues a failed, cancelled, interrupted or waiting run: every
// step that succeeded in an earlier execution, with the same
// configuration, is reused; the others run. It returns like Start, and
// ctx cancels the run as Start's does. A
// completed run is refused with ErrCompleted, a run another live process
// runs with an *OwnedError.
func (e *Engine) Resume(ctx context.Context, runID string, opts *ResumeOpts) (*RunDoc, error) {
	o, done := e.options(ctx)
	defer done()
	req := runner.ResumeRequest{RunID: runID, Options: o}
	if opts != nil {
		req.WorkflowFile = opts.File
	}
	return e.doc(ctx)(e.r.Resume(ctx, req))
}

// RerunOpts are the optional parts of a re-run.
type RerunOpts struct {
	// File, when set, is the workflow to run instead of the run's file.
	File string
	// Pins are nodes not to run: their outputs are taken from the earlier
	// run.
	Pins []string
}

// Rerun starts a new run of a run's workflow with its inputs, and returns
// like Start; ctx cancels it as Start's does.
func (e *Engine) Rerun(ctx context.Context, runID string, opts *RerunOpts) (*RunDoc, error) {
	o, done := e.options(ctx)
	defer done()
	req := runner.RerunRequest{RunID: runID, Options: o}
	if opts != nil {
		req.WorkflowFile, req.Pins = opts.File, opts.Pins
	}
	return e.doc(ctx)(e.r.Rerun(ctx, req))
}

// CancelOpts are the optional parts of a cancel.
type CancelOpts struct {
	// LetFinish lets the running nodes finish (they are recorded); by
	// default they are stopped. Either way nothing new starts.
	LetFinish bool
	// Wait is how long Cancel waits for the run to end; 0 returns once
	// the cancel is recorded.
	Wait time.Duration
}

// Cancel asks the process that runs a run — this one or another, through
// the database — to cancel it; a run nobody runs (it waits, or its process
// died) is cancelled at once. The steps that did not start are skipped and
// the run ends cancelled; Resume continues it. It returns the run as it is
// when Cancel returns, and ErrNotRunning for a run that has ended.
func (e *Engine) Cancel(ctx context.Context, runID string, opts *CancelOpts) (*Run, error) {
	req := runner.CancelRequest{RunID: runID}
	if opts != nil {
		req.LetFinish, req.Wait = opts.LetFinish, opts.Wait
	}
	return e.r.Cancel(ctx, req)
}

// Signal sends data to the node of a run that waits for a signal (a wait
// node with until: signal, or an agent whose tool call waits for
// approval): it becomes the node's output data. The signal is recorded
// first; when no process runs the run (it was left waiting), Signal then
// resumes it here and returns once it ends or waits again, as Resume
// does. When another process runs it, that process applies the signal and
// Signal returns the run's document at once.
//
// It fails with ErrNotFound, ErrCompleted, ErrNoNode or ErrNotWaiting.
func (e *Engine) Signal(ctx context.Context, runID, nodeID string, data any) (*RunDoc, error) {
	if data == nil {
		data = map[string]any{}
	}
	sig, err := e.r.Signal(ctx, runner.SignalRequest{RunID: runID, Node: nodeID, Data: data})
	if err != nil {
		return nil, err
	}
	if sig.Resume != "" {
		o, done := e.options(ctx)
		defer done()
		res, err := e.r.Resume(ctx, runner.ResumeRequest{RunID: sig.Resume, Options: o})
		var owned *OwnedError
		switch {
		case errors.As(err, &owned):
			// Another process resumed it first: it applies the signal.
		case err != nil:
			return nil, err
		case res.Run.ID == sig.Run.ID:
			return e.doc(ctx)(res, nil)
		}
		// The resumed run was the signalled run's parent: read the child.
	}
	return e.r.Get(ctx, sig.Run.ID)
}

// Get returns the document of a run: its status, outputs, error and the
// steps of its latest execution.
func (e *Engine) Get(ctx context.Context, runID string) (*RunDoc, error) {
	return e.r.Get(ctx, runID)
}

// ListOpts select runs.
type ListOpts struct {
	// Workflow is a workflow's name.
	Workflow string
	// Status is a run status (RunInterrupted included).
	Status RunStatus
	// Parent lists the child runs of a run.
	Parent string
	// Limit caps how many runs are returned (0: all).
	Limit int
}

// List returns the runs that match, newest first, with their status as
// people see it (a running run whose process died is interrupted).
func (e *Engine) List(ctx context.Context, opts *ListOpts) ([]*Run, error) {
	var req runner.ListRequest
	if opts != nil {
		req = runner.ListRequest{Workflow: opts.Workflow, Status: string(opts.Status), Parent: opts.Parent, Limit: opts.Limit}
	}
	return e.r.List(ctx, req)
}

// eventBatch is how many events Follow reads at once.
const eventBatch = 1000

// Events returns up to limit (0: all) of a run's events after the one
// numbered afterSeq (0: from the first), in order. Events are numbered
// 1, 2, 3… in a run, so the last one's Seq is where to go on from.
func (e *Engine) Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]Event, error) {
	evs, _, err := e.r.Events(ctx, runID, afterSeq, limit)
	return evs, err
}

// Follow yields a run's events after afterSeq as they are recorded, until
// the run has ended (completed, failed, cancelled, or interrupted: its
// process died) and its last event is yielded, or ctx ends. A run that
// waits for a signal is followed on. An error (no such run, a store that
// fails, ctx's error) is yielded last.
func (e *Engine) Follow(ctx context.Context, runID string, afterSeq int64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		var tick *time.Ticker
		defer func() {
			if tick != nil {
				tick.Stop()
			}
		}()
		for {
			// The run is read before its events, and a run's last events
			// are committed with its final status: once it has ended, no
			// event follows those read with it.
			evs, run, err := e.r.Events(ctx, runID, afterSeq, eventBatch)
			if err != nil {
				yield(Event{}, err)
				return
			}
			for _, ev := range evs {
				if !yield(ev, nil) {
					return
				}
				afterSeq = ev.Seq
			}
			if len(evs) == eventBatch {
				continue
			}
			switch RunStatus(run.Status) {
			case RunRunning, RunPending, RunWaiting:
			default:
				return
			}
			if tick == nil {
				tick = time.NewTicker(e.poll)
			}
			select {
			case <-ctx.Done():
				yield(Event{}, ctx.Err())
				return
			case <-tick.C:
			}
		}
	}
}
