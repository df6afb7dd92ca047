package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Events of a run's delivery (the workflow's delivery: block), recorded on
// the run after it ended.
const (
	EventAttempt   = "delivery_attempt"
	EventSucceeded = "delivery_succeeded"
	EventFailed    = "delivery_failed"
)

// Body is what the delivery of a run POSTs: a Standard Webhooks payload
// whose type is run.<status> and whose data is the run without its steps.
type Body struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      Data      `json:"data"`
}

// Data is the run a delivery is about: its summary and outputs
// (secret values masked).
type Data struct {
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

// HoldFor is how long past an attempt's due time a delivery stays held
// by its owner: the attempt's timeout and a margin. A process that dies
// holding it loses it then, or at once to a process of its host.
func HoldFor(d *workflow.Delivery) time.Duration {
	if d == nil {
		d = &workflow.Delivery{}
	}
	return d.Timeout + 30*time.Second
}

// Runs delivers the runs of one store, recording each attempt as an event
// of its run and the delivery owed in the store's deliveries.
type Runs struct {
	Store store.Store
	Clock clock.Clock
}

// Job is the delivery of one run that ended.
type Job struct {
	Workflow *workflow.Workflow
	Run      *store.Run
	// Inputs, Payload (what the trigger fired with) and Secrets are what
	// the delivery's url and secret templates read.
	Inputs  map[string]any
	Payload map[string]any
	Secrets map[string]string
	// Hold is the owner of the run's owed delivery (store.Delivery), kept
	// up to date and ended; the zero Owner when it is not recorded.
	Hold store.Owner
	// Made is how many attempts were made before (by a process that
	// died, or an earlier job), Wait how long until the next is due; Once
	// makes one attempt (see Policy).
	Made int
	Wait time.Duration
	Once bool
	// Client sends the attempts (the run's HTTP policy).
	Client *http.Client
	// Hard or Leave, when closed, stop the delivery: it stays owed.
	Hard, Leave <-chan struct{}
	// Note, when set, gets lines about the delivery for people.
	Note func(kind, text string)
}

// Deliver posts a run that ended to its workflow's delivery URL and
// records every attempt as an event of the run, going on from j.Made. It
// returns when the receiver took it, refused it, the retries ran out,
// another process took the delivery over, or the job was told to stop at
// once (Hard) or leave (Leave: a server shutting down) — then the delivery
// stays owed, for the next process to go on with. With j.Once it makes
// one attempt and returns, when another is due, how long until it is
// (else 0).
func (r *Runs) Deliver(ctx context.Context, j Job) time.Duration {
	d, run, hold := j.Workflow.Delivery, j.Run, j.Hold
	from := j
	note := func(kind, format string, args ...any) {
		if j.Note != nil {
			j.Note(kind, fmt.Sprintf(format, args...))
		}
	}
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		select {
		case <-j.Hard:
			stop()
		case <-j.Leave:
			stop()
		case <-ctx.Done():
		}
	}()
	mask := redact.New(j.Secrets).Func()
	record := func(typ string, data map[string]any) {
		if err := r.Store.AppendEvents(ctx, run.ID, []store.Event{{Time: r.Clock.Now(), Type: typ, Data: data}}); err != nil {
			note("problem", "recording the delivery of run %s: %v", run.ID, err)
		}
	}
	lost := false
	end := func() {
		if hold.Token == "" || lost {
			return
		}
		if err := r.Store.EndDelivery(ctx, run.ID, run.Generation, hold.Token); err != nil {
			note("problem", "recording the end of the delivery of run %s: %v", run.ID, err)
		}
	}
	target, secret, err := renderTarget(d, run, j.Inputs, j.Payload, j.Secrets)
	if err != nil {
		record(EventFailed, map[string]any{"attempts": from.Made, "error": mask(err.Error())})
		note("problem", "delivery: %s", mask(err.Error()))
		end()
		return 0
	}
	shown := mask(target)
	fin := run.FinishedAt
	data := Data{ExecutionID: run.ID, Workflow: run.Workflow, Status: string(run.Status), Trigger: run.Trigger, Generation: run.Generation,
		Outputs: outputsOrEmpty(node.RedactValue(run.Outputs, mask)), Error: run.Error, StartedAt: run.StartedAt, FinishedAt: fin,
		Tokens: run.Tokens, CostUSD: run.CostUSD}
	if fin != nil {
		data.DurationMS = fin.Sub(run.StartedAt).Milliseconds()
	}
	body, err := json.Marshal(Body{Type: "run." + string(run.Status), Timestamp: r.Clock.Now().UTC(), Data: data})
	if err != nil {
		record(EventFailed, map[string]any{"attempts": from.Made, "error": "encoding the delivery: " + err.Error()})
		end()
		return 0
	}
	msg := Message{ID: "skein_" + run.ID + "_" + strconv.Itoa(run.Generation), Body: body}
	sender := &Sender{Client: j.Client}
	last := Attempt{N: from.Made}
	policy := Policy{Retries: d.Retries, Backoff: d.RetryBackoff, Timeout: d.Timeout, Made: from.Made, Wait: from.Wait, Once: from.Once}
	err = sender.Send(ctx, target, secret, msg, policy,
		func(a Attempt) {
			last = a
			ev := map[string]any{"attempt": a.N, "url": shown, "duration_ms": a.Duration.Milliseconds()}
			if a.Status != 0 {
				ev["status"] = a.Status
			}
			if a.Err != nil {
				ev["error"] = mask(a.Err.Error())
			}
			if a.Retry > 0 {
				ev["retry_in_ms"] = a.Retry.Milliseconds()
				note("detail", "delivery to %s: attempt %d: %s; again in %s", shown, a.N, mask(Describe(a)), a.Retry.Round(time.Millisecond))
			}
			record(EventAttempt, ev)
			if hold.Token != "" && a.Retry > 0 {
				err := r.Store.DeliveryAttempted(ctx, run.ID, run.Generation, hold.Token, a.N, r.Clock.Now().Add(a.Retry), HoldFor(d))
				if errors.Is(err, store.ErrLeaseLost) {
					lost = true // another process goes on with it
					stop()
				} else if err != nil {
					note("problem", "recording the delivery of run %s: %v", run.ID, err)
				}
			}
		})
	var later *LaterError
	switch {
	case errors.As(err, &later) && !lost:
		return later.Attempt.Retry
	case lost:
		note("detail", "the delivery of run %s was taken over by another process", run.ID)
	case err == nil:
		record(EventSucceeded, map[string]any{"attempts": last.N, "status": last.Status, "url": shown})
		note("detail", "delivered to %s (%s)", shown, Describe(last))
		end()
	case ctx.Err() != nil && hold.Token != "":
		note("detail", "the delivery of run %s stopped after %d attempt(s); it stays owed, and the next skein serve on this store goes on with it", run.ID, last.N)
	default:
		record(EventFailed, map[string]any{"attempts": last.N, "error": mask(err.Error()), "url": shown})
		note("problem", "delivery to %s failed: %s", shown, mask(err.Error()))
		end()
	}
	return 0
}

// renderTarget renders the delivery's URL and secret; they may read the
// run's inputs, its secrets, execution and trigger.
func renderTarget(d *workflow.Delivery, run *store.Run, inputs, payload map[string]any, secrets map[string]string) (string, string, error) {
	scope := &expr.Scope{Inputs: inputs, Trigger: payload, Secrets: make(map[string]any, len(secrets)),
		Execution: map[string]any{"id": run.ID, "workflow": run.Workflow, "started_at": run.StartedAt.UTC().Format(time.RFC3339)}}
	if scope.Trigger == nil {
		// A run started by hand fired with its inputs, as its nodes read
		// trigger (engine.Options.Payload).
		scope.Trigger = inputs
	}
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

// AttemptsRecorded is the number of the last delivery attempt recorded
// since the run's latest execution ended (0: none).
func (r *Runs) AttemptsRecorded(ctx context.Context, runID string) (int, error) {
	evs, err := r.Store.Events(ctx, runID, 0, 0)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ev := range evs {
		switch ev.Type {
		case record.EventExecutionFinished:
			n = 0 // a resumed run owes a delivery of its own
		case EventAttempt:
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
