package durable

import "github.com/skeinhq/skein/internal/engine"

// Tee sends every record to several recorders, in order.
type Tee []engine.Recorder

func (t Tee) Flush() error {
	var first error
	for _, r := range t {
		if f, ok := r.(engine.Flusher); ok {
			if err := f.Flush(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

func (t Tee) Step(rec *engine.StepRecord) error {
	for _, r := range t {
		if err := r.Step(rec); err != nil {
			return err
		}
	}
	return nil
}

func (t Tee) Event(ev engine.TimedEvent) error {
	for _, r := range t {
		if err := r.Event(ev); err != nil {
			return err
		}
	}
	return nil
}
