// Package scheduler is Skein's pure scheduler: given a run's state (Run,
// built on a Plan of the workflow) and one event — the run started, a
// task finished, a timer fired, a signal came, a cancel was asked for —
// it changes the state and returns what to do next (Actions): the tasks
// to start, the timers to set, the step records and events to write,
// the running tasks to stop. It does no I/O, starts no goroutines and
// reads no clock, so it is tested exhaustively and fuzzed
// (internal/engine's scheduler, property and fuzz tests); a test checks
// it imports nothing that does I/O.
//
// Loops run in frames. Every node has a home: the innermost loop or
// foreach whose body holds it, or the run itself. Each pass of a loop,
// and each item of a foreach, gets a fresh frame holding the state of the
// body's nodes and edges, so concurrent foreach items never share state
// and every pass starts clean. Cycles that are not loops re-arm the
// members of the cycle after the back-edge's target in the same frame,
// bounded by max_visits; edges leaving a cycle wait until it can no
// longer come round, and nodes off a cycle run at most once per frame. A
// foreach item's result is the output of the body node that comes last in
// the graph's order.
//
// The drivers of package engine (the local driver) and package queue (the
// queue driver) feed it; they ask it how the run is ending through its
// methods (Stopping, Status), never its fields.
package scheduler
