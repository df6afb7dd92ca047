package skein

import (
	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/rundoc"
	"github.com/skeinhq/skein/internal/runner"
)

// The records an embedding program reads: the types of package record
// (internal), which the engine, the stores, the runner and every front end
// of Skein speak.
type (
	// RunDoc is the document of a run (DESIGN §6): what `skein run -o
	// json`, `skein runs show -o json`, the HTTP API and the MCP tools
	// print, described by schema/run.schema.json.
	RunDoc = rundoc.Doc
	// Step is one step of a run: one visit of one node. Its JSON is a
	// step of the run document.
	Step = record.Step
	// Artifact is a file a step of a queued run saved.
	Artifact = record.Artifact
	// OwnerDoc is the process that runs a run, in its RunDoc.
	OwnerDoc = rundoc.Owner
	// Verdict is what a run's checks found.
	Verdict = check.RunVerdict
	// Run is a run's row, as List and Cancel return it.
	Run = record.Run
	// Owner is a process that runs a run.
	Owner = record.Owner
	// Event is one event of a run as it is kept, numbered from 1 in the
	// run (schema/event.schema.json).
	Event = record.EventRow
	// RunStatus is the status of a run.
	RunStatus = record.RunStatus
	// StepStatus is the status of a step.
	StepStatus = record.Status
)

// Run statuses: RunDoc.Status and Run.Status hold one of them.
const (
	RunPending   = record.RunPending
	RunRunning   = record.RunRunning
	RunWaiting   = record.RunWaiting
	RunCompleted = record.RunCompleted
	RunFailed    = record.RunFailed
	RunCancelled = record.RunCancelled
	// RunInterrupted is a run whose process died while it ran: Resume
	// continues it.
	RunInterrupted = record.RunInterrupted
)

// Step statuses: Step.Status holds one of them.
const (
	StatusPending   = record.StatusPending
	StatusRunning   = record.StatusRunning
	StatusSuccess   = record.StatusSuccess
	StatusFailed    = record.StatusFailed
	StatusSkipped   = record.StatusSkipped
	StatusWaiting   = record.StatusWaiting
	StatusCancelled = record.StatusCancelled
)

// Why a skipped step did not run (Step.SkipReason; Step.TakenHandle says
// which handle was taken for SkipBranchNotTaken).
const (
	SkipBranchNotTaken = record.SkipBranchNotTaken
	SkipUpstreamFailed = record.SkipUpstreamFailed
	SkipDeadPath       = record.SkipDeadPath
	SkipDisabled       = record.SkipDisabled
	SkipCancelled      = record.SkipCancelled
	SkipRunFailed      = record.SkipRunFailed
	SkipItemFailed     = record.SkipItemFailed
)

// Event types: Event.Type holds one of them.
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

// Errors the Engine's methods return; test for them with errors.Is and
// errors.As.
var (
	// ErrNotFound: no run has the given id.
	ErrNotFound = runner.ErrNotFound
	// ErrCompleted: the run completed; there is nothing to resume or
	// signal.
	ErrCompleted = runner.ErrCompleted
	// ErrNotRunning: the run has ended, so it cannot be cancelled.
	ErrNotRunning = runner.ErrNotRunning
	// ErrNoNode: the run's workflow has no node of that id.
	ErrNoNode = runner.ErrNoNode
	// ErrNotWaiting: the node is not waiting for a signal.
	ErrNotWaiting = runner.ErrNotWaiting
	// ErrOwned: another live process runs the run (an *OwnedError).
	ErrOwned = runner.ErrOwned
)

type (
	// InvalidError is a workflow that does not validate; its Diagnostics
	// hold every problem, each with its file, line and column.
	InvalidError = runner.InvalidError
	// UsageError is a request that cannot be carried out as given (a
	// missing secret, an unknown node to pin); its message says what to
	// do.
	UsageError = runner.UsageError
	// OwnedError is a run that another live process runs.
	OwnedError = runner.OwnedError
)
