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
	calls   []func()
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
	c := *rec
	b.mu.Lock()
	b.calls = append(b.calls, func() { b.OnStep(c) })
	b.mu.Unlock()
	return nil
}

// Event keeps an event, masked, for OnEvent.
func (b *Deferred) Event(ev engine.TimedEvent) error {
	ev.Data, _ = b.Redact.Map(ev.Data)
	b.mu.Lock()
	b.calls = append(b.calls, func() { b.OnEvent(ev) })
	b.mu.Unlock()
	return nil
}

// Flush hands what was kept to OnStep and OnEvent once it is committed.
func (b *Deferred) Flush() error {
	b.mu.Lock()
	calls := b.calls
	b.calls = nil
	b.mu.Unlock()
	if len(calls) == 0 {
		return nil
	}
	b.Later(func() {
		b.out.Lock()
		defer b.out.Unlock()
		for _, c := range calls {
			c()
		}
	})
	return nil
}
