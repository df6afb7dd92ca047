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
	kept    []kept // in the order they came
	// out serialises the calls: commits call back from one goroutine,
	// but the final flush may come from another.
	out sync.Mutex
}

// Step keeps a step for OnStep, but for a step only planned (Planned):
// it holds nothing an observer shows — a display and the telemetry look at
// the steps released — and a run's start plans every step.
func (b *Deferred) Step(rec *engine.StepRecord) error {
	if Planned(rec) {
		return nil
	}
	b.mu.Lock()
	b.kept = append(b.kept, kept{step: *rec, isStep: true})
	b.mu.Unlock()
	return nil
}

// kept is a step (a copy: the engine goes on changing its own) or an
// event waiting for its commit. Kept as values in one slice, a run's
// records cost no allocation each.
type kept struct {
	step   engine.StepRecord
	event  engine.TimedEvent
	isStep bool
}

// Event keeps an event, masked, for OnEvent.
func (b *Deferred) Event(ev engine.TimedEvent) error {
	ev.Data, _ = b.Redact.Map(ev.Data)
	b.mu.Lock()
	b.kept = append(b.kept, kept{event: ev})
	b.mu.Unlock()
	return nil
}

// Flush hands what was kept to OnStep and OnEvent once it is committed.
func (b *Deferred) Flush() error {
	b.mu.Lock()
	ks := b.kept
	if len(ks) == 0 {
		b.mu.Unlock()
		return nil
	}
	b.kept = make([]kept, 0, len(ks)) // the next flush tends to hold as many
	b.mu.Unlock()
	b.Later(func() {
		b.out.Lock()
		defer b.out.Unlock()
		for i := range ks {
			if ks[i].isStep {
				b.OnStep(ks[i].step)
			} else {
				b.OnEvent(ks[i].event)
			}
		}
	})
	return nil
}
