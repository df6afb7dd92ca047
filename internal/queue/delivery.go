package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/skeinhq/skein/internal/store"
)

// Deliveries of queued runs (the workflow's delivery: block). The
// transaction that records a run's end also records the delivery it owes
// (a row of the store's deliveries table, held with DeliveryToken) and
// inserts its job: a worker makes one attempt per job, and a failed
// attempt that is to be retried snoozes the job until the next is due. The
// attempts made and when the next is due are in the row, so a job River
// gives again (its worker died) goes on from there.

// DeliveryArgs is the job of a queued run's delivery.
type DeliveryArgs struct {
	Run        string `json:"run"`
	Generation int    `json:"generation"`
}

// Kind is the River job kind.
func (DeliveryArgs) Kind() string { return "skein_delivery" }

// DeliveryToken is the owner token of a queued run's delivery: every job
// of it claims the delivery with it, so the next attempt, or the job River
// gives again after its worker died, takes it over; another process (a
// server going on with owed deliveries) waits for its lease to run out.
func DeliveryToken(runID string, generation int) string {
	return fmt.Sprintf("queue_%s_%d", runID, generation)
}

// deliveryLease is how long a delivery just owed is held for its first
// job.
const deliveryLease = time.Minute

type deliveryWorker struct {
	river.WorkerDefaults[DeliveryArgs]
	d *Driver
}

// Work makes the next attempt of a delivery, with Config.Deliver.
func (w *deliveryWorker) Work(ctx context.Context, job *river.Job[DeliveryArgs]) error {
	d := w.d
	if d.cfg.Deliver == nil {
		return river.JobCancel(errors.New("this worker does not deliver"))
	}
	run, err := d.readRun(ctx, job.Args.Run)
	if errors.Is(err, store.ErrNotFound) {
		return nil // pruned
	}
	if err != nil {
		return err
	}
	p, err := d.planOf(ctx, run)
	if err != nil {
		return err
	}
	next, err := d.cfg.Deliver(ctx, run, job.Args.Generation, p.w)
	var owned *store.OwnedError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil // delivered by another
	case errors.As(err, &owned):
		return river.JobSnooze(max(time.Until(owned.LeaseUntil), time.Second))
	case err != nil:
		return err
	case next > 0:
		return river.JobSnooze(next)
	}
	return nil
}

// Timeout: an attempt has the delivery's own timeout.
func (w *deliveryWorker) Timeout(*river.Job[DeliveryArgs]) time.Duration { return -1 }

// oweDelivery adds to w, whose run ends with fin, the delivery the run
// owes and its job, when its workflow delivers for fin's status.
func (d *Driver) oweDelivery(w *write, fin *store.Run) {
	env := w.st.env
	if env.run.ParentID != "" || !env.w.Delivery.Delivers(string(fin.Status)) {
		return
	}
	gen := max(env.run.Generation, 1)
	w.log.Queue(`INSERT INTO deliveries (run_id, generation, owner_token, lease_until)
		VALUES ($1, $2, $3, now() + $4::float8 * interval '1 microsecond') ON CONFLICT (run_id, generation) DO NOTHING`,
		env.id, gen, DeliveryToken(env.id, gen), float64(deliveryLease.Microseconds()))
	w.jobs = append(w.jobs, river.InsertManyParams{Args: DeliveryArgs{Run: env.id, Generation: gen},
		InsertOpts: &river.InsertOpts{Queue: DefaultQueue, MaxAttempts: maxJobAttempts}})
}
