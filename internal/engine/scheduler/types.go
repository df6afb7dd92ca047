package scheduler

import (
	"time"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/node"
)

// The record types the scheduler speaks (package record has them).
type (
	Status    = record.Status
	RunStatus = record.RunStatus
	Event     = record.Event
)

// Step and run statuses.
const (
	StatusPending   = record.StatusPending
	StatusRunning   = record.StatusRunning
	StatusSuccess   = record.StatusSuccess
	StatusFailed    = record.StatusFailed
	StatusSkipped   = record.StatusSkipped
	StatusWaiting   = record.StatusWaiting
	StatusCancelled = record.StatusCancelled
	RunPending      = record.RunPending
	RunRunning      = record.RunRunning
	RunWaiting      = record.RunWaiting
	RunCompleted    = record.RunCompleted
	RunFailed       = record.RunFailed
	RunCancelled    = record.RunCancelled
)

// Task is one attempt of one node for a driver to run.
type Task struct {
	ID        int64
	Node      *PlanNode
	Frame     int
	Visit     int // 1-based, counted over the whole run
	Iteration int // the pass or item index of the innermost loop, 0 outside loops
	Attempt   int // 1-based
	// Nodes holds the outputs of the nodes the node's templates refer to.
	Nodes map[string]any
	// Vars is the run's variables when the task started.
	Vars map[string]any
	// Messages is the run's message list when the task started (the
	// _messages of the steps that succeeded before).
	Messages []any
	// Loop is {item, index, total, iteration} inside a loop or foreach
	// body, nil elsewhere.
	Loop map[string]any
	// Passes is, for a loop node, how many times its body has run in this
	// activation: 0 means enter the body without looking at exit.
	Passes int
	// Resume is set on the task that runs a parked step again after its
	// signal came (node.Spec.Parks).
	Resume *node.Resume
}

// Outcome is what a task produced.
type Outcome struct {
	// Output is the node's output object, directives removed.
	Output map[string]any
	// Directives are the _-prefixed keys of the result (Known).
	Directives map[string]any
	// Err is set when the attempt failed.
	Err *node.Error
	// NotStarted is set when the task never ran: the driver withdrew it
	// while it waited for a concurrency slot, because the run is being
	// cancelled or failed. Its step then ends as pending steps do:
	// cancelled, or skipped as run_failed.
	NotStarted bool
}

// StepUpdate is a change of one step's record.
type StepUpdate struct {
	TaskID    int64
	Node      string
	Index     int
	Visit     int
	Iteration int
	Attempt   int
	Status    Status
	Output    map[string]any
	Error     *node.Error
	// Retry is set on a failed attempt that will be tried again.
	Retry bool
	// SkipReason says why a skipped step did not run (Skip* constants).
	SkipReason string
	// TakenHandle is, for a step skipped as branch_not_taken, the handle
	// its branch took instead.
	TakenHandle string
	// Loop is the loop context of the step's frame ({item, index, total,
	// iteration} in a foreach item, {iteration, index} in a loop pass),
	// nil outside loop bodies.
	Loop map[string]any
}

// Why a step was skipped (StepUpdate.SkipReason, the step record's
// skip_reason).
const (
	SkipBranchNotTaken = record.SkipBranchNotTaken
	SkipUpstreamFailed = record.SkipUpstreamFailed
	SkipDeadPath       = record.SkipDeadPath
	SkipDisabled       = record.SkipDisabled
	SkipCancelled      = record.SkipCancelled
	SkipRunFailed      = record.SkipRunFailed
	SkipItemFailed     = record.SkipItemFailed
)

// Event types.
const (
	EventExecutionStarted  = record.EventExecutionStarted
	EventExecutionFinished = record.EventExecutionFinished
	EventNodeStarted       = record.EventNodeStarted
	EventNodeFinished      = record.EventNodeFinished
	EventBranchEvaluated   = record.EventBranchEvaluated
	EventVariableSet       = record.EventVariableSet
	EventRetry             = record.EventRetry
	EventLoopIteration     = record.EventLoopIteration
	EventLoopExited        = record.EventLoopExited
	EventWarning           = record.EventWarning
	EventSignalAwaited     = record.EventSignalAwaited
	EventSignalReceived    = record.EventSignalReceived
)

// DirectiveAwait is the directive by which a wait node (node.RoleWait)
// asks to wait for a signal: its value is AwaitSignal. Other kinds'
// _await is ignored.
const (
	DirectiveAwait = "_await"
	AwaitSignal    = "signal"
	// DirectiveAwaitName and DirectiveResume come with _await from a kind
	// that parks (node.Spec.Parks): what this wait is, told from the
	// step's other waits (the signal's name is <node>#<it>), and the state
	// the kind goes on from.
	DirectiveAwaitName = "_await_name"
	DirectiveResume    = "_resume"
)

// SignalName is the name the signal of a wait is recorded under: the
// node's id for a wait node, <node>#<name> for a wait a parked kind named
// (its _await_name), so that each wait of one step takes its own signal.
func SignalName(nodeID string, directives map[string]any) string {
	if n, ok := directives[DirectiveAwaitName].(string); ok && n != "" {
		return nodeID + "#" + n
	}
	return nodeID
}

// Timer asks the driver to call Run.TimerFired(ID) after Delay.
type Timer struct {
	ID    int64
	Delay time.Duration
	// Hold is set for a timer that holds a step's successors — a wait, a
	// _delay_seconds, a signal wait's timeout (Timeout) — rather than one
	// that retries: Index and Visit name the step. A driver records the
	// step's wake-up time, so the wait can outlive the process.
	Hold    bool
	Timeout bool
	Index   int
	Visit   int
}

// Await is a wait node's step waiting for a signal: Run.Signal with its
// node and visit ends the wait.
type Await struct {
	Node  string
	Index int
	Visit int
	// Signal is the name its signal is recorded under (SignalName): the
	// node's id, or <node>#<name> for a wait a parked kind named.
	Signal string
	// Task is the id of the task whose step waits.
	Task int64
}

// Actions is what one scheduler step asks the driver to do, in order:
// write the steps and events, set the timers, start the tasks.
type Actions struct {
	Start  []*Task
	Timers []Timer
	Steps  []StepUpdate
	Events []Event
	// Awaits are the steps that began waiting for a signal.
	Awaits []Await
	// Stop lists timers set earlier that no longer matter (a signal came
	// before its timeout; the run stops): a driver may stop them. One that
	// fires anyway changes nothing.
	Stop []int64
	// CancelRunning asks the driver to cancel the tasks still running
	// (the run failed).
	CancelRunning bool
	// Done is set when the run ended; Status and Err tell how.
	Done   bool
	Status RunStatus
	Err    *node.Error

	// filled holds the lengths the scheduler gave Start, Timers, Steps,
	// Events and Awaits (Run.end): what Recycle clears, however the driver
	// shortened the slices, without clearing the rest of a capacity one
	// big call (a run's start plans every step) left behind.
	filled [5]int
}
