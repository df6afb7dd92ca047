package durable

import (
	"sync"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/redact"
)

// Deferred is a recorder that hands a run's records to OnStep and
// OnEvent (a progress display) once they are committed: Later is the
// run's Recorder.AfterCommit. Events come from the engine and from the
// application (verdicts, repair warnings): their data is masked with
// Redact, the run's Redactor, here.
type Deferred struct {
	OnStep  func(engine.StepRecord)
	OnEvent func(engine.TimedEvent)
	Later   func(func())
	Redact  *redact.Redactor
	mu      sync.Mutex
	kept    *kept   // what waits for the next Flush
	spare   []*kept // handed over, emptied, for the next ones
	// sizes of the last flush: a new kept starts with room for as many
	// (a run's flushes tend to hold alike), not growing from nothing.
	lastSteps, lastEvents int
	// out serialises the calls: commits call back from one goroutine,
	// but the final flush may come from another.
	out sync.Mutex
}

// kept is what a flush hands over: copies of steps (the engine goes on
// changing its own) and events, and in what order they came. Steps and
// events each in a slice of their own, a record costs no allocation and
// no more room than its kind takes; once handed over, the slices are
// emptied and used again (spare), so a long run does not make new ones
// a flush at a time.
type kept struct {
	steps  []engine.StepRecord
	events []engine.TimedEvent
	isStep []bool // in the order they came: the next step, or the next event
}

// spares is the most emptied kept a Deferred holds for reuse. While the
// committer keeps up, a flush's kept comes back before the next is needed;
// while it lags, new ones are made (sized from the last flush), and a
// commit that catches up brings back all the flushes it groups at once:
// the spares keep them for the flushes to come (up to 64, ~7 KB each for
// a 16-task flush), not only 4 of them. With 4, a 10,000-item foreach
// made a new kept at nearly every flush, 10 MB of the 150 it allocated
// (BENCHMARKS.md, 2026-12-06).
const spares = 64

// Step keeps a step for OnStep, but for a step only planned (Planned):
// it holds nothing an observer shows — a display and the telemetry look at
// the steps released — and a run's start plans every step.
func (b *Deferred) Step(rec *engine.StepRecord) error {
	if Planned(rec) {
		return nil
	}
	b.mu.Lock()
	k := b.current()
	k.steps = append(k.steps, *rec)
	k.isStep = append(k.isStep, true)
	b.mu.Unlock()
	return nil
}

// Event keeps an event, masked, for OnEvent.
func (b *Deferred) Event(ev engine.TimedEvent) error {
	ev.Data, _ = b.Redact.Map(ev.Data)
	b.mu.Lock()
	k := b.current()
	k.events = append(k.events, ev)
	k.isStep = append(k.isStep, false)
	b.mu.Unlock()
	return nil
}

// current is what the next Flush hands over; b.mu is held.
func (b *Deferred) current() *kept {
	if b.kept == nil {
		if n := len(b.spare); n > 0 {
			b.kept, b.spare = b.spare[n-1], b.spare[:n-1]
		} else {
			b.kept = &kept{
				steps:  make([]engine.StepRecord, 0, b.lastSteps),
				events: make([]engine.TimedEvent, 0, b.lastEvents),
				isStep: make([]bool, 0, b.lastSteps+b.lastEvents),
			}
		}
	}
	return b.kept
}

// Flush hands what was kept to OnStep and OnEvent once it is committed.
func (b *Deferred) Flush() error {
	b.mu.Lock()
	k := b.kept
	if k == nil || len(k.isStep) == 0 {
		b.mu.Unlock()
		return nil
	}
	b.kept = nil
	b.lastSteps, b.lastEvents = len(k.steps), len(k.events)
	b.mu.Unlock()
	b.Later(func() {
		b.out.Lock()
		s, e := 0, 0
		for _, isStep := range k.isStep {
			if isStep {
				b.OnStep(k.steps[s])
				s++
			} else {
				b.OnEvent(k.events[e])
				e++
			}
		}
		b.out.Unlock()
		// Emptied, it holds nothing of the run's values.
		clear(k.steps)
		clear(k.events)
		k.steps, k.events, k.isStep = k.steps[:0], k.events[:0], k.isStep[:0]
		b.mu.Lock()
		if len(b.spare) < spares {
			b.spare = append(b.spare, k)
		}
		b.mu.Unlock()
	})
	return nil
}
