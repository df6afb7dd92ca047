package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/schedule"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeRuns records the runs fires start, as a store would: one per id.
// Its failures are injected.
type fakeRuns struct {
	mu   sync.Mutex
	runs map[string]schedule.Fire
	live map[string]bool
	// crash, when set, makes Start fail without recording (a server that
	// died between the claim and the run).
	crash bool
	// started, when set, gets each fire started and waits for ack.
	started chan schedule.Fire
	ack     chan struct{}
}

func newFakeRuns() *fakeRuns {
	return &fakeRuns{runs: map[string]schedule.Fire{}, live: map[string]bool{}}
}

func (f *fakeRuns) Start(_ context.Context, fire schedule.Fire) error {
	f.mu.Lock()
	if f.crash {
		f.mu.Unlock()
		return errors.New("the server died")
	}
	if _, ok := f.runs[fire.RunID]; ok {
		f.mu.Unlock()
		return fmt.Errorf("run %s: %w", fire.RunID, store.ErrExists)
	}
	f.runs[fire.RunID] = fire
	f.mu.Unlock()
	if f.started != nil {
		f.started <- fire
		<-f.ack
	}
	return nil
}

func (f *fakeRuns) State(_ context.Context, id string) (bool, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.runs[id]
	return ok, f.live[id], nil
}

// fires returns the scheduled times of the runs started, in order.
func (f *fakeRuns) fires() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Time
	for id, fire := range f.runs {
		if id != schedule.RunID(fire.Workflow, fire.Trigger, fire.At) {
			panic("a run's id is not its fire's")
		}
		out = append(out, fire.At.UTC())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

type bundle struct {
	ctx   context.Context
	clock *clock.Fake
	store store.Store
	runs  *fakeRuns
	t0    time.Time
	// outcomes counts Config.Outcome's reports by outcome.
	mu       sync.Mutex
	outcomes map[string]int
}

func setup(t *testing.T) *bundle {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "skein.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &bundle{ctx: t.Context(), clock: clock.NewFake(t0.Add(300 * time.Millisecond)), store: st, runs: newFakeRuns(), t0: t0,
		outcomes: map[string]int{}}
}

// scheduler is a server's scheduler on the bundle's store, clock and runs.
func (b *bundle) scheduler(triggers ...schedule.Trigger) *schedule.Scheduler {
	s := schedule.New(schedule.Config{Store: b.store, Runs: b.runs, Clock: b.clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Outcome: func(_, _, outcome string, n int) {
			b.mu.Lock()
			b.outcomes[outcome] += n
			b.mu.Unlock()
		}})
	s.Set(triggers)
	return s
}

func (b *bundle) seconds(from, to int) []time.Time {
	var out []time.Time
	for s := from; s <= to; s++ {
		out = append(out, b.t0.Add(time.Duration(s)*time.Second))
	}
	return out
}

func everySecond(t *testing.T, missed, overlap string) schedule.Trigger {
	t.Helper()
	times, err := schedule.Parse("@every 1s", "UTC")
	require.NoError(t, err)
	return schedule.Trigger{Workflow: "tick", Node: "every", Times: times, Missed: missed, Overlap: overlap}
}

// TestEverySecondAcrossARestart is acceptance 4 with a clock the test
// moves: a schedule firing every second for ten seconds, its server
// restarted in the middle — each fire once, none doubled.
func TestEverySecondAcrossARestart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// down is how many seconds no server runs at the restart.
		down int
		want func(b *bundle) []time.Time
	}{
		{"at once", 0, func(b *bundle) []time.Time { return b.seconds(1, 10) }},
		// Seconds 6 and 7 pass while no server runs; at 8 the latest
		// due time (8) is on time: it fires, 6 and 7 are missed.
		{"down for two seconds", 2, func(b *bundle) []time.Time { return append(b.seconds(1, 5), b.seconds(8, 10)...) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			tr := everySecond(t, "", schedule.OverlapAllow)
			first := b.scheduler(tr)
			_, err := first.Tick(b.ctx)
			require.NoError(t, err)
			for sec := 1; sec <= 5; sec++ {
				b.clock.Advance(time.Second)
				next, err := first.Tick(b.ctx)
				require.NoError(t, err)
				require.Equal(t, b.t0.Add(time.Duration(sec+1)*time.Second), next)
			}
			b.clock.Advance(time.Duration(tc.down) * time.Second)
			second := b.scheduler(tr) // a new server on the same store
			for sec := 6 + tc.down; sec <= 10; sec++ {
				b.clock.Advance(time.Second)
				_, err := second.Tick(b.ctx)
				require.NoError(t, err)
			}
			require.Equal(t, tc.want(b), b.runs.fires())
			require.Equal(t, 10-tc.down, b.outcomes[schedule.OutcomeFired])
			require.Equal(t, tc.down, b.outcomes[schedule.OutcomeMissed])
		})
	}
}

// TestTwoSchedulersClaimEachFireOnce: two servers on one store look at the
// same time, every second; each fire starts one run.
func TestTwoSchedulersClaimEachFireOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tr := everySecond(t, "", schedule.OverlapAllow)
	a, c := b.scheduler(tr), b.scheduler(tr)
	for range 10 {
		b.clock.Advance(time.Second)
		var wg sync.WaitGroup
		for _, s := range []*schedule.Scheduler{a, c} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.Tick(b.ctx)
				if err != nil {
					t.Errorf("tick: %v", err)
				}
			}()
		}
		wg.Wait()
	}
	// The first look stored the schedule with its first fire at 1 s.
	require.Equal(t, b.seconds(2, 10), b.runs.fires())
	require.Equal(t, 9, b.outcomes[schedule.OutcomeFired])
}

// TestAFireClaimedButNotStartedStartsAfterARestart: a server died between
// claiming a fire and recording its run; the next one starts that run.
func TestAFireClaimedButNotStartedStartsAfterARestart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		down   time.Duration
		missed string
		want   func(b *bundle) []time.Time
	}{
		{"on time", 0, "", func(b *bundle) []time.Time { return b.seconds(1, 3) }},
		{"too late: missed", 2 * time.Minute, "", func(b *bundle) []time.Time { return append(b.seconds(1, 1), b.t0.Add(123*time.Second)) }},
		{"too late, run_once", 2 * time.Minute, schedule.MissedRunOnce, func(b *bundle) []time.Time {
			return append(b.seconds(1, 2), b.t0.Add(123*time.Second))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			times, err := schedule.Parse("@every 1s", "UTC")
			require.NoError(t, err)
			tr := schedule.Trigger{Workflow: "tick", Node: "every", Times: times, Missed: tc.missed}
			first := b.scheduler(tr)
			_, err = first.Tick(b.ctx)
			require.NoError(t, err)
			b.clock.Advance(time.Second)
			_, err = first.Tick(b.ctx)
			require.NoError(t, err)
			b.runs.mu.Lock()
			b.runs.crash = true
			b.runs.mu.Unlock()
			b.clock.Advance(time.Second)
			_, err = first.Tick(b.ctx) // claims 2 s, dies before its run
			require.NoError(t, err)
			require.Equal(t, b.seconds(1, 1), b.runs.fires())
			b.runs.mu.Lock()
			b.runs.crash = false
			b.runs.mu.Unlock()

			b.clock.Advance(time.Second + tc.down)
			second := b.scheduler(tr)
			_, err = second.Tick(b.ctx)
			require.NoError(t, err)
			require.Equal(t, tc.want(b), b.runs.fires())
		})
	}
}

func TestOverlap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		overlap string
		want    int
	}{{"", 1}, {schedule.OverlapSkip, 1}, {schedule.OverlapAllow, 3}} {
		t.Run("overlap "+tc.overlap, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			s := b.scheduler(everySecond(t, "", tc.overlap))
			for range 4 {
				_, err := s.Tick(b.ctx)
				require.NoError(t, err)
				b.runs.mu.Lock()
				for id := range b.runs.runs {
					b.runs.live[id] = true // the runs never end
				}
				b.runs.mu.Unlock()
				b.clock.Advance(time.Second)
			}
			require.Len(t, b.runs.fires(), tc.want)
			require.Equal(t, 3-tc.want, b.outcomes[schedule.OutcomeOverlap])
		})
	}
}

// TestChangedSpecStartsAfresh: a schedule whose expression changes is
// planned again from now; one set again unchanged keeps its times.
func TestChangedSpecStartsAfresh(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hourly, err := schedule.Parse("0 * * * *", "UTC")
	require.NoError(t, err)
	s := b.scheduler(schedule.Trigger{Workflow: "w", Node: "t", Times: hourly})
	next, err := s.Tick(b.ctx)
	require.NoError(t, err)
	require.Equal(t, b.t0.Add(time.Hour), next)

	again := b.scheduler(schedule.Trigger{Workflow: "w", Node: "t", Times: hourly})
	b.clock.Advance(10 * time.Minute)
	next, err = again.Tick(b.ctx)
	require.NoError(t, err)
	require.Equal(t, b.t0.Add(time.Hour), next, "kept")

	quarter, err := schedule.Parse("*/15 * * * *", "UTC")
	require.NoError(t, err)
	again.Set([]schedule.Trigger{{Workflow: "w", Node: "t", Times: quarter}})
	next, err = again.Tick(b.ctx)
	require.NoError(t, err)
	require.Equal(t, b.t0.Add(15*time.Minute), next, "planned again")
	require.Empty(t, b.runs.fires())
}

// TestRunFiresOnTheClock runs the loop on the fake clock: it sleeps until
// the next fire, fires, and wakes when its triggers change.
func TestRunFiresOnTheClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.runs.started, b.runs.ack = make(chan schedule.Fire), make(chan struct{})
	s := b.scheduler(everySecond(t, "", schedule.OverlapAllow))
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	timer := b.clock.WaitForTimer()
	go func() { done <- s.Run(ctx) }()
	for sec := 1; sec <= 3; sec++ {
		<-timer
		b.clock.Advance(time.Second)
		fire := <-b.runs.started
		require.Equal(t, b.t0.Add(time.Duration(sec)*time.Second), fire.At)
		timer = b.clock.WaitForTimer()
		b.runs.ack <- struct{}{}
	}
	<-timer
	timer = b.clock.WaitForTimer()
	s.Set(nil) // wakes the loop: nothing to fire
	<-timer
	b.clock.Advance(time.Hour)
	cancel()
	require.NoError(t, <-done)
	require.Len(t, b.runs.fires(), 3)
}
