package durable

import (
	"time"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/internal/store"
)

// End ends an execution whose run ended: extra events are recorded, run
// takes res's outcome, rl and flush (the observer's, nil when none) are
// flushed and the lease stopped — no renewal may race the release. owe
// records the delivery the run owes before its final record, so that a
// process that dies between the two leaves it for the next. Once the
// final record commits, the run has no owner and its folder's run.json is
// doc of the run so ended, written while the final record commits and put
// in place once it did (runlog.Writer.Begin). It returns owe's hold,
// whether the final record committed, and
// the first error. A run whose final record failed stays owned until its
// lease runs out: then it is interrupted, and resumable (its folder keeps
// saying running, as the database does).
func (h *Host) End(run *store.Run, res *engine.Result, rec *Recorder, recs Tee, flush func(), rl *runlog.Writer, l *Lease,
	extra []engine.TimedEvent, owe func() store.Owner, doc func(ended *store.Run) any) (hold store.Owner, ended bool, err error) {
	for _, ev := range extra {
		_ = recs.Event(ev)
	}
	fin := res.FinishedAt
	run.Status, run.Outputs, run.Error, run.FinishedAt = res.Status, res.Outputs, res.Error, &fin
	run.Tokens, run.CostUSD = res.Tokens, res.CostUSD
	_ = rl.Flush() // written once rec.Finish commits it
	if flush != nil {
		flush()
	}
	l.Stop()
	hold = owe()
	done := *run
	done.Owner, done.LeaseUntil, done.LeaseExpired = store.Owner{}, time.Time{}, true
	if res.Dropped > 0 {
		// The document reads the steps the engine let go of from the
		// store: they are committed before it is written.
		if err := rec.Sync(); err != nil {
			return hold, false, err
		}
	}
	writing := rl.Begin(func() any { return doc(&done) })
	if err := rec.Finish(run); err != nil {
		writing.Abandon()
		return hold, false, err
	}
	run.Owner, run.LeaseUntil, run.LeaseExpired = store.Owner{}, time.Time{}, true
	return hold, true, writing.Finish()
}
