package queue

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Follow follows a queued run from another process (skein run, the server
// that started it) until it ends: it polls the run's records (every
// Every), handing new steps and events to Step and Event as the workers
// commit them, and looks at once when the run's end is notified
// (EndedChannel).
type Follow struct {
	Store    *postgres.Store
	Registry *node.Registry
	Workflow *workflow.Workflow
	RunID    string
	// ParkOnSignals ends following as an execution that parks for
	// signals ends: when the run only waits for signals. The result then
	// says waiting; the run goes on with the workers as soon as a signal
	// comes.
	ParkOnSignals bool
	// Cancelling Run's ctx calls Cancel(letFinish: true), as a local
	// run's first Ctrl-C, and follows the run to its end; closing Hard
	// after that calls Cancel(false). Closing Hard before it, or Leave,
	// stops following at once, the run going on.
	Hard, Leave <-chan struct{}
	Cancel      func(ctx context.Context, letFinish bool) error
	// Step, Event and Note (lines for people), when set, see the run.
	Step  func(engine.StepRecord)
	Event func(engine.TimedEvent)
	Note  func(kind, text string)
	// DBName names the database for people, in the hint that no worker
	// takes the run's jobs.
	DBName string
	// Every is how often the run's records are read (default 100 ms).
	Every time.Duration
}

// Followed is how following a run ended: the run ended (Ended), it only
// waits for signals (its status waiting), or the follower left.
type Followed struct {
	Run    *store.Run
	Result *engine.Result
	Ended  bool
}

// EndedChannel is the notification channel on which the worker that
// recorded a queued run's end names the run, once that is committed.
const EndedChannel = "skein_run_ended"

// lookSpacing is how many times the time a look at the run took the next
// look waits at least.
const lookSpacing = 4

// eventPage is how many events a read of a run's events takes at most.
const eventPage = 1000

// WaitingHint is how long Follow follows a run whose jobs nobody takes
// before it says that no worker runs.
const WaitingHint = 3 * time.Second

// Run follows the run until it ends, parks, or following stops.
func (f *Follow) Run(ctx context.Context) (*Followed, error) {
	hard := f.Hard
	st, runID := f.Store, f.RunID
	every := f.Every
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	ended, stopWake := st.Wake(ctx, EndedChannel, runID)
	defer stopWake()
	var w watch
	var seq int64
	cancelled := false
	hinted := false
	started := time.Now()
	t := time.NewTimer(every)
	defer t.Stop()
	// While the database is unreachable (it restarts), following waits
	// with backoff and goes on where it was: the workers go on too.
	lost := backoff.NewExponentialBackOff()
	lost.InitialInterval, lost.MaxInterval = every, 5*time.Second
	for {
		// The run first: every record committed before it is read with
		// what follows. Then every new event, a page at a time, and the
		// steps written since the last look; the whole run's once it
		// ended.
		began := time.Now()
		cur, err := st.Run(context.WithoutCancel(ctx), runID)
		for err == nil {
			var evs []store.Event
			if evs, err = st.Events(context.WithoutCancel(ctx), runID, seq, eventPage); err == nil {
				w.events(evs, f.Event)
				if len(evs) > 0 {
					seq = evs[len(evs)-1].Seq
				}
				if len(evs) < eventPage {
					break
				}
			}
		}
		var changes *postgres.Changes
		if err == nil {
			changes, err = st.StepsSince(context.WithoutCancel(ctx), runID, cur.Generation, w.since(cur.Generation))
		}
		var res *engine.Result
		if err == nil && cur.Status.Final() {
			res, err = f.result(ctx, cur)
		}
		if postgres.Transient(err) {
			wait := time.NewTimer(lost.NextBackOff())
			select {
			case <-wait.C:
				continue
			case <-hard:
				wait.Stop()
				return nil, fmt.Errorf("stopped following run %s while the database was unreachable (%w); its workers go on with it", runID, err)
			case <-f.Leave:
				wait.Stop()
				return nil, fmt.Errorf("left run %s to its workers while the database was unreachable: %w", runID, err)
			}
		}
		if err != nil {
			return nil, err
		}
		lost.Reset()
		w.steps(cur, changes, f.Step)
		// Postgres walks a run's step rows to find those written since
		// (tens of ms for tens of thousands): the next look waits for
		// lookSpacing times this one's time, so that following a long run
		// keeps the database and this process busy a fifth of the time
		// at most. Its end is still heard at once (ended).
		t.Reset(max(every, lookSpacing*time.Since(began)))
		if res != nil {
			res.StartedAt = cur.StartedAt
			if cur.FinishedAt != nil {
				res.FinishedAt = *cur.FinishedAt
				res.DurationMS = cur.FinishedAt.Sub(cur.StartedAt).Milliseconds()
			}
			res.Tokens, res.CostUSD = cur.Tokens, cur.CostUSD
			return &Followed{Run: cur, Result: res, Ended: true}, nil
		}
		if f.ParkOnSignals && !cancelled && signalWaits(f.Workflow, f.Registry, w.unended()) != nil {
			if parked := f.park(ctx, cur); parked != nil {
				return parked, nil
			}
		}
		if !hinted && time.Since(started) > WaitingHint && f.Note != nil {
			if idle, queues, err := unclaimed(ctx, st, runID, WaitingHint); err == nil && idle {
				hinted = true
				f.Note("problem", fmt.Sprintf(
					"waiting for a worker: start skein worker --db %s --queues %s (no worker took this run's jobs in %s)",
					f.DBName, queues, WaitingHint))
			}
		}
		select {
		case <-ctx.Done():
			// As a local run's: nothing new starts, the running nodes
			// finish (Hard stops them), the rest is skipped.
			if !cancelled {
				cancelled = true
				ctx = context.WithoutCancel(ctx)
				if err := f.Cancel(ctx, true); err != nil {
					return nil, err
				}
			}
			ctx = context.WithoutCancel(ctx)
		case <-hard:
			if cancelled {
				// A second Ctrl-C: the workers stop the running nodes.
				hard = nil
				if err := f.Cancel(ctx, false); err != nil {
					return nil, err
				}
				break
			}
			return nil, fmt.Errorf("stopped following run %s; its workers go on with it (skein runs show %s)", runID, runID)
		case <-f.Leave:
			// This process stops (a server that shuts down); the run
			// goes on with its workers.
			res, err := f.result(ctx, cur)
			if err != nil {
				return nil, fmt.Errorf("left run %s to its workers: %w", runID, err)
			}
			return &Followed{Run: cur, Result: res}, nil
		case <-t.C:
		case <-ended:
		}
	}
}

// result is the run's result as its records say: every step of its
// latest generation.
func (f *Follow) result(ctx context.Context, cur *store.Run) (*engine.Result, error) {
	steps, err := f.Store.Steps(context.WithoutCancel(ctx), f.RunID)
	if err != nil {
		return nil, err
	}
	return durable.Result(cur, steps), nil
}

// park returns the run parked, when it only waits for signals: no job of
// it is left on the queue, and every step of it that has not ended waits
// for one. Nil when it does not (or when that cannot be read now: the
// next look asks again).
func (f *Follow) park(ctx context.Context, cur *store.Run) *Followed {
	if only, err := OnlySignals(ctx, f.Store, f.RunID); err != nil || !only {
		return nil
	}
	res, err := f.result(ctx, cur)
	if err != nil {
		return nil
	}
	awaits := signalWaits(f.Workflow, f.Registry, res.Steps)
	if awaits == nil {
		return nil
	}
	parked := *cur
	parked.Status = engine.RunWaiting
	res.Status, res.Awaiting = engine.RunWaiting, awaits
	return &Followed{Run: &parked, Result: res}
}

// watch is what a follower knows of the run it follows: the look it last
// took of the steps, what it told of each, and which have not ended.
type watch struct {
	gen  int
	seen string // Changes.Seen of the last look at generation gen
	// told is, by node and visit, the status and attempts last told.
	told map[stepKey]stepState
	// open are the steps begun (or released to the queue) that have not
	// ended: the run only waits for signals when each of them does.
	open map[stepKey]*engine.StepRecord
	// retrying is, by node and visit, the attempt a retry event
	// announced: a failed attempt before it is not the step's end.
	retrying map[stepKey]int
}

type stepKey struct {
	node  string
	visit int
}

type stepState struct {
	status   engine.Status
	attempts int
}

// since returns the mark of the last look at generation gen: none when
// the run's generation is another (a new execution of it began), whose
// steps are then all read.
func (w *watch) since(gen int) string {
	if gen != w.gen {
		return ""
	}
	return w.seen
}

// events hands a page of the run's events to tell, noting the attempts
// that retry events announce.
func (w *watch) events(evs []store.Event, tell func(engine.TimedEvent)) {
	for _, ev := range evs {
		if ev.Type == engine.EventRetry {
			if n, ok := attemptOf(ev.Data); ok {
				if w.retrying == nil {
					w.retrying = map[stepKey]int{}
				}
				w.retrying[stepKey{ev.Node, ev.Visit}] = n
			}
		}
		if tell != nil {
			tell(engine.TimedEvent{Time: ev.Time, Event: engine.Event{Type: ev.Type, Node: ev.Node, Visit: ev.Visit, Iteration: ev.Iteration, Data: ev.Data}})
		}
	}
}

// steps takes in the steps written since the last look, telling tell
// (when set) of each whose status or attempts changed: the saved ones by
// step order, then those newly planned that have no record yet.
func (w *watch) steps(cur *store.Run, ch *postgres.Changes, tell func(engine.StepRecord)) {
	if cur.Generation != w.gen || w.told == nil {
		w.gen, w.told, w.open = cur.Generation, map[stepKey]stepState{}, map[stepKey]*engine.StepRecord{}
	}
	w.seen = ch.Seen
	saved := durable.Result(cur, ch.Saved).Steps
	planned := durable.Result(cur, ch.Planned).Steps
	for _, rec := range saved {
		w.take(cur, rec, tell)
	}
	for _, rec := range planned {
		if _, ok := w.told[stepKey{rec.Node, rec.Visit}]; !ok {
			w.take(cur, rec, tell)
		}
	}
}

// take takes in one step's record.
func (w *watch) take(cur *store.Run, rec *engine.StepRecord, tell func(engine.StepRecord)) {
	k := stepKey{rec.Node, rec.Visit}
	if rec.Status.Final() || rec.Status == engine.StatusPending && rec.Attempts == 0 {
		delete(w.open, k)
	} else {
		w.open[k] = rec
	}
	state := stepState{rec.Status, rec.Attempts}
	if old, ok := w.told[k]; ok && old == state {
		return
	}
	w.told[k] = state
	if tell != nil {
		r := *rec
		// An attempt that is retried is marked so, as a local run's
		// scheduler marks it: not the step's end.
		r.Retry = r.Status == engine.StatusFailed && w.retrying[k] > r.Attempts && !cur.Status.Final()
		tell(r)
	}
}

// unended are the steps begun that have not ended, by step order.
func (w *watch) unended() []*engine.StepRecord {
	out := make([]*engine.StepRecord, 0, len(w.open))
	for _, rec := range w.open {
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b *engine.StepRecord) int {
		return cmp.Or(cmp.Compare(a.StepOrder, b.StepOrder), cmp.Compare(a.Node, b.Node), cmp.Compare(a.Visit, b.Visit))
	})
	return out
}

// signalWaits returns the steps that wait for a signal when every step
// that has not ended is one, else nil.
func signalWaits(w *workflow.Workflow, reg *node.Registry, steps []*engine.StepRecord) []engine.Await {
	var out []engine.Await
	for _, s := range steps {
		if s.Status.Final() || s.Status == engine.StatusPending && s.Attempts == 0 {
			continue // ended, or planned: nothing of it runs or is queued
		}
		if s.Status != engine.StatusWaiting {
			return nil
		}
		n := w.Node(s.Node)
		if n == nil {
			return nil
		}
		spec, ok := reg.Lookup(n.Type)
		switch {
		case ok && spec.Parks != nil && s.Directives[engine.DirectiveAwait] == engine.AwaitSignal:
			out = append(out, engine.Await{Node: s.Node, Visit: s.Visit, Signal: engine.SignalName(s.Node, s.Directives)})
			continue
		case !ok || spec.Role != node.RoleWait:
			return nil
		}
		if u, _ := n.Params["until"].(string); u != "signal" {
			return nil
		}
		out = append(out, engine.Await{Node: s.Node, Visit: s.Visit, Signal: s.Node})
	}
	return out
}

// unclaimed reports whether the run has jobs that were due for longer
// than after and none that a worker took, and which queues they are in.
// A job is deleted once its node is recorded, so a step a worker ran
// counts as a job taken.
func unclaimed(ctx context.Context, pg *postgres.Store, runID string, after time.Duration) (bool, string, error) {
	var due, taken int
	var queues string
	err := pg.Pool().QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE state = 'available' AND scheduled_at < now() - $2::float8 * interval '1 second'),
		count(*) FILTER (WHERE attempted_at IS NOT NULL)
		  + (SELECT count(*) FROM (SELECT 1 FROM steps WHERE run_id = $1 AND ran_worker <> '' LIMIT 1) AS ran),
		COALESCE(string_agg(DISTINCT queue, ',') FILTER (WHERE state = 'available'), '')
		FROM river_job WHERE args->>'run' = $1`, runID, after.Seconds()).Scan(&due, &taken, &queues)
	return due > 0 && taken == 0, queues, err
}

// attemptOf reads the attempt a retry event announces.
func attemptOf(data map[string]any) (int, bool) {
	switch n := data["attempt"].(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), true
	}
	return 0, false
}
