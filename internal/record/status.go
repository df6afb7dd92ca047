package record

// Status is the status of one step (one visit of one node).
type Status string

// Step statuses (DESIGN §2.7). The scheduler hands a task to its driver
// as running; a driver that holds it back for a concurrency slot records
// its step as pending until it really starts.
const (
	StatusPending   Status = "pending"
	StatusRunning   Status = "running"
	StatusSuccess   Status = "success"
	StatusFailed    Status = "failed"
	StatusSkipped   Status = "skipped"
	StatusWaiting   Status = "waiting"
	StatusCancelled Status = "cancelled"
)

// Final reports whether s is a final status.
func (s Status) Final() bool {
	return s == StatusSuccess || s == StatusFailed || s == StatusSkipped || s == StatusCancelled
}

// RunStatus is the status of a run.
type RunStatus string

// Run statuses. A run whose owner's lease ran out while it was pending or
// running is shown as RunInterrupted; the store keeps what it last wrote.
const (
	RunPending     RunStatus = "pending"
	RunRunning     RunStatus = "running"
	RunWaiting     RunStatus = "waiting"
	RunCompleted   RunStatus = "completed"
	RunFailed      RunStatus = "failed"
	RunCancelled   RunStatus = "cancelled"
	RunInterrupted RunStatus = "interrupted"
)

// Final reports whether a run in status s has ended.
func (s RunStatus) Final() bool {
	return s == RunCompleted || s == RunFailed || s == RunCancelled
}

// Why a skipped step did not run (Step.SkipReason).
const (
	// SkipBranchNotTaken: the node is on a handle of an if, a switch or a
	// _route that was not taken (Step.TakenHandle says which one was).
	SkipBranchNotTaken = "branch_not_taken"
	// SkipUpstreamFailed: a node it depends on failed (on_error: continue
	// or a route to an error handler) and no edge into it fired.
	SkipUpstreamFailed = "upstream_failed"
	// SkipDeadPath: every edge into the node died because the nodes
	// before it were skipped.
	SkipDeadPath = "dead_path"
	// SkipDisabled: the node is disabled; the run flowed through it.
	SkipDisabled = "disabled"
	// SkipCancelled: the run was cancelled before the node ran, in runs
	// recorded before such steps were recorded cancelled instead.
	SkipCancelled = "cancelled"
	// SkipRunFailed: the run failed before the node ran.
	SkipRunFailed = "run_failed"
	// SkipItemFailed: the foreach item it belongs to failed (on_error:
	// continue moves to the next item).
	SkipItemFailed = "item_failed"
)
