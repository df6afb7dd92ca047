package record

import (
	"time"

	"github.com/skeinhq/skein/node"
)

// Step is the record of one visit of one node (DESIGN §2.8): what the
// engine records as the node runs, what a store keeps and reads back, and
// a step of the run document every front end prints. A step is keyed by
// (RunID, Generation, Node, Visit); saving it again replaces the record.
//
// Its JSON is the step of the run document (schema/run.schema.json): the
// fields the engine and the stores keep for themselves are not part of it.
type Step struct {
	Node      string `json:"node"`
	Type      string `json:"type"`
	Status    Status `json:"status"`
	Visit     int    `json:"visit"`
	Iteration int    `json:"iteration"`
	Attempts  int    `json:"attempts"`
	// SkipReason says why a skipped step did not run (Skip* constants).
	SkipReason string `json:"skip_reason,omitempty"`
	// TakenHandle is, for a step skipped as branch_not_taken, the handle
	// the branching node took instead.
	TakenHandle string `json:"taken_handle,omitempty"`
	// StepOrder is the step's place in the run, from 1, in the order
	// steps were planned (the run's own nodes in topological order when
	// it starts, a loop pass's or foreach item's when it is planned); a
	// step keeps it as it runs, and steps are listed in this order.
	StepOrder int `json:"step_order"`
	// Params are the node's parameters as they were resolved (secrets
	// masked once recorded); nil for a step that never resolved them.
	Params map[string]any `json:"params,omitempty"`
	// Output is the step's output object; nil when it has none.
	Output     map[string]any `json:"output"`
	Error      *node.Error    `json:"error"`
	Cached     bool           `json:"cached"`
	Pinned     bool           `json:"pinned"`
	StartedAt  *time.Time     `json:"started_at"`
	FinishedAt *time.Time     `json:"finished_at"`
	DurationMS int64          `json:"duration_ms"`
	Tokens     int            `json:"tokens"`
	CostUSD    float64        `json:"cost_usd"`
	// WakeAt is, for a step that holds its successors (a wait, a
	// _delay_seconds, a signal's timeout), when it lets them go on. It is
	// kept once the wait is over, and an execution that resumes the run
	// waits until then, not a whole wait more.
	WakeAt *time.Time `json:"wake_at,omitempty"`
	// RanOn is where the step ran: the host, the process and, on the
	// queue, the worker; nil for a step that never started.
	RanOn *Place `json:"ran_on,omitempty"`
	// Confidence is the confidence (0..1) the node reported for its
	// result (a _confidence directive, or the confidence number of an llm
	// node's schema); nil when it reported none.
	Confidence *float64 `json:"confidence_score,omitempty"`
	// Artifacts are the files the node saved, as a run document lists
	// them; the engine and the stores leave it empty (the step's
	// directives hold them).
	Artifacts []Artifact `json:"artifacts,omitempty"`

	// RunID is the run the step belongs to, as a store keeps it.
	RunID string `json:"-"`
	// Generation is the run's execution that recorded the step (0 is
	// taken as 1).
	Generation int `json:"-"`
	// Mocked is set when a test's mock answered for the node.
	Mocked bool `json:"-"`
	// ConfigHash identifies what the step ran (the node's definition and
	// resolved inputs), compared on resume to decide whether the step can
	// be reused.
	ConfigHash string `json:"-"`
	// ProcessGroup is the process group a running step's command started,
	// recorded and flushed as soon as it starts, so a resume after Skein
	// died can kill what it left running before it runs the node again.
	// Only a running step holds one: it is 0 once the attempt ends.
	ProcessGroup int `json:"-"`
	// Masked is set when the output held a secret value, so what is
	// recorded is not what the run saw: a resume runs the node again
	// rather than reuse "***".
	Masked bool `json:"-"`
	// OutputRef is the path of a file holding the whole output, as
	// versions before blobs kept a large one; Output is then nil.
	OutputRef string `json:"-"`
	// Directives are the step's _route and other directives, kept so a
	// reused step routes as the original did.
	Directives map[string]any `json:"-"`
	// Retry is set while the step's failed attempt waits to be tried
	// again, so a display shows one final mark per step.
	Retry bool `json:"-"`
	// Loop is the loop context of the step ({item, index, total,
	// iteration} in a foreach item, {iteration, index} in a loop pass),
	// for displays; nil outside loop bodies.
	Loop map[string]any `json:"-"`
}

// Artifact is a file a node saved: on a worker of a queued run it is kept
// in the blob store, in a local run in the run folder (<node>/artifacts/).
type Artifact struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Place is where a step ran.
type Place struct {
	Host string `json:"host"`
	PID  int    `json:"pid,omitempty"`
	// Worker is the queue worker that ran the step; empty in a local run.
	Worker string `json:"worker,omitempty"`
}
