package schedule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/store"
)

// Trigger is one schedule trigger of a served workflow.
type Trigger struct {
	Workflow string
	// Node is the id of the trigger node.
	Node  string
	Times *Times
	// Missed and Overlap are policies (MissedSkip, MissedRunOnce;
	// OverlapSkip, OverlapAllow); empty means skip.
	Missed  string
	Overlap string
}

func (tr Trigger) key() string { return tr.Workflow + "/" + tr.Node }

// Fire is a run a schedule starts.
type Fire struct {
	Workflow string
	Trigger  string
	// At is the fire's scheduled time, in the schedule's time zone.
	At time.Time
	// Missed counts the fire times before At that had no run of their own.
	Missed int
	// RunID is the id the run must have: RunID(Workflow, Trigger, At).
	RunID string
}

// RunID is the id of the run a schedule starts for the fire time at: one
// fire, one run id, so the store's unique run ids make one run per fire
// whoever starts it.
func RunID(workflow, trigger string, at time.Time) string {
	sum := sha256.Sum256([]byte("skein schedule\x00" + workflow + "\x00" + trigger + "\x00" + at.UTC().Format(time.RFC3339Nano)))
	return hex.EncodeToString(sum[:6])
}

// Store keeps the schedules' state; store.Store is one.
type Store interface {
	SetSchedule(ctx context.Context, s store.Schedule) (store.Schedule, error)
	AdvanceSchedule(ctx context.Context, s store.Schedule, from time.Time) (bool, error)
	Schedules(ctx context.Context) ([]store.Schedule, error)
}

// Runs starts and looks up the runs of fires.
type Runs interface {
	// Start starts the fire's run with the id fire.RunID, and returns
	// once it is recorded. A run with that id that exists already is
	// store.ErrExists: the fire was started before.
	Start(ctx context.Context, fire Fire) error
	// State reports whether the run exists, and whether it has not ended
	// (running or waiting).
	State(ctx context.Context, runID string) (exists, live bool, err error)
}

// Outcomes of a schedule's fire time, as Config.Outcome hears them.
const (
	OutcomeFired   = "fired"   // a run started
	OutcomeMissed  = "missed"  // a fire time passed without a run of its own
	OutcomeOverlap = "overlap" // not started: the previous run still runs
	OutcomeFailed  = "failed"  // the run could not start
)

// Config configures a Scheduler.
type Config struct {
	Store Store
	Runs  Runs
	// Clock tells the time and wakes the scheduler; default the wall clock.
	Clock clock.Clock
	Log   *slog.Logger
	// Outcome, when set, hears what became of each fire time (n of them).
	Outcome func(workflow, trigger, outcome string, n int)
	// MaxWait is the longest Run waits before it looks at the store
	// again (default a minute): another server may have changed it.
	MaxWait time.Duration
}

// Scheduler fires the triggers it is given (Set) at their times. Run it
// with Run; Tick is one look, for tests.
type Scheduler struct {
	cfg  Config
	wake chan struct{}

	mu       sync.Mutex
	triggers map[string]Trigger
	// saved holds the spec stored for each trigger by this scheduler.
	saved     map[string]string
	recovered bool
}

// New makes a scheduler with no triggers.
func New(cfg Config) *Scheduler {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = time.Minute
	}
	if cfg.Outcome == nil {
		cfg.Outcome = func(string, string, string, int) {}
	}
	return &Scheduler{cfg: cfg, wake: make(chan struct{}, 1), triggers: map[string]Trigger{}, saved: map[string]string{}}
}

// Set replaces the triggers to fire (the schedules of the workflows served
// now) and wakes Run. A trigger dropped keeps its stored state, so adding
// it back goes on where it was (its missed policy decides about the fires
// in between).
func (s *Scheduler) Set(triggers []Trigger) {
	s.mu.Lock()
	s.triggers = make(map[string]Trigger, len(triggers))
	for _, tr := range triggers {
		s.triggers[tr.key()] = tr
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Triggers returns the triggers set, by workflow and node.
func (s *Scheduler) Triggers() []Trigger {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Trigger, 0, len(s.triggers))
	for _, tr := range s.triggers {
		out = append(out, tr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}

// Run fires the triggers at their times until ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	select {
	case <-s.wake: // the first look sees the triggers set before
	default:
	}
	for {
		next, err := s.Tick(ctx)
		if ctx.Err() != nil {
			return nil
		}
		wait := s.cfg.MaxWait
		if err != nil {
			s.cfg.Log.Error("schedules", "err", err)
			wait = min(wait, 5*time.Second)
		}
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(s.cfg.Clock.Now()), 0))
		}
		due := make(chan struct{})
		stop := s.cfg.Clock.AfterFunc(wait, func() { close(due) })
		select {
		case <-ctx.Done():
			stop()
			return nil
		case <-due:
		case <-s.wake:
			stop()
		}
	}
}

// Tick fires what is due now and returns when the next fire is due (zero
// when nothing is scheduled). Each due schedule is claimed in the store
// before its run starts: a schedule another scheduler claimed first is
// left to it.
func (s *Scheduler) Tick(ctx context.Context) (time.Time, error) {
	now := s.cfg.Clock.Now()
	triggers := s.Triggers()
	var errs []error
	for _, tr := range triggers {
		if err := s.save(ctx, tr, now); err != nil {
			errs = append(errs, err)
		}
	}
	rows, err := s.cfg.Store.Schedules(ctx)
	if err != nil {
		return time.Time{}, errors.Join(append(errs, err)...)
	}
	stored := make(map[string]store.Schedule, len(rows))
	for _, r := range rows {
		stored[r.Workflow+"/"+r.Trigger] = r
	}
	s.mu.Lock()
	recovering := !s.recovered
	s.recovered = true
	s.mu.Unlock()
	var earliest time.Time
	for _, tr := range triggers {
		row, ok := stored[tr.key()]
		if !ok || row.Spec != tr.Times.Spec() {
			continue // being changed by another server; saved again next time
		}
		if recovering {
			s.recover(ctx, tr, row, now)
		}
		next, err := s.fire(ctx, tr, row, now)
		if err != nil {
			errs = append(errs, err)
		}
		if !next.IsZero() && (earliest.IsZero() || next.Before(earliest)) {
			earliest = next
		}
	}
	return earliest, errors.Join(errs...)
}

// save stores a trigger's schedule when this scheduler has not yet, or
// its spec changed.
func (s *Scheduler) save(ctx context.Context, tr Trigger, now time.Time) error {
	spec := tr.Times.Spec()
	s.mu.Lock()
	done := s.saved[tr.key()] == spec
	s.mu.Unlock()
	if done {
		return nil
	}
	first := tr.Times.First(now)
	if first.IsZero() {
		s.cfg.Log.Warn("schedule never fires", "workflow", tr.Workflow, "trigger", tr.Node, "cron", spec)
		return nil
	}
	if _, err := s.cfg.Store.SetSchedule(ctx, store.Schedule{Workflow: tr.Workflow, Trigger: tr.Node, Spec: spec, NextFire: first}); err != nil {
		return fmt.Errorf("schedule %s: %w", tr.key(), err)
	}
	s.mu.Lock()
	s.saved[tr.key()] = spec
	s.mu.Unlock()
	return nil
}

// fire claims and starts a due schedule; it returns the schedule's next
// fire time.
func (s *Scheduler) fire(ctx context.Context, tr Trigger, row store.Schedule, now time.Time) (time.Time, error) {
	if row.NextFire.After(now) {
		return row.NextFire, nil
	}
	d, err := tr.Times.Due(row.NextFire, now, tr.Missed)
	if err != nil {
		return time.Time{}, fmt.Errorf("schedule %s: %w", tr.key(), err)
	}
	log := s.cfg.Log.With("workflow", tr.Workflow, "trigger", tr.Node)
	adv := row
	adv.NextFire = d.Next
	overlap := false
	if d.Fire && tr.Overlap != OverlapAllow && row.LastRunID != "" {
		_, live, err := s.cfg.Runs.State(ctx, row.LastRunID)
		if err != nil {
			return row.NextFire, fmt.Errorf("schedule %s: looking up run %s: %w", tr.key(), row.LastRunID, err)
		}
		overlap = live
	}
	fire := Fire{Workflow: tr.Workflow, Trigger: tr.Node, At: d.At.In(tr.Times.Location()), Missed: d.Missed,
		RunID: RunID(tr.Workflow, tr.Node, d.At)}
	if d.Fire && !overlap {
		adv.LastFire, adv.LastRunID = d.At, fire.RunID
	}
	if d.Next.IsZero() {
		adv.NextFire = d.At.Add(100 * 365 * 24 * time.Hour) // never again
	}
	claimed, err := s.cfg.Store.AdvanceSchedule(ctx, adv, row.NextFire)
	if err != nil {
		return row.NextFire, fmt.Errorf("schedule %s: %w", tr.key(), err)
	}
	if !claimed {
		return d.Next, nil // another scheduler took this fire
	}
	if d.Missed > 0 {
		log.Warn("schedule missed fire times", "missed", d.Missed, "policy", policy(tr.Missed), "latest", d.At)
		s.cfg.Outcome(tr.Workflow, tr.Node, OutcomeMissed, d.Missed)
	}
	switch {
	case !d.Fire:
	case overlap:
		log.Info("schedule skipped a fire: the previous run still runs (overlap: skip)", "at", d.At, "run", row.LastRunID)
		s.cfg.Outcome(tr.Workflow, tr.Node, OutcomeOverlap, 1)
	default:
		s.start(ctx, fire)
	}
	return d.Next, nil
}

// start starts a claimed fire's run.
func (s *Scheduler) start(ctx context.Context, fire Fire) {
	err := s.cfg.Runs.Start(ctx, fire)
	switch {
	case err == nil:
		s.cfg.Outcome(fire.Workflow, fire.Trigger, OutcomeFired, 1)
	case errors.Is(err, store.ErrExists):
		// Started already (by a recovery elsewhere): one run per fire.
	default:
		s.cfg.Log.Error("schedule could not start a run", "workflow", fire.Workflow, "trigger", fire.Trigger, "at", fire.At, "err", err)
		s.cfg.Outcome(fire.Workflow, fire.Trigger, OutcomeFailed, 1)
	}
}

// recover starts the run of the last fire claimed when it was never
// recorded (a server died between the claim and the start): on time, or
// late with run_once; otherwise that fire was missed.
func (s *Scheduler) recover(ctx context.Context, tr Trigger, row store.Schedule, now time.Time) {
	if row.LastRunID == "" {
		return
	}
	exists, _, err := s.cfg.Runs.State(ctx, row.LastRunID)
	if err != nil || exists {
		return
	}
	if now.Sub(row.LastFire) > Grace && tr.Missed != MissedRunOnce {
		s.cfg.Log.Warn("schedule missed a fire: it was claimed but its run never started", "workflow", tr.Workflow, "trigger", tr.Node,
			"at", row.LastFire)
		s.cfg.Outcome(tr.Workflow, tr.Node, OutcomeMissed, 1)
		return
	}
	s.cfg.Log.Info("schedule starts a fire claimed before a restart", "workflow", tr.Workflow, "trigger", tr.Node, "at", row.LastFire)
	s.start(ctx, Fire{Workflow: tr.Workflow, Trigger: tr.Node, At: row.LastFire.In(tr.Times.Location()), RunID: row.LastRunID})
}

func policy(p string) string {
	if p == "" {
		return MissedSkip
	}
	return p
}
