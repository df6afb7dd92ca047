package store

import (
	"context"
	"errors"
	"time"

	"github.com/skeinhq/skein/node"
)

// Conditions callers tell apart with errors.Is. Implementations wrap them
// with what was not found, which file is locked, and so on.
var (
	// ErrNotFound: no run, workflow, or checkpoint has the given key.
	ErrNotFound = errors.New("not found")
	// ErrExists: a run with the given id already exists.
	ErrExists = errors.New("already exists")
	// ErrLocked: another process held the database locked for longer than
	// the busy timeout.
	ErrLocked = errors.New("the database is locked by another process")
	// ErrCorrupt: the database file is not a Skein database or is damaged.
	// Implementations never reset or recreate such a database.
	ErrCorrupt = errors.New("the database is not a Skein database or is damaged")
	// ErrNewerSchema: the database was written by a newer Skein, whose
	// schema this binary does not know. Nothing is changed.
	ErrNewerSchema = errors.New("the database was written by a newer version of skein")
)

// Run is one execution of a workflow.
type Run struct {
	ID       string
	Workflow string
	// WorkflowVersion is the stored version of the workflow the run
	// executes; 0 when the run was not tied to a stored version.
	WorkflowVersion int
	// File is the workflow file the run was started from, if any.
	File string
	// Dir is the run folder (.skein/runs/<workflow>/<time>_<id>).
	Dir string
	// ParentID is the run whose subworkflow node started this run.
	ParentID string
	// Trigger is the id of the trigger node that fired.
	Trigger string
	// Status is a run status: pending, running, waiting, completed,
	// failed, cancelled (DESIGN §2.7).
	Status     string
	Inputs     map[string]any
	Outputs    map[string]any
	Error      *node.Error
	StartedAt  time.Time
	FinishedAt *time.Time
	Tokens     int
	CostUSD    float64
}

// Step is the record of one visit of one node (DESIGN §2.8). A step is
// keyed by (RunID, Node, Visit); saving it again replaces the record.
type Step struct {
	RunID     string
	StepOrder int
	Node      string
	Type      string
	Visit     int
	Iteration int
	Attempts  int
	// Status is a step status: pending, running, success, failed,
	// skipped, waiting, cancelled.
	Status string
	Params map[string]any
	Output map[string]any
	// OutputRef is the path of a file holding the output when it is too
	// large to keep in the database; Output is then nil.
	OutputRef string
	Error     *node.Error
	// ConfigHash is the hash of the node's definition and resolved inputs,
	// compared on resume to decide whether the step can be reused.
	ConfigHash string
	Cached     bool
	Pinned     bool
	StartedAt  *time.Time
	FinishedAt *time.Time
	DurationMS int64
	Tokens     int
	CostUSD    float64
}

// Batch is one run's share of a SaveBatch.
type Batch struct {
	RunID  string
	Steps  []*Step
	Events []Event
}

// Event is one line of a run's event log. Seq numbers a run's events from
// 1 in the order they were appended.
type Event struct {
	RunID     string
	Seq       int64
	Time      time.Time
	Type      string
	Node      string
	Visit     int
	Iteration int
	Data      map[string]any
}

// WorkflowVersion is one stored version of a workflow's source. Versions of
// a name count from 1.
type WorkflowVersion struct {
	Name      string
	Version   int
	Hash      string
	Source    []byte
	CreatedAt time.Time
}

// RunFilter selects runs for ListRuns. Zero fields do not filter.
type RunFilter struct {
	Workflow string
	Status   string
	// Limit caps the number of runs returned; 0 returns them all.
	Limit int
	// Before keeps only runs started strictly before this time; pass the
	// StartedAt of the last run of a page to get the next page.
	Before time.Time
}

// Store keeps workflows, runs, steps, events and checkpoints. It is safe
// for concurrent use.
type Store interface {
	// SaveWorkflow stores source as the next version of the workflow
	// name. When hash equals the latest version's hash, it returns the
	// latest version and stores nothing.
	SaveWorkflow(ctx context.Context, name string, source []byte, hash string) (WorkflowVersion, error)
	// Workflow returns one version of a workflow; version 0 is the latest.
	Workflow(ctx context.Context, name string, version int) (WorkflowVersion, error)

	// CreateRun stores a new run. An empty Status becomes "pending" and a
	// zero StartedAt becomes now; both are written back to r. A run id
	// that exists already gives ErrExists.
	CreateRun(ctx context.Context, r *Run) error
	// UpdateRun replaces every field of the run r.ID.
	UpdateRun(ctx context.Context, r *Run) error
	Run(ctx context.Context, id string) (*Run, error)
	// ListRuns returns the runs that match f, newest first.
	ListRuns(ctx context.Context, f RunFilter) ([]*Run, error)

	// SaveSteps inserts or replaces steps, keyed by (run, node, visit), in
	// one transaction. The steps' RunID fields are ignored.
	SaveSteps(ctx context.Context, runID string, steps []*Step) error
	// Steps returns a run's steps by step order.
	Steps(ctx context.Context, runID string) ([]*Step, error)
	// DeleteSteps removes a run's steps (resume writes them afresh).
	DeleteSteps(ctx context.Context, runID string) error
	// SaveBatch saves the steps (as SaveSteps) and appends the events (as
	// AppendEvents) of several runs in one transaction, setting the
	// events' RunID and Seq.
	SaveBatch(ctx context.Context, batches []Batch) error

	// AppendEvents adds events to the run's log, numbering them after the
	// ones already there, and sets RunID and Seq in the slice.
	AppendEvents(ctx context.Context, runID string, events []Event) error
	// Events returns up to limit of the run's events with Seq > afterSeq,
	// in order; limit 0 returns them all.
	Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]Event, error)

	// SaveCheckpoint replaces the run's checkpoint.
	SaveCheckpoint(ctx context.Context, runID string, data []byte) error
	Checkpoint(ctx context.Context, runID string) ([]byte, error)

	// DeleteRuns deletes the runs started before the given time, with
	// their steps, events and checkpoints, whatever their status. It
	// returns the deleted runs, oldest first, so the caller can remove
	// their folders.
	DeleteRuns(ctx context.Context, before time.Time) ([]*Run, error)
	// Compact gives the space of deleted rows back to the file system.
	Compact(ctx context.Context) error
	Close() error
}
