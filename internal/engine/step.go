package engine

import (
	"os"
	"sync"
	"time"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/engine/scheduler"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/redact"
)

// StepEnd is how the task's own attempt ended, for the step update the
// scheduler made of it (Finished).
type StepEnd struct {
	// Started is when the attempt started, where the driver knows it
	// better than the record (a queue's worker); zero keeps the record's.
	// At is when it ended.
	Started, At time.Time
	Outcome     Outcome
	// Params are the parameters it ran with (nil: those of the record).
	Params                 map[string]any
	Hash                   string
	Cached, Pinned, Mocked bool
}

// StepOptions are what a driver's step records differ in.
type StepOptions struct {
	// Pending records a released task's step pending: it waits to start,
	// for a slot of the local driver or for a worker to take its job. It
	// is marked running when it starts.
	Pending bool
	// WakeAt is when a step that holds its successors (a wait, a delay, a
	// signal's timeout) lets them go on; nil for other steps.
	WakeAt *time.Time
	// Redactor masks the secrets' values in what is recorded, and marks a
	// step whose output or directives held one (StepRecord.Masked). Nil
	// records them as they are: the queue masks a step as it writes it
	// (durable.RedactStep).
	Redactor *redact.Redactor
	// Blobs keeps the big values the task's own Keep did not: an output
	// the scheduler built (a foreach's list of results) and a big value
	// that held a secret (masked here, kept whole in memory for the run).
	// A failure is left to the recorder. Nil keeps none.
	Blobs *blob.Store
	// Place is where the step runs (Here for a local run), recorded as
	// its RanOn once it starts, shared by the records of the place's
	// steps: it must not change. Nil records none.
	Place *record.Place
}

// Here is this process's place: its host name and process id.
var Here = sync.OnceValue(func() *record.Place {
	host, _ := os.Hostname()
	return &record.Place{Host: host, PID: os.Getpid()}
})

// ApplyStep applies a scheduler's step update to the step's record, as
// both drivers record their steps: now is the time of the event that made
// it, end the task's own attempt when su is its end (nil otherwise).
func ApplyStep(rec *StepRecord, su StepUpdate, now time.Time, end *StepEnd, o StepOptions) {
	if su.Status == StatusRunning && o.Pending {
		su.Status = StatusPending
		rec.FinishedAt = nil
	}
	neverStarted := (rec.Status == "" || rec.Status == StatusPending) && (end == nil || end.Outcome.NotStarted)
	if su.Status == StatusCancelled && neverStarted {
		// Planned, then the run was cancelled before it started: it has
		// no times and ran nowhere.
		rec.Status, rec.Error = StatusCancelled, nil
		return
	}
	rec.Status = su.Status
	rec.Retry = su.Retry
	rec.SkipReason = su.SkipReason
	rec.TakenHandle = su.TakenHandle
	switch su.Status {
	case StatusRunning, StatusSuccess, StatusFailed, StatusWaiting, StatusCancelled:
		if rec.RanOn == nil && o.Place != nil {
			rec.RanOn = o.Place
		}
	}
	if su.Loop != nil {
		rec.Loop = su.Loop
	}
	if su.Status != StatusRunning {
		rec.ProcessGroup = 0 // the attempt that started it is over
	}
	if su.Attempt > rec.Attempts {
		rec.Attempts = su.Attempt
	}
	mask := func(m map[string]any) (map[string]any, bool) {
		if o.Redactor == nil {
			return m, false
		}
		return o.Redactor.Map(m)
	}
	switch su.Status {
	case StatusRunning:
		if rec.StartedAt == nil {
			t := now
			rec.StartedAt = &t
		}
		rec.FinishedAt = nil
	case StatusSkipped:
		rec.Error = su.Error // none: SkipReason says why it did not run
	case StatusSuccess, StatusFailed, StatusCancelled, StatusWaiting:
		t := now
		directivesMasked, paramsMasked := false, false
		if end != nil {
			t = end.At
			if end.Params != nil {
				rec.Params, paramsMasked = mask(end.Params)
			}
			rec.ConfigHash = end.Hash
			rec.Cached, rec.Pinned, rec.Mocked = end.Cached, end.Pinned, end.Mocked
			// Directives are reused with the output on resume: a masked
			// _state_patch marks the step like a masked output.
			rec.Directives, directivesMasked = mask(end.Outcome.Directives)
			rec.Tokens, rec.CostUSD = Usage(end.Outcome)
			rec.Confidence = nil
			if c, ok := scheduler.ConfidenceOf(end.Outcome.Directives); ok && end.Outcome.Err == nil {
				rec.Confidence = &c
			}
			if !end.Started.IsZero() {
				s := end.Started
				rec.StartedAt = &s
			}
		}
		if rec.StartedAt == nil {
			s := t
			rec.StartedAt = &s
		}
		if o.WakeAt != nil && su.Status == StatusWaiting {
			w := *o.WakeAt
			rec.WakeAt = &w
		}
		rec.FinishedAt = &t
		rec.DurationMS = t.Sub(*rec.StartedAt).Milliseconds()
		if su.Status == StatusCancelled && end == nil {
			// Stopped by a cancel, not by its own attempt's end: it keeps
			// no directives it waited with (a wait's _await).
			rec.Directives = nil
		}
		if su.Output != nil || su.Status == StatusCancelled {
			var masked bool
			rec.Output, masked = mask(su.Output)
			if o.Redactor != nil {
				rec.Masked = masked
			}
		}
		rec.Masked = rec.Masked || directivesMasked
		if o.Blobs != nil && (end == nil && su.Output != nil || rec.Masked || paramsMasked) {
			if out, _, err := o.Blobs.Spill(rec.Output, blob.InlineLimit); err == nil {
				rec.Output = out
			}
			if p, _, err := o.Blobs.Spill(rec.Params, blob.InlineLimit); err == nil {
				rec.Params = p
			}
		}
		if su.Error == nil {
			if su.Status == StatusSuccess {
				rec.Error = nil
			}
		} else if o.Redactor != nil {
			rec.Error, _ = o.Redactor.Error(su.Error)
		} else {
			rec.Error = su.Error
		}
		rec.Error = record.ErrorContext(rec.Node, rec.Error)
	}
}
