package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/skeinhq/skein/internal/store"
)

// Owed is a delivery a dead owner left, and its run.
type Owed struct {
	Delivery *store.Delivery
	Run      *store.Run
}

// Owed returns the deliveries whose owner is gone — live reports whether
// an owner is alive (durable.LiveOwner) — with their runs.
func (r *Runs) Owed(ctx context.Context, live func(store.Owner, bool) bool) ([]Owed, error) {
	ds, err := r.Store.Deliveries(ctx)
	if err != nil {
		return nil, err
	}
	var out []Owed
	for _, d := range ds {
		if live(d.Owner, d.LeaseExpired) {
			continue
		}
		run, err := r.Store.Run(ctx, d.RunID)
		if err != nil {
			continue
		}
		out = append(out, Owed{Delivery: d, Run: run})
	}
	return out, nil
}

// GoOn claims the delivery of j.Run's generation for j.Hold (taking it
// from takeover, a dead owner's token) and goes on with it from where it
// is (Deliver): the attempts made are the more of the deliveries table's
// and the run's events. A delivery whose run no longer delivers (resumed
// since, or its workflow's delivery does not list its status) is dropped.
// With j.Once it makes one attempt, and returns when the next is due (0:
// it ended). secrets and payload give the job's Secrets and Payload, from
// the run's steps.
func (r *Runs) GoOn(ctx context.Context, j Job, generation int, takeover string,
	secrets func() (map[string]string, error), payload func([]*store.Step) map[string]any) (time.Duration, error) {
	run, w := j.Run, j.Workflow
	claimed, err := r.Store.ClaimDelivery(ctx, run.ID, generation, j.Hold, HoldFor(w.Delivery), takeover)
	if err != nil {
		return 0, err
	}
	if run.Generation != generation || run.FinishedAt == nil || !w.Delivery.Delivers(string(run.Status)) {
		return 0, r.Store.EndDelivery(ctx, run.ID, generation, j.Hold.Token)
	}
	if j.Secrets, err = secrets(); err != nil {
		return 0, err
	}
	hist, err := r.Store.StepHistory(ctx, run.ID)
	if err != nil {
		return 0, err
	}
	// An attempt is recorded as an event, then in the deliveries table: a
	// process killed between the two made one attempt more than the table
	// says, and the numbers go on from the events.
	made, err := r.AttemptsRecorded(ctx, run.ID)
	if err != nil {
		return 0, err
	}
	j.Made = max(claimed.Attempts, made)
	j.Wait = max(claimed.NextAt.Sub(r.Clock.Now()), 0)
	if j.Once && j.Wait > 0 {
		return j.Wait, nil // not due yet
	}
	if j.Made > 0 && j.Note != nil {
		j.Note("detail", fmt.Sprintf("going on with the delivery of run %s after %d attempt(s)", run.ID, j.Made))
	}
	j.Inputs, j.Payload = run.Inputs, payload(hist)
	return r.Deliver(ctx, j), nil
}
