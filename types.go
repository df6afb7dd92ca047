package skein

import (
	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/store"
)

// The records an embedding program reads, as the rest of Skein speaks
// them.
type (
	// RunDoc is the document of a run (DESIGN §6): what `skein run -o
	// json`, `skein runs show -o json`, the HTTP API and the MCP tools
	// print, described by schema/run.schema.json.
	RunDoc = runner.RunDoc
	// StepDoc is one step of a RunDoc: one visit of one node.
	StepDoc = runner.StepDoc
	// ArtifactDoc is a file a step of a queued run saved.
	ArtifactDoc = runner.ArtifactDoc
	// OwnerDoc is the process that runs a run, in its RunDoc.
	OwnerDoc = runner.OwnerDoc
	// Verdict is what a run's checks found.
	Verdict = check.RunVerdict
	// Run is a run as List returns it.
	Run = store.Run
	// Owner is a process that runs a run.
	Owner = store.Owner
	// Event is one event of a run (schema/event.schema.json).
	Event = store.Event
	// RunStatus is the status of a run.
	RunStatus = engine.RunStatus
	// StepStatus is the status of a step.
	StepStatus = engine.Status
)

// Run statuses. RunDoc.Status and Run.Status hold one of them.
const (
	RunPending   = engine.RunPending
	RunRunning   = engine.RunRunning
	RunWaiting   = engine.RunWaiting
	RunCompleted = engine.RunCompleted
	RunFailed    = engine.RunFailed
	RunCancelled = engine.RunCancelled
	// RunInterrupted is a run whose process died while it ran: Resume
	// continues it.
	RunInterrupted RunStatus = runner.StatusInterrupted
)

// Step statuses. StepDoc.Status holds one of them.
const (
	StatusPending   = engine.StatusPending
	StatusRunning   = engine.StatusRunning
	StatusSuccess   = engine.StatusSuccess
	StatusFailed    = engine.StatusFailed
	StatusSkipped   = engine.StatusSkipped
	StatusWaiting   = engine.StatusWaiting
	StatusCancelled = engine.StatusCancelled
)

// Event types: Event.Type holds one of them.
const (
	EventExecutionStarted  = engine.EventExecutionStarted
	EventExecutionFinished = engine.EventExecutionFinished
	EventNodeStarted       = engine.EventNodeStarted
	EventNodeFinished      = engine.EventNodeFinished
	EventBranchEvaluated   = engine.EventBranchEvaluated
	EventVariableSet       = engine.EventVariableSet
	EventRetry             = engine.EventRetry
	EventLoopIteration     = engine.EventLoopIteration
	EventLoopExited        = engine.EventLoopExited
	EventWarning           = engine.EventWarning
	EventSignalAwaited     = engine.EventSignalAwaited
	EventSignalReceived    = engine.EventSignalReceived
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
	ErrOwned = store.ErrOwned
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
