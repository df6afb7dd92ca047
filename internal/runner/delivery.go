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
	j.Client = httpkind.Policy{DenyPrivate: o.DenyPrivate}.Client()
	j.Hard, j.Leave = o.Hard, o.Leave
	j.Note = func(kind, text string) { r.note(o, kind, "%s", text) }
	return (&delivery.Runs{Store: r.st, Clock: r.clock}).Deliver(ctx, j)
}

// OwedDelivery is a delivery a dead owner left, and its run.
type OwedDelivery struct {
	Delivery *store.Delivery
	Run      *store.Run
}

// OwedDeliveries returns the deliveries whose owner is gone — its lease
// ran out, or it was a process of this host that no longer exists — with
// their runs, for Redeliver.
func (r *Runner) OwedDeliveries(ctx context.Context) ([]OwedDelivery, error) {
	ds, err := r.st.Deliveries(ctx)
	if err != nil {
		return nil, err
	}
	var out []OwedDelivery
	for _, d := range ds {
		if live, _ := r.liveOwner(&store.Run{Owner: d.Owner, LeaseExpired: d.LeaseExpired}); live {
			continue
		}
		run, err := r.st.Run(ctx, d.RunID)
		if err != nil {
			continue
		}
		out = append(out, OwedDelivery{Delivery: d, Run: run})
	}
	return out, nil
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
	if live, _ := r.liveOwner(&store.Run{Owner: d.Owner, LeaseExpired: d.LeaseExpired}); !live {
		takeover = d.Owner.Token
	}
	_, err := r.goOnDelivering(ctx, od.Run, d.Generation, w, o, r.newOwner(), takeover, false)
	return err
}

// goOnDelivering claims the delivery of run's generation for hold, and
// goes on with it from where it is (deliver); with once, it makes one
// attempt, and returns when the next is due (0: it ended).
func (r *Runner) goOnDelivering(ctx context.Context, run *store.Run, generation int, w *workflow.Workflow, o Options, hold store.Owner, takeover string, once bool) (time.Duration, error) {
	claimed, err := r.st.ClaimDelivery(ctx, run.ID, generation, hold, delivery.HoldFor(w.Delivery), takeover)
	if err != nil {
		return 0, err
	}
	if run.Generation != generation || run.FinishedAt == nil || !w.Delivery.Delivers(string(run.Status)) {
		return 0, r.st.EndDelivery(ctx, run.ID, generation, hold.Token)
	}
	secrets, err := resolveSecrets(w, r.cfg.LookupEnv, o.SecretsFile)
	if err != nil {
		return 0, err
	}
	hist, err := r.st.StepHistory(ctx, run.ID)
	if err != nil {
		return 0, err
	}
	// An attempt is recorded as an event, then in the deliveries table: a
	// process killed between the two made one attempt more than the table
	// says, and the numbers go on from the events.
	made, err := (&delivery.Runs{Store: r.st, Clock: r.clock}).AttemptsRecorded(ctx, run.ID)
	if err != nil {
		return 0, err
	}
	claimed.Attempts = max(claimed.Attempts, made)
	wait := max(claimed.NextAt.Sub(r.clock.Now()), 0)
	if once && wait > 0 {
		return wait, nil // not due yet
	}
	if claimed.Attempts > 0 {
		r.note(o, "detail", "going on with the delivery of run %s after %d attempt(s)", run.ID, claimed.Attempts)
	}
	return r.deliver(ctx, delivery.Job{Workflow: w, Run: run, Inputs: run.Inputs, Payload: durable.TriggerPayload(r.cfg.Registry, hist, run.Trigger),
		Secrets: secrets, Hold: hold, Made: claimed.Attempts, Wait: wait, Once: once}, o), nil
}

// note tells the execution's observer, if any, a line about the run.
func (r *Runner) note(o Options, kind, format string, args ...any) {
	if o.Observer != nil {
		o.Observer.Note(Note{Kind: kind, Text: fmt.Sprintf(format, args...)})
	}
}
