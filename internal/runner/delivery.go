package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/skeinhq/skein/internal/delivery"
	"github.com/skeinhq/skein/internal/durable"
	httpkind "github.com/skeinhq/skein/internal/nodes/http"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// oweDelivery records, before a run's final record, that the run's
// execution owes its delivery, held by a fresh owner of this process. It
// returns that owner; the zero Owner when nothing is owed, or the record
// failed (the delivery is then made, but not durably).
func (r *Runner) oweDelivery(ctx context.Context, w *workflow.Workflow, run *store.Run, o Options) store.Owner {
	if !w.Delivery.Delivers(string(run.Status)) {
		return store.Owner{}
	}
	hold := r.newOwner()
	if err := r.st.OweDelivery(context.WithoutCancel(ctx), run.ID, run.Generation, hold, delivery.HoldFor(w.Delivery)); err != nil {
		r.note(o, "problem", "recording the delivery of run %s: %v", run.ID, err)
		return store.Owner{}
	}
	return hold
}

// deliver posts a run that ended to its workflow's delivery URL
// (delivery.Runs.Deliver), held by hold, going on from job's attempts.
func (r *Runner) deliver(ctx context.Context, j delivery.Job, o Options) time.Duration {
	return r.deliveries().Deliver(ctx, r.deliveryJob(j, o))
}

func (r *Runner) deliveries() *delivery.Runs { return &delivery.Runs{Store: r.st, Clock: r.clock} }

// deliveryJob sets j's HTTP client, stops and notes from o.
func (r *Runner) deliveryJob(j delivery.Job, o Options) delivery.Job {
	j.Client = httpkind.Policy{DenyPrivate: o.DenyPrivate}.Client()
	j.Hard, j.Leave = o.Hard, o.Leave
	j.Note = func(kind, text string) { r.note(o, kind, "%s", text) }
	return j
}

// OwedDelivery is a delivery a dead owner left, and its run.
type OwedDelivery = delivery.Owed

// OwedDeliveries returns the deliveries whose owner is gone — its lease
// ran out, or it was a process of this host that no longer exists — with
// their runs, for Redeliver.
func (r *Runner) OwedDeliveries(ctx context.Context) ([]OwedDelivery, error) {
	return r.deliveries().Owed(ctx, r.liveDelivery)
}

func (r *Runner) liveDelivery(o store.Owner, expired bool) bool {
	return durable.LiveOwner(&store.Run{Owner: o, LeaseExpired: expired}, r.host, r.pid)
}

// Redeliver goes on with a delivery its owner left (OwedDeliveries), with
// w, the run's workflow: it claims the delivery (of two processes at
// once, one does; the other gets store.ErrOwned), waits until the next
// attempt is due and makes the attempts left, as deliver. A delivery whose
// run no longer delivers (it was resumed since, or w's delivery does not
// list its status) is dropped.
func (r *Runner) Redeliver(ctx context.Context, od OwedDelivery, w *workflow.Workflow, o Options) error {
	d := od.Delivery
	takeover := ""
	if !r.liveDelivery(d.Owner, d.LeaseExpired) {
		takeover = d.Owner.Token
	}
	_, err := r.goOnDelivering(ctx, od.Run, d.Generation, w, o, r.newOwner(), takeover, false)
	return err
}

// goOnDelivering goes on with the delivery of run's generation, held by
// hold (delivery.Runs.GoOn).
func (r *Runner) goOnDelivering(ctx context.Context, run *store.Run, generation int, w *workflow.Workflow, o Options, hold store.Owner, takeover string, once bool) (time.Duration, error) {
	return r.deliveries().GoOn(ctx, r.deliveryJob(delivery.Job{Workflow: w, Run: run, Hold: hold, Once: once}, o), generation, takeover,
		func() (map[string]string, error) { return resolveSecrets(w, r.cfg.LookupEnv, o.SecretsFile) },
		func(hist []*store.Step) map[string]any {
			return durable.TriggerPayload(r.cfg.Registry, hist, run.Trigger)
		})
}

// note tells the execution's observer, if any, a line about the run.
func (r *Runner) note(o Options, kind, format string, args ...any) {
	if o.Observer != nil {
		o.Observer.Note(Note{Kind: kind, Text: fmt.Sprintf(format, args...)})
	}
}
