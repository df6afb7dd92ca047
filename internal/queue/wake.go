package queue

import (
	"context"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// River makes a scheduled job available only when its scheduler, run by
// the leader every 5 s (not configurable), next looks: a timer — a retry's
// backoff, a wait of a few seconds — fired up to 5 s late. The process
// that inserts a timer job therefore also keeps a timer of its own for
// it; when that fires and the job is still scheduled, the job is
// cancelled and the same timer inserted as an available job, which the
// workers are told of at once. When the process is gone, River's
// scheduler still fires the timer. A timer that fires twice (the job was
// promoted meanwhile) is applied once: the run ignores a timer it no
// longer has.

// maxLocalWake bounds the timers a process keeps itself: a longer one can
// be 5 s late.
const maxLocalWake = 15 * time.Minute

// pendingWake is a timer job of a write: its index in write.jobs.
type pendingWake struct {
	job   int
	args  TimerArgs
	delay time.Duration
}

// wake is a timer job inserted in a transaction, to make available after
// delay once the transaction committed.
type wake struct {
	id    int64
	args  TimerArgs
	delay time.Duration
}

// inserted turns the pending wakes of w into wakes, with the ids of the
// jobs inserted: ids[k] is the id of w.jobs[at[k]].
func (w *write) inserted(ids []int64, at []int) {
	if len(w.pending) == 0 {
		return
	}
	byJob := make(map[int]int64, len(at))
	for k, i := range at {
		byJob[i] = ids[k]
	}
	for _, p := range w.pending {
		if id := byJob[p.job]; id != 0 {
			w.wakes = append(w.wakes, wake{id: id, args: p.args, delay: p.delay})
		}
	}
}

// committed turns the pending wakes of w into wakes once the
// transaction that inserted its jobs with its COMMIT
// committed; without their ids (none came back) River's scheduler makes
// the timers available when due, later than a wake would.
func (w *write) committed() {
	if w.jobIDs != nil && len(*w.jobIDs) == w.jobsAll {
		w.inserted((*w.jobIDs)[w.jobsFrom:w.jobsFrom+len(w.jobsAt)], w.jobsAt)
	}
}

// wakeLater starts a timer per wake; call it after the transaction that
// inserted their jobs committed.
func (d *Driver) wakeLater(ws []wake) {
	if len(ws) == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.wakes == nil {
		d.wakes = map[int64]func() bool{}
	}
	for _, w := range ws {
		d.wakes[w.id] = d.cfg.Clock.AfterFunc(w.delay, func() {
			d.mu.Lock()
			delete(d.wakes, w.id)
			d.mu.Unlock()
			d.wakeNow(w)
		})
	}
}

// stopWakes stops the timers not yet fired: River's scheduler fires
// their jobs.
func (d *Driver) stopWakes() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, stop := range d.wakes {
		stop()
		delete(d.wakes, id)
	}
}

// wakeNow makes a timer job that is still scheduled available now.
func (d *Driver) wakeNow(w wake) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	job, err := d.client.JobGet(ctx, w.id)
	if err != nil || job.State != rivertype.JobStateScheduled {
		return // fired already, or the database is out of reach: River's scheduler will fire it
	}
	tx, err := d.cfg.Store.Pool().Begin(ctx)
	if err != nil {
		return
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := d.client.JobCancelTx(ctx, tx, w.id); err != nil {
		return
	}
	if _, err := d.client.InsertTx(ctx, tx, w.args, &river.InsertOpts{MaxAttempts: maxJobAttempts}); err != nil {
		return
	}
	_ = tx.Commit(ctx)
}
