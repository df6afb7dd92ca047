package runner

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/skeinhq/skein/internal/auth"
	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/check/judge"
	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Defaults of Config.
const (
	DefaultLeaseTTL   = 15 * time.Second
	DefaultCancelPoll = 200 * time.Millisecond
)

// Config configures a Runner. The zero value of every field but Dir has a
// default.
type Config struct {
	// Dir holds skein.db and the run folders (.skein).
	Dir string
	// DB, when set, is the database instead of Dir/skein.db: a postgres://
	// URL, or the path of a SQLite file. The run folders stay in Dir.
	DB string
	// LookupEnv reads the environment (secrets, SKEIN_LLM_*); default
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// LeaseTTL is how long an owner's lease lasts without renewal; the
	// owner renews it every LeaseTTL/3.
	LeaseTTL time.Duration
	// CancelPoll is how often an owner looks for a cancel request.
	CancelPoll time.Duration
	// Judge returns the judge of a workflow's checks; default its judge
	// model, else vision, else default, else SKEIN_LLM_*.
	Judge func(w *workflow.Workflow, lookupEnv func(string) (string, bool), secrets map[string]string) check.Judge
	// Registry holds the node kinds; default node.Default.
	Registry *node.Registry
	// Store, when set, is used instead of DB or Dir/skein.db; Close does not
	// close it.
	Store store.Store
	// OnDemandFolders makes a run's folder only when it has something to
	// hold (artifacts, big outputs, verdicts): skein serve's default. Its
	// events are then in the database only (runlog.OpenOnDemand).
	OnDemandFolders bool
	// PoolSize, when positive, is the most connections to a Postgres
	// database (default pgxpool's, or the URL's pool_max_conns).
	PoolSize int32
	// Placement is where Start runs new runs' nodes (Place); default
	// PlaceAuto: on the queue's workers when the database is Postgres.
	Placement Placement
	// Clock tells the time of runs (their timers, wake-up times, steps'
	// times); default the wall clock. Leases are timed by the store.
	Clock clock.Clock
	// Blobs is a folder every worker mounts (a path or a file:// URL)
	// that keeps the big values and artifacts of queued runs; default the
	// Postgres database's blobs table. Only with a Postgres DB.
	Blobs string
	// KeptSteps bounds the finished step records an execution keeps in
	// memory (engine.Options.KeepSteps; 0: engine.DefaultKeepSteps; below
	// 0: no bound, for skein test, which counts visits): past it, a run
	// keeps the latest of each node in Result.Engine.Steps, and its
	// document reads the others from the store.
	KeptSteps int
}

// Runner executes and inspects the runs of one Skein folder. It is safe
// for concurrent use; Close it when done.
type Runner struct {
	cfg    Config
	st     store.Store
	commit *durable.Committer
	clock  clock.Clock
	host   string
	pid    int
	// versions are the stored versions of the workflows run so far.
	versions durable.Versions
	// redactors are the Redactors of the secret values seen (redact.Cache).
	redactors redact.Cache
	// plans are the plans of the workflows run.
	plans engine.Plans
	// queueOnce migrates the queue's tables and makes its starter once.
	queueOnce sync.Once
	queueErr  error
	starter   *queue.Starter
	// blobs keeps the big values of queued runs (sharedBlobs); nil on SQLite.
	blobs   blob.Backend
	unmount func()
}

// Open opens the folder's store, creating the folder and the database when
// they do not exist.
func Open(cfg Config) (*Runner, error) {
	cfg.Dir = cmp.Or(cfg.Dir, ".skein")
	if abs, err := filepath.Abs(cfg.Dir); err == nil {
		cfg.Dir = abs // what a run records of its folder holds from any folder
	}
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.CancelPoll <= 0 {
		cfg.CancelPoll = DefaultCancelPoll
	}
	if cfg.Judge == nil {
		cfg.Judge = judge.ForWorkflow
	}
	cfg.Registry = cmp.Or(cfg.Registry, node.Default)
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create %s: %w; run from a writable folder or set --dir", cfg.Dir, err)
	}
	st := cfg.Store
	if st == nil {
		var err error
		// Opening has no caller's context to honour: a Postgres server
		// that does not answer is bounded by the connect timeout.
		if st, err = openStore(context.Background(), cfg); err != nil {
			return nil, err
		}
	}
	be, unmount, err := sharedBlobs(cfg, st)
	if err != nil {
		if cfg.Store == nil {
			_ = st.Close()
		}
		return nil, err
	}
	host, _ := os.Hostname()
	return &Runner{cfg: cfg, st: st, commit: durable.NewCommitter(st), clock: cmp.Or[clock.Clock](cfg.Clock, clock.Real{}), host: host, pid: os.Getpid(),
		blobs: be, unmount: unmount}, nil
}

// OpenExisting is Open for commands that only read: it fails with
// ErrNoDatabase when the folder has no database yet.
func OpenExisting(cfg Config) (*Runner, error) {
	if err := checkDB(cfg.DB); err != nil {
		return nil, err
	}
	if !HasDatabase(cfg) {
		return nil, &UsageError{Msg: fmt.Sprintf("no runs here: %s does not exist (run a workflow first, or pass --dir or --db)", DBName(cfg))}
	}
	return Open(cfg)
}

// Close commits what is queued and closes the store (unless it was given
// in Config.Store).
func (r *Runner) Close() error {
	if r.unmount != nil {
		r.unmount()
	}
	err := r.commit.Close()
	if r.cfg.Store == nil {
		err = errors.Join(err, r.st.Close())
	}
	return err
}

// Tokens are the API tokens of `skein serve`, kept in the runner's store.
func (r *Runner) Tokens() *auth.Tokens { return auth.New(r.st) }

// Dir is the folder the runner keeps runs in.
func (r *Runner) Dir() string { return r.cfg.Dir }

// newOwner returns this process as an owner with a fresh token.
func (r *Runner) newOwner() store.Owner {
	return store.Owner{Host: r.host, PID: r.pid, Token: randomHex(16)}
}

// NewRunID returns a random run id.
func NewRunID() string { return randomHex(6) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Errors a front end tells apart.
var (
	// ErrNotFound: no run has the given id.
	ErrNotFound = errors.New("no such run")
	// ErrCompleted: the run completed; there is nothing to resume.
	ErrCompleted = errors.New("the run completed")
	// ErrNotRunning: the run is not running, so it cannot be cancelled.
	ErrNotRunning = errors.New("the run is not running")
)

// UsageError is a request that cannot be carried out as given: a missing
// secret, an unknown node to pin, a workflow without the run's nodes. The
// message says what to do.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// InvalidError is a workflow that does not validate; Diagnostics holds
// every problem.
type InvalidError struct {
	File        string
	Diagnostics workflow.Diagnostics
}

func (e *InvalidError) Error() string {
	if len(e.Diagnostics) == 0 {
		return e.File + " is not a valid workflow"
	}
	return e.Diagnostics.Error()
}

// Load reads and validates a workflow file.
func (r *Runner) Load(file string) (*workflow.Workflow, error) {
	return LoadFile(file, r.cfg.Registry)
}

// LoadFile is Runner.Load without a runner, for a caller that reads the
// workflow while it opens one (a nil registry is node.Default, as
// Config.Registry).
func LoadFile(file string, reg *node.Registry) (*workflow.Workflow, error) {
	w, ds := workflow.Load(file, cmp.Or(reg, node.Default))
	if ds.HasErrors() {
		return nil, &InvalidError{File: file, Diagnostics: ds}
	}
	return w, nil
}

// Observer sees a run as it goes, for a progress display. Its methods are
// called in order from one goroutine at a time, each only once the
// records it describes are committed: a step shown done is on disk.
type Observer interface {
	// Started is called once the run is recorded, before any node runs.
	Started(run *record.Run, resumed bool)
	// Step is called for each change of a step released (pending for a
	// slot, running, ended), not for a step only planned.
	Step(rec record.Step)
	Event(ev record.TimedEvent)
	// Note is a line of the repair loop ([repair], [repaired]).
	Note(n Note)
}

// WorkflowObserver is an Observer that is told, before Started, the
// workflow the execution runs (a display lays out its columns by the
// node ids and types).
type WorkflowObserver interface {
	Workflow(w *workflow.Workflow)
}

// Note is a line of the repair loop for people.
type Note struct {
	// Kind is "repair", "repaired", "problem", "detail", "diagnostic",
	// "stopped" or "warning".
	Kind string
	Text string
}

// Options are what every execution (start, resume, rerun) takes.
type Options struct {
	// Concurrency caps the nodes running at once (default 16).
	Concurrency int
	// SecretsFile is a dotenv file with secret values.
	SecretsFile string
	// DenyPrivate makes http nodes refuse private addresses.
	DenyPrivate bool
	// Observer, when set, sees the run's progress.
	Observer Observer
	// Hard, when closed, stops running nodes at once (a second Ctrl-C).
	Hard <-chan struct{}
	// Leave, when closed, stops the execution as a cancel does (nothing new
	// starts; running nodes finish, or stop when Hard closes) but does not
	// end the run: what completed is committed, the lease is given up, and
	// the run is left interrupted for a resume or another server to continue
	// (a server that shuts down). A run that only waits (nothing runs) is
	// left waiting instead, with its wake-up time, as Park leaves it.
	Leave <-chan struct{}
	// Park, when set, ends an execution whose run only waits (for a
	// signal, or a timer due later than Park.After) with the run left
	// waiting and owned by nobody, instead of holding it in this process.
	// A signal (Signal) or its wake-up time (Due) resumes it.
	Park *Park
	// Mock, when set, answers nodes of the workflow instead of running
	// them (skein test): an answer must have Mocked set. Nodes it does not
	// answer run, or are reused as a resume or rerun would reuse them.
	// Child runs of subworkflow nodes are not mocked.
	Mock func(MockQuery) (MockAnswer, bool)
	// Record keeps a cassette of the run's interactions with the outside
	// world in its folder (skein run --record; record: true in the
	// workflow does the same), for Replay.
	Record bool
	// Trace, when set, is the trace level of the run and its child runs
	// (skein run --trace), over their workflows' trace: fields.
	Trace workflow.Trace
	// Replay, when set, answers the run's interactions from a cassette
	// instead of sending them (skein test's cases that name one, the
	// examples' golden replays). Child runs answer from it too.
	Replay *ReplaySource
	// Source is how a new run was started (record.StartedBy; default cli).
	Source string
}

// Result is how an execution ended.
type Result struct {
	// Run is the stored run, final.
	Run *record.Run
	// Engine is the engine's result: every step of this execution.
	Engine  *engine.Result
	Verdict *check.RunVerdict
	// Resumed is set when the execution continued an earlier one.
	Resumed bool
	// Detached: the run was left to the queue's workers (Detach).
	Detached bool
	// Repair is what --auto-repair did, when asked.
	Repair *RepairReport
	// Err is a failure to record or verify the run, beside its status.
	Err error
	// redact masks the run's secrets in its document (Doc).
	redact *redact.Redactor
	// tape is the execution's cassette, when it recorded or replayed.
	tape *cassette.Tape

	// signalled: the execution parked while a signal for a waiting step
	// was being saved, so it must be resumed at once.
	signalled bool
}
