package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/delivery"
	"github.com/skeinhq/skein/internal/engine"
	httpkind "github.com/skeinhq/skein/internal/nodes/http"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Events of a run's delivery (the workflow's delivery: block), recorded on
// the run after it ended.
const (
	EventDeliveryAttempt   = "delivery_attempt"
	EventDeliverySucceeded = "delivery_succeeded"
	EventDeliveryFailed    = "delivery_failed"
)

// DeliveryBody is what a delivery POSTs: a Standard Webhooks payload whose
// type is run.<status> and whose data is the run without its steps.
type DeliveryBody struct {
	Type      string       `json:"type"`
	Timestamp time.Time    `json:"timestamp"`
	Data      DeliveryData `json:"data"`
}

// DeliveryData is the run a delivery is about: its summary and outputs
// (secret values masked).
type DeliveryData struct {
	ExecutionID string         `json:"execution_id"`
	Workflow    string         `json:"workflow"`
	Status      string         `json:"status"`
	Trigger     string         `json:"trigger,omitempty"`
	Generation  int            `json:"generation"`
	Outputs     map[string]any `json:"outputs"`
	Error       *node.Error    `json:"error"`
	StartedAt   time.Time      `json:"started_at"`
	FinishedAt  *time.Time     `json:"finished_at"`
	DurationMS  int64          `json:"duration_ms"`
	Tokens      int            `json:"tokens"`
	CostUSD     float64        `json:"cost_usd"`
}

// deliveryHold is how long past an attempt's due time a delivery stays
// held by its owner: the attempt's timeout and a margin. A process that
// dies holding it loses it then, or at once to a process of its host.
func deliveryHold(d *workflow.Delivery) time.Duration { return d.Timeout + 30*time.Second }

// oweDelivery records, before a run's final record, that the run's
// execution owes its delivery, held by a fresh owner of this process. It
// returns that owner; the zero Owner when nothing is owed, or the record
// failed (the delivery is then made, but not durably).
func (r *Runner) oweDelivery(ctx context.Context, w *workflow.Workflow, run *store.Run, o Options) store.Owner {
	if !w.Delivery.Delivers(string(run.Status)) {
		return store.Owner{}
	}
	hold := r.newOwner()
	if err := r.st.OweDelivery(context.WithoutCancel(ctx), run.ID, run.Generation, hold, deliveryHold(w.Delivery)); err != nil {
		r.note(o, "problem", "recording the delivery of run %s: %v", run.ID, err)
		return store.Owner{}
	}
	return hold
}

// deliver posts a run that ended to its workflow's delivery URL and
// records every attempt as an event of the run. hold is the owner of the
// run's owed delivery (store.Delivery), which it keeps up to date and
// ends; from says where it goes on (attempts made before, by a process
// that died or an earlier job, and how long until the next is due). It
// returns when the
// receiver took it, refused it, the retries ran out, another process took
// the delivery over, or the execution was told to stop at once (Hard) or
// leave (Leave: a server shutting down) — then the delivery stays owed,
// for the next process to go on with. With from.once it makes one attempt
// and returns, when another is due, how long until it is (else 0).
func (r *Runner) deliver(ctx context.Context, w *workflow.Workflow, run *store.Run, j job, secrets map[string]string, o Options, hold store.Owner, from goOn) time.Duration {
	d := w.Delivery
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		select {
		case <-o.Hard:
			stop()
		case <-o.Leave:
			stop()
		case <-ctx.Done():
		}
	}()
	redact := engine.Redactor(secrets)
	record := func(typ string, data map[string]any) {
		if err := r.st.AppendEvents(ctx, run.ID, []store.Event{{Time: r.clock.Now(), Type: typ, Data: data}}); err != nil {
			r.note(o, "problem", "recording the delivery of run %s: %v", run.ID, err)
		}
	}
	lost := false
	end := func() {
		if hold.Token == "" || lost {
			return
		}
		if err := r.st.EndDelivery(ctx, run.ID, run.Generation, hold.Token); err != nil {
			r.note(o, "problem", "recording the end of the delivery of run %s: %v", run.ID, err)
		}
	}
	target, secret, err := deliveryTarget(d, run, j, secrets)
	if err != nil {
		record(EventDeliveryFailed, map[string]any{"attempts": from.made, "error": redact(err.Error())})
		r.note(o, "problem", "delivery: %s", redact(err.Error()))
		end()
		return 0
	}
	shown := redact(target)
	fin := run.FinishedAt
	data := DeliveryData{ExecutionID: run.ID, Workflow: run.Workflow, Status: string(run.Status), Trigger: run.Trigger, Generation: run.Generation,
		Outputs: outputsOrEmpty(node.RedactValue(run.Outputs, redact)), Error: run.Error, StartedAt: run.StartedAt, FinishedAt: fin,
		Tokens: run.Tokens, CostUSD: run.CostUSD}
	if fin != nil {
		data.DurationMS = fin.Sub(run.StartedAt).Milliseconds()
	}
	body, err := json.Marshal(DeliveryBody{Type: "run." + string(run.Status), Timestamp: r.clock.Now().UTC(), Data: data})
	if err != nil {
		record(EventDeliveryFailed, map[string]any{"attempts": from.made, "error": "encoding the delivery: " + err.Error()})
		end()
		return 0
	}
	msg := delivery.Message{ID: "skein_" + run.ID + "_" + strconv.Itoa(run.Generation), Body: body}
	sender := &delivery.Sender{Client: httpkind.Policy{DenyPrivate: o.DenyPrivate}.Client()}
	last := delivery.Attempt{N: from.made}
	policy := delivery.Policy{Retries: d.Retries, Backoff: d.RetryBackoff, Timeout: d.Timeout, Made: from.made, Wait: from.wait, Once: from.once}
	err = sender.Send(ctx, target, secret, msg, policy,
		func(a delivery.Attempt) {
			last = a
			ev := map[string]any{"attempt": a.N, "url": shown, "duration_ms": a.Duration.Milliseconds()}
			if a.Status != 0 {
				ev["status"] = a.Status
			}
			if a.Err != nil {
				ev["error"] = redact(a.Err.Error())
			}
			if a.Retry > 0 {
				ev["retry_in_ms"] = a.Retry.Milliseconds()
				r.note(o, "detail", "delivery to %s: attempt %d: %s; again in %s", shown, a.N, redact(delivery.Describe(a)), a.Retry.Round(time.Millisecond))
			}
			record(EventDeliveryAttempt, ev)
			if hold.Token != "" && a.Retry > 0 {
				err := r.st.DeliveryAttempted(ctx, run.ID, run.Generation, hold.Token, a.N, r.clock.Now().Add(a.Retry), deliveryHold(d))
				if errors.Is(err, store.ErrLeaseLost) {
					lost = true // another process goes on with it
					stop()
				} else if err != nil {
					r.note(o, "problem", "recording the delivery of run %s: %v", run.ID, err)
				}
			}
		})
	var later *delivery.LaterError
	switch {
	case errors.As(err, &later) && !lost:
		return later.Attempt.Retry
	case lost:
		r.note(o, "detail", "the delivery of run %s was taken over by another process", run.ID)
	case err == nil:
		record(EventDeliverySucceeded, map[string]any{"attempts": last.N, "status": last.Status, "url": shown})
		r.note(o, "detail", "delivered to %s (%s)", shown, delivery.Describe(last))
		end()
	case ctx.Err() != nil && hold.Token != "":
		r.note(o, "detail", "the delivery of run %s stopped after %d attempt(s); it stays owed, and the next skein serve on this store goes on with it", run.ID, last.N)
	default:
		record(EventDeliveryFailed, map[string]any{"attempts": last.N, "error": redact(err.Error()), "url": shown})
		r.note(o, "problem", "delivery to %s failed: %s", shown, redact(err.Error()))
		end()
	}
	return 0
}

// goOn is where a delivery goes on: the attempts made before, the wait
// until the next is due, and whether to make only that one.
type goOn struct {
	made int
	wait time.Duration
	once bool
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
	claimed, err := r.st.ClaimDelivery(ctx, run.ID, generation, hold, deliveryHold(deliveryOf(w)), takeover)
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
	made, err := r.attemptsRecorded(ctx, run.ID)
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
	return r.deliver(ctx, w, run, job{w: w, inputs: run.Inputs, trigger: run.Trigger, payload: r.triggerPayload(hist, run.Trigger), runID: run.ID},
		secrets, o, hold, goOn{made: claimed.Attempts, wait: wait, once: once}), nil
}

// deliveryOf is w's delivery, or the defaults when it has none.
func deliveryOf(w *workflow.Workflow) *workflow.Delivery {
	if w.Delivery != nil {
		return w.Delivery
	}
	return &workflow.Delivery{}
}

// deliveryTarget renders the delivery's URL and secret; they may read the
// run's inputs, its secrets, execution and trigger.
func deliveryTarget(d *workflow.Delivery, run *store.Run, j job, secrets map[string]string) (string, string, error) {
	scope := &expr.Scope{Inputs: j.inputs, Trigger: j.payload, Secrets: make(map[string]any, len(secrets)),
		Execution: map[string]any{"id": run.ID, "workflow": run.Workflow, "started_at": run.StartedAt.UTC().Format(time.RFC3339)}}
	if scope.Trigger == nil {
		scope.Trigger = map[string]any{}
	}
	for k, v := range secrets {
		scope.Secrets[k] = v
	}
	render := func(what, s string) (string, error) {
		if !expr.HasTemplate(s) {
			return s, nil
		}
		v, err := expr.RenderValue(s, scope)
		if err != nil {
			return "", fmt.Errorf("delivery %s: %w", what, err)
		}
		return node.Text(v)
	}
	target, err := render("url", d.URL)
	if err != nil {
		return "", "", err
	}
	if u, err := url.Parse(target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", fmt.Errorf("delivery url %q is not an http or https URL", target)
	}
	secret, err := render("secret", d.Secret)
	return target, secret, err
}

func outputsOrEmpty(v any) map[string]any {
	if m, ok := v.(map[string]any); ok && m != nil {
		return m
	}
	return map[string]any{}
}

// note tells the execution's observer, if any, a line about the run.
func (r *Runner) note(o Options, kind, format string, args ...any) {
	if o.Observer != nil {
		o.Observer.Note(Note{Kind: kind, Text: fmt.Sprintf(format, args...)})
	}
}

// attemptsRecorded is the number of the last delivery attempt recorded
// since the run's latest execution ended (0: none).
func (r *Runner) attemptsRecorded(ctx context.Context, runID string) (int, error) {
	evs, err := r.st.Events(ctx, runID, 0, 0)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ev := range evs {
		switch ev.Type {
		case string(engine.EventExecutionFinished):
			n = 0 // a resumed run owes a delivery of its own
		case EventDeliveryAttempt:
			switch a := ev.Data["attempt"].(type) {
			case int:
				n = max(n, a)
			case float64:
				n = max(n, int(a))
			case int64:
				n = max(n, int(a))
			}
		}
	}
	return n, nil
}
