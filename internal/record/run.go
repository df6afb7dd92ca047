package record

import (
	"cmp"
	"fmt"
	"time"

	"github.com/skeinhq/skein/node"
)

// How a run was started (Run.Source).
const (
	SourceCLI      = "cli"      // skein run, resume or rerun
	SourceAPI      = "api"      // skein serve's POST /api/runs
	SourceWebhook  = "webhook"  // a webhook trigger's request
	SourceSchedule = "schedule" // a schedule trigger's fire
	SourceChat     = "chat"     // a chat trigger's message
	SourceMCP      = "mcp"      // a tool of skein mcp
	SourceReplay   = "replay"   // skein replay: ReplayOf is the replayed run
	SourceEditor   = "editor"   // a draft tried in skein serve's workflow editor
)

// StartedBy is the Source of a new run: SourceReplay for a run that
// replays another (replayOf), none for a child run (parentID: its
// parent's node started it), else source, else SourceCLI.
func StartedBy(source, replayOf, parentID string) string {
	switch {
	case replayOf != "":
		return SourceReplay
	case parentID != "":
		return ""
	}
	return cmp.Or(source, SourceCLI)
}

// Run is the row of one execution of a workflow, as a store keeps it.
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
	// Source is how the run was started: cli, api, webhook, schedule,
	// chat, mcp, replay or editor; empty for runs recorded before it was kept.
	Source string
	// ReplayOf is the run a replay replays; empty for other runs.
	ReplayOf string
	// Status is the run's status as stored: pending, running, waiting,
	// completed, failed, cancelled (DESIGN §2.7). A running or pending run
	// whose lease expired is interrupted; see LeaseExpired. A waiting run
	// has no owner: it was left waiting for a signal or a timer (WakeAt).
	Status     RunStatus
	Inputs     map[string]any
	Outputs    map[string]any
	Error      *node.Error
	StartedAt  time.Time
	FinishedAt *time.Time
	Tokens     int
	CostUSD    float64

	// Owner holds the run while it runs; its zero value means nobody.
	Owner Owner
	// LeaseUntil is when the owner's lease ends, by the database's clock;
	// zero when nobody owns the run.
	LeaseUntil time.Time
	// LeaseExpired is set on reading: the run has no owner, or its lease
	// ended, by the database's clock.
	LeaseExpired bool
	// LeaseTTL, given to a store's CreateRun with an Owner, is how long
	// the new lease lasts. It is not stored.
	LeaseTTL time.Duration
	// CancelRequested is when someone asked the owner to cancel the run.
	CancelRequested *time.Time
	// CancelLetFinish is set when that request lets the running nodes
	// finish; without it they are stopped.
	CancelLetFinish bool
	// Generation counts the executions of the run: 1 for the first, one
	// more for each resume. Steps are recorded per generation, so a resume
	// never overwrites what an earlier execution recorded.
	Generation int
	// WakeAt is, for a waiting run, the earliest wake-up time of its
	// waits; nil when only a signal can wake it. It is written with a
	// store batch's Finish and cleared when the run is claimed.
	WakeAt *time.Time
}

// Owner is the process that runs a run: a CLI process, a server, or a
// worker. Token is random per claim; the other fields describe the owner
// to people and let a process on the same host see that the owner died.
type Owner struct {
	Host  string
	PID   int
	Token string
}

func (o Owner) String() string {
	if o.Token == "" {
		return "nobody"
	}
	if o.PID == 0 {
		return o.Host // not a process: the queue's workers
	}
	return fmt.Sprintf("pid %d on %s", o.PID, o.Host)
}
