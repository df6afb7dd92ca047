package queue

import (
	"fmt"
	"math"
	"time"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/engine"
)

// state is a run's scheduler state rebuilt from its history, with the
// records of its steps.
type state struct {
	env *runEnv
	run *engine.Run
	// seq is the last history event applied.
	seq int64
	// events is the seq of the run's last event (of its event stream, the
	// row's event_seq) as this worker's last transaction of the run left
	// it; eventsKnown is whether that is all the state holds: not before
	// such a transaction, nor once the state read history another worker
	// wrote since (load).
	events      int64
	eventsKnown bool
	cancelled   bool
	steps       map[[2]int]*engine.StepRecord // by node index and visit
	order       []*engine.StepRecord
	// wakeAt is the wake-up time of each held step; timeouts the timers
	// that are a signal wait's timeout, by id.
	wakeAt   map[[2]int]time.Time
	timeouts map[int64]engine.Timer
	// hashes is the config hash of each node's latest succeeded step.
	hashes []string
	// begun holds the tasks whose node started (kindBegan).
	begun  map[int64]bool
	tokens int
	cost   float64
	// scope is the run's scope (runEnv.task.Scope) with the trigger's
	// payload, which the history's start event holds.
	scope expr.Scope
}

func newState(env *runEnv) *state {
	return &state{
		env: env, run: engine.NewRun(env.plan, env.id),
		steps: map[[2]int]*engine.StepRecord{}, wakeAt: map[[2]int]time.Time{}, timeouts: map[int64]engine.Timer{},
		hashes: make([]string, len(env.plan.Nodes)), begun: map[int64]bool{},
		scope: env.task.Scope,
	}
}

// feed applies one history event to the scheduler and to the step
// records. It returns the scheduler's actions and the records it changed.
func (st *state) feed(e *event) (*engine.Actions, []*engine.StepRecord, error) {
	if e.Seq != st.seq+1 {
		return nil, nil, fmt.Errorf("run %s: history event %d follows %d: the history has a gap", st.env.id, e.Seq, st.seq)
	}
	st.seq = e.Seq
	var a *engine.Actions
	switch e.Kind {
	case kindStart:
		starts, err := st.env.plan.StartNodes(st.env.trigger)
		if err != nil {
			return nil, nil, err
		}
		// The scope's trigger is what the run was started with, as the
		// local driver has it (engine.RunScope: the inputs when nothing),
		// as the trigger node's output is.
		if e.Payload != nil {
			st.scope.Trigger = e.Payload
		}
		payload := e.Payload
		if payload == nil {
			payload = st.env.inputs
		}
		a = st.run.Start(starts, payload)
	case kindBegan:
		return st.began(e)
	case kindUnbegan:
		return st.unbegan(e)
	case kindWaiting:
		return st.waiting(e)
	case kindFinished:
		delete(st.begun, e.Task)
		if t := st.run.Task(e.Task); t != nil && e.Hash != "" && e.Err == nil {
			st.hashes[t.Node.Index] = e.Hash
		}
		a = st.run.Finished(e.Task, e.outcome())
		if !engine.IsEmpty(a) {
			tokens, cost := engine.Usage(e.outcome())
			st.tokens += tokens
			st.cost += cost
		}
	case kindTimer:
		a = st.run.TimerFired(e.Timer)
		delete(st.timeouts, e.Timer)
	case kindSignal:
		a, _ = st.run.Signal(e.Node, e.Visit, e.Data, e.Sent)
	case kindCancel:
		st.cancelled = true
		a = st.run.Cancel()
	default:
		return nil, nil, fmt.Errorf("run %s: history event %d has the unknown kind %q", st.env.id, e.Seq, e.Kind)
	}
	for _, t := range a.Timers {
		if !t.Hold {
			continue
		}
		key := [2]int{t.Index, t.Visit}
		if _, ok := st.wakeAt[key]; !ok {
			wake := e.At.Add(t.Delay)
			if t.Delay == time.Duration(math.MaxInt64) || wake.Before(e.At) {
				wake = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
			}
			st.wakeAt[key] = wake
		}
		if t.Timeout {
			st.timeouts[t.ID] = t
		}
	}
	for _, id := range a.Stop {
		delete(st.timeouts, id)
	}
	return a, st.record(a, e), nil
}

// began marks the step of a task whose job a worker took running, and
// reports its node_started event. A task that ended, or began already (its
// job was taken again after its worker was presumed dead), changes
// nothing.
func (st *state) began(e *event) (*engine.Actions, []*engine.StepRecord, error) {
	a := &engine.Actions{}
	t := st.run.Task(e.Task)
	if t == nil || st.begun[e.Task] {
		return a, nil, nil
	}
	st.begun[e.Task] = true
	rec := st.steps[[2]int{t.Node.Index, t.Visit}]
	if rec == nil {
		return a, nil, nil
	}
	rec.Status = engine.StatusRunning
	if rec.StartedAt == nil {
		s := e.Started
		rec.StartedAt = &s
	}
	if e.RanOn != nil {
		p := *e.RanOn
		rec.RanOn = &p
	}
	var data map[string]any
	if t.Attempt > 1 {
		data = map[string]any{"attempt": t.Attempt}
	}
	a.Events = append(a.Events, engine.Event{Type: engine.EventNodeStarted, Node: t.Node.ID, Visit: t.Visit, Iteration: t.Iteration, Data: data})
	return a, []*engine.StepRecord{rec}, nil
}

// unbegan puts the step of a task whose node a stopping worker stopped
// back to pending.
func (st *state) unbegan(e *event) (*engine.Actions, []*engine.StepRecord, error) {
	a := &engine.Actions{}
	t := st.run.Task(e.Task)
	if t == nil || !st.begun[e.Task] {
		return a, nil, nil
	}
	delete(st.begun, e.Task)
	rec := st.steps[[2]int{t.Node.Index, t.Visit}]
	if rec == nil {
		return a, nil, nil
	}
	rec.Status = engine.StatusPending
	rec.FinishedAt = nil // it waited for a child run
	rec.RanOn = nil      // the worker that takes its job again says where
	return a, []*engine.StepRecord{rec}, nil
}

// waiting marks the step of a begun task waiting: its node waits for a
// child run, as the local driver marks it (engine's runState.waiting).
func (st *state) waiting(e *event) (*engine.Actions, []*engine.StepRecord, error) {
	a := &engine.Actions{}
	t := st.run.Task(e.Task)
	if t == nil || !st.begun[e.Task] {
		return a, nil, nil
	}
	rec := st.steps[[2]int{t.Node.Index, t.Visit}]
	if rec == nil {
		return a, nil, nil
	}
	rec.Status = engine.StatusWaiting
	if rec.StartedAt == nil {
		s := e.At
		rec.StartedAt = &s
	}
	f := e.At
	rec.FinishedAt = &f
	rec.DurationMS = f.Sub(*rec.StartedAt).Milliseconds()
	return a, []*engine.StepRecord{rec}, nil
}

// fireAt is when a timer set at `at` fires.
func (st *state) fireAt(t engine.Timer, at time.Time) time.Time {
	if t.Hold {
		return st.wakeAt[[2]int{t.Index, t.Visit}]
	}
	return at.Add(t.Delay)
}

// late reports whether a signal sent at `sent` for a waiting step came
// after the step's timeout.
func (st *state) late(nodeID string, visit int, sent time.Time) bool {
	for _, t := range st.timeouts {
		if st.env.plan.Nodes[t.Index].ID == nodeID && t.Visit == visit {
			return sent.After(st.wakeAt[[2]int{t.Index, t.Visit}])
		}
	}
	return false
}

// awaiting reports whether a step waits for a signal.
// nodeID is the signal's name (engine.Await.Signal).
func (st *state) awaiting(nodeID string, visit int) bool {
	for _, aw := range st.run.Awaiting() {
		if aw.Signal == nodeID && aw.Visit == visit {
			return true
		}
	}
	return false
}

// record applies the step updates of a to the step records, as the local
// driver does (engine's recordStep), with the event's time.
func (st *state) record(a *engine.Actions, e *event) []*engine.StepRecord {
	var changed []*engine.StepRecord
	for _, su := range a.Steps {
		key := [2]int{su.Index, su.Visit}
		rec, ok := st.steps[key]
		if !ok {
			rec = &engine.StepRecord{StepOrder: len(st.order) + 1, Node: su.Node, Type: st.env.plan.Nodes[su.Index].Type,
				Visit: su.Visit, Iteration: su.Iteration}
			st.steps[key] = rec
			st.order = append(st.order, rec)
		}
		// A released task's job waits in the queue: the worker that takes
		// it marks its step running (Driver.began). Secrets are masked as
		// the step is written (durable.RedactStep).
		o := engine.StepOptions{Pending: true, Place: st.env.place}
		if w, ok := st.wakeAt[key]; ok {
			o.WakeAt = &w
		}
		var end *engine.StepEnd
		if e.Kind == kindFinished && su.TaskID == e.Task {
			end = &engine.StepEnd{Started: e.Started, At: e.At, Outcome: e.outcome(), Params: e.Params, Hash: e.Hash}
		}
		engine.ApplyStep(rec, su, e.At, end, o)
		changed = append(changed, rec)
	}
	return changed
}
