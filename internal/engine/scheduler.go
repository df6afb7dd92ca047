package engine

import (
	"runtime"
	"sync"

	"github.com/skeinhq/skein/internal/engine/scheduler"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// The scheduler's types and constants, under the names the drivers and
// their callers use (package scheduler has the pure scheduler).
type (
	Run        = scheduler.Run
	Status     = scheduler.Status
	RunStatus  = scheduler.RunStatus
	Task       = scheduler.Task
	Outcome    = scheduler.Outcome
	StepUpdate = scheduler.StepUpdate
	Event      = scheduler.Event
	Timer      = scheduler.Timer
	Await      = scheduler.Await
	Actions    = scheduler.Actions
	PlanNode   = scheduler.PlanNode
	Plan       = scheduler.Plan
)

// The scheduler's constructors and helpers.
var (
	NewRun     = scheduler.NewRun
	SignalName = scheduler.SignalName
)

// NewPlan prepares a valid workflow for running (scheduler.NewPlan), with
// each node's canonical definition made once (PlanNode.Def): the runs of
// a plan held in a cache share them. A big workflow's definitions are
// made on the other cores while the scheduler plans.
func NewPlan(w *workflow.Workflow, reg *node.Registry) (*Plan, error) {
	defs := make([][]byte, len(w.Nodes))
	var wg sync.WaitGroup
	if parts := min(runtime.GOMAXPROCS(0), len(w.Nodes)/defsPart); parts >= 2 {
		for k := range parts {
			wg.Go(func() {
				for i := k * len(defs) / parts; i < (k+1)*len(defs)/parts; i++ {
					defs[i] = nodeDef(w.Nodes[i])
				}
			})
		}
	} else {
		for i, n := range w.Nodes {
			defs[i] = nodeDef(n)
		}
	}
	p, err := scheduler.NewPlan(w, reg)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	for _, pn := range p.Nodes {
		pn.Def = defs[pn.Index] // the plan's nodes are the workflow's, in its order
	}
	return p, nil
}

// defsPart is the fewest nodes whose definitions NewPlan makes in a
// goroutine of their own: fewer cost less made in line.
const defsPart = 128

// The scheduler's constants.
const (
	HandleTimeout          = scheduler.HandleTimeout
	MaxBackoff             = scheduler.MaxBackoff
	StatusPending          = scheduler.StatusPending
	StatusRunning          = scheduler.StatusRunning
	StatusSuccess          = scheduler.StatusSuccess
	StatusFailed           = scheduler.StatusFailed
	StatusSkipped          = scheduler.StatusSkipped
	StatusWaiting          = scheduler.StatusWaiting
	StatusCancelled        = scheduler.StatusCancelled
	RunPending             = scheduler.RunPending
	RunRunning             = scheduler.RunRunning
	RunWaiting             = scheduler.RunWaiting
	RunCompleted           = scheduler.RunCompleted
	RunFailed              = scheduler.RunFailed
	RunCancelled           = scheduler.RunCancelled
	SkipBranchNotTaken     = scheduler.SkipBranchNotTaken
	SkipUpstreamFailed     = scheduler.SkipUpstreamFailed
	SkipDeadPath           = scheduler.SkipDeadPath
	SkipDisabled           = scheduler.SkipDisabled
	SkipCancelled          = scheduler.SkipCancelled
	SkipRunFailed          = scheduler.SkipRunFailed
	SkipItemFailed         = scheduler.SkipItemFailed
	EventExecutionStarted  = scheduler.EventExecutionStarted
	EventExecutionFinished = scheduler.EventExecutionFinished
	EventNodeStarted       = scheduler.EventNodeStarted
	EventNodeFinished      = scheduler.EventNodeFinished
	EventBranchEvaluated   = scheduler.EventBranchEvaluated
	EventVariableSet       = scheduler.EventVariableSet
	EventRetry             = scheduler.EventRetry
	EventLoopIteration     = scheduler.EventLoopIteration
	EventLoopExited        = scheduler.EventLoopExited
	EventWarning           = scheduler.EventWarning
	EventSignalAwaited     = scheduler.EventSignalAwaited
	EventSignalReceived    = scheduler.EventSignalReceived
	DirectiveAwait         = scheduler.DirectiveAwait
	AwaitSignal            = scheduler.AwaitSignal
	DirectiveAwaitName     = scheduler.DirectiveAwaitName
	DirectiveResume        = scheduler.DirectiveResume
)
