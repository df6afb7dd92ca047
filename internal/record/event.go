package record

import "time"

// Event is something that happened in a run, as the engine tells it
// (events.jsonl, the run's event stream).
type Event struct {
	Type      string
	Node      string
	Visit     int
	Iteration int
	Data      map[string]any
}

// TimedEvent is an event with its time, as written to events.jsonl.
type TimedEvent struct {
	Time time.Time `json:"time"`
	Event
}

// EventRow is an event as a store keeps it: numbered from 1 in the order
// the run's events were committed.
type EventRow struct {
	RunID     string
	Seq       int64
	Time      time.Time
	Type      string
	Node      string
	Visit     int
	Iteration int
	Data      map[string]any
}

// Event types the engine writes (DESIGN §5). Node kinds add their own
// (tool_call, llm_call, …) through their event sink.
const (
	EventExecutionStarted  = "execution_started"
	EventExecutionFinished = "execution_finished"
	EventNodeStarted       = "node_started"
	EventNodeFinished      = "node_finished"
	EventBranchEvaluated   = "branch_evaluated"
	EventVariableSet       = "variable_set"
	EventRetry             = "retry"
	EventLoopIteration     = "loop_iteration"
	EventLoopExited        = "loop_exited"
	EventWarning           = "warning"
	// EventSignalAwaited: a wait node waits for a signal (its step is
	// waiting); EventSignalReceived: the signal came and the node goes on.
	EventSignalAwaited  = "signal_awaited"
	EventSignalReceived = "signal_received"
)
