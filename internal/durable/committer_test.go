package durable_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

// TestAFailureBelongsToItsRun: when one run's batch cannot be written (its
// owner lost the lease), the other runs committed in the same group are
// not failed with it, and the failed run's later batches fail too, so its
// records never have a gap. It holds on both stores.
// With a store that prepares its rows apart (store.Preparer), the same
// holds of the groups prepared while another is written.
func TestAFailureBelongsToItsRun(t *testing.T) {
	t.Parallel()
	for name, open := range stores {
		for _, prepared := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/prepared=%v", name, prepared), func(t *testing.T) {
				t.Parallel()
				testAFailureBelongsToItsRun(t, open(t), prepared)
			})
		}
	}
}

// stores open an empty store of each kind for a test, closed with it.
var stores = map[string]func(t *testing.T) store.Store{
	"sqlite": func(t *testing.T) store.Store {
		st, err := sqlite.Open(filepath.Join(t.TempDir(), "skein.db"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		return st
	},
	"postgres": func(t *testing.T) store.Store {
		st, err := postgres.Open(t.Context(), pgtest.URL(t))
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		return st
	},
}

func testAFailureBelongsToItsRun(t *testing.T, st store.Store, prepared bool) {
	ctx := t.Context()
	for _, id := range []string{"good", "stale"} {
		require.NoError(t, st.CreateRun(ctx, &store.Run{ID: id, Workflow: "w", Status: "running",
			Owner: store.Owner{Host: "h", PID: 1, Token: "tok-" + id}, LeaseTTL: time.Hour}))
	}
	gate := &gatedStore{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
	var c *durable.Committer
	if prepared {
		c = durable.NewCommitter(&gatedPreparer{gate})
	} else {
		c = durable.NewCommitter(gate)
	}
	defer c.Close()

	// The first transaction is held, so the next two batches queue and
	// are committed together.
	var wg sync.WaitGroup
	results := map[string]error{}
	var mu sync.Mutex
	submit := func(name string, b store.Batch) {
		wg.Add(1)
		c.Submit(b, func(err error) {
			mu.Lock()
			results[name] = err
			mu.Unlock()
			wg.Done()
		})
	}
	step := func(node string) []*store.Step {
		return []*store.Step{{StepOrder: 1, Node: node, Visit: 1, Status: "success"}}
	}
	submit("first", store.Batch{RunID: "good", Token: "tok-good", Steps: step("a")})
	<-gate.entered
	submit("good", store.Batch{RunID: "good", Token: "tok-good", Steps: step("b")})
	submit("stale", store.Batch{RunID: "stale", Token: "someone-else", Steps: step("x")})
	close(gate.release)
	wg.Wait()

	require.NoError(t, results["first"])
	require.NoError(t, results["good"], "the good run's batch is committed despite the stale one in its group")
	require.ErrorIs(t, results["stale"], store.ErrLeaseLost)
	steps, err := st.Steps(ctx, "good")
	require.NoError(t, err)
	require.Len(t, steps, 2)
	if prepared {
		require.Positive(t, gate.prepared.Load(), "the groups were written as their prepared rows")
	}

	// The stale owner's later batch fails without a write, even a valid one.
	done := make(chan error, 1)
	c.Submit(store.Batch{RunID: "stale", Token: "someone-else"}, func(err error) { done <- err })
	require.ErrorIs(t, <-done, store.ErrLeaseLost)
}

// gatedStore holds its first write (SaveBatch, or SavePrepared of a
// gatedPreparer) until release is closed.
type gatedStore struct {
	store.Store
	once     sync.Once
	entered  chan struct{}
	release  chan struct{}
	prepared atomic.Int64 // the writes of prepared rows
}

func (g *gatedStore) hold() {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		<-g.release
	}
}

func (g *gatedStore) SaveBatch(ctx context.Context, bs []store.Batch) error {
	g.hold()
	return g.Store.SaveBatch(ctx, bs)
}

// gatedPreparer is a gatedStore of a store.Preparer that is one too.
type gatedPreparer struct{ *gatedStore }

func (g *gatedPreparer) PrepareBatches(bs []store.Batch) (store.Prepared, error) {
	return g.Store.(store.Preparer).PrepareBatches(bs)
}

func (g *gatedPreparer) SavePrepared(ctx context.Context, p store.Prepared) error {
	g.hold()
	g.prepared.Add(1)
	return g.Store.(store.Preparer).SavePrepared(ctx, p)
}

// TestWaitingForACommitHoldsUpNoOther: an after function that is slow (a
// progress line to a blocked terminal) does not keep the next
// transaction from committing; the after functions still run in the order
// of their commits, and Sync returns only once they ran.
func TestWaitingForACommitHoldsUpNoOther(t *testing.T) {
	t.Parallel()
	st := &savedStore{Store: stores["sqlite"](t), saved: make(chan struct{}, 8)}
	ctx := t.Context()
	require.NoError(t, st.CreateRun(ctx, &store.Run{ID: "r", Workflow: "w", Status: "running"}))
	c := durable.NewCommitter(st)
	defer c.Close()
	step := func(node string) store.Batch {
		return store.Batch{RunID: "r", Steps: []*store.Step{{StepOrder: 1, Node: node, Visit: 1, Status: "success"}}}
	}

	release := make(chan struct{})
	var order []string
	var mu sync.Mutex
	called := func(name string) {
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
	}
	c.Submit(step("a"), func(err error) {
		<-release
		called("a")
	})
	<-st.saved
	// b's transaction commits while a's after function still waits.
	c.Submit(step("b"), nil)
	<-st.saved
	steps, err := st.Steps(ctx, "r")
	require.NoError(t, err)
	require.Len(t, steps, 2)

	c.Submit(step("c"), func(err error) {
		require.NoError(t, err)
		called("c")
	})
	synced := make(chan struct{})
	go func() {
		c.Sync()
		close(synced)
	}()
	close(release)
	<-synced
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"a", "c"}, order, "Sync returns once every after function ran, in the order of the commits")
}

// savedStore tells of each SaveBatch that returned.
type savedStore struct {
	store.Store
	saved chan struct{}
}

func (s *savedStore) SaveBatch(ctx context.Context, bs []store.Batch) error {
	err := s.Store.SaveBatch(ctx, bs)
	s.saved <- struct{}{}
	return err
}

// TestTheNextGroupIsPreparedWhileTheLastIsWritten: with a store that
// prepares its rows apart (store.Preparer), the rows of the next
// transaction are made while the last one is written; a batch prepared
// so of a run whose batch then fails is not written, and fails as that
// run's later batches do.
func TestTheNextGroupIsPreparedWhileTheLastIsWritten(t *testing.T) {
	t.Parallel()
	st := stores["sqlite"](t)
	ctx := t.Context()
	for _, id := range []string{"good", "stale"} {
		require.NoError(t, st.CreateRun(ctx, &store.Run{ID: id, Workflow: "w", Status: "running",
			Owner: store.Owner{Host: "h", PID: 1, Token: "tok-" + id}, LeaseTTL: time.Hour}))
	}
	p := &watchedPreparer{gatedPreparer: &gatedPreparer{&gatedStore{Store: st, entered: make(chan struct{}), release: make(chan struct{})}},
		made: make(chan []string, 8)}
	c := durable.NewCommitter(p)
	defer c.Close()

	results := make(chan error, 4)
	step := func(node string) []*store.Step {
		return []*store.Step{{StepOrder: 1, Node: node, Visit: 1, Status: "success"}}
	}
	submit := func(b store.Batch) { c.Submit(b, func(err error) { results <- err }) }
	submit(store.Batch{RunID: "good", Token: "tok-good", Steps: step("a")})
	require.Equal(t, []string{"good"}, <-p.made)
	<-p.entered // a's transaction is held
	submit(store.Batch{RunID: "stale", Token: "someone-else", Steps: step("x")})
	require.Equal(t, []string{"stale"}, <-p.made, "the next group is prepared while the last is written")
	submit(store.Batch{RunID: "stale", Token: "someone-else"})
	submit(store.Batch{RunID: "good", Token: "tok-good", Steps: step("b")})
	close(p.release)

	require.NoError(t, <-results)
	require.ErrorIs(t, <-results, store.ErrLeaseLost)
	require.ErrorIs(t, <-results, store.ErrLeaseLost, "a batch of a run that failed meanwhile fails too")
	require.NoError(t, <-results, "and the other run's batch of its group is written")
	steps, err := st.Steps(ctx, "good")
	require.NoError(t, err)
	require.Len(t, steps, 2)
	p.mu.Lock()
	defer p.mu.Unlock()
	require.Equal(t, 1, p.wrote["stale"], "the stale run's batch prepared meanwhile was not written")
}

// watchedPreparer tells of the runs of each group it prepares, and counts
// the writes of each run's rows.
type watchedPreparer struct {
	*gatedPreparer
	made  chan []string
	mu    sync.Mutex
	wrote map[string]int
}

type watchedRows struct {
	rows store.Prepared
	runs []string
}

func (w *watchedPreparer) PrepareBatches(bs []store.Batch) (store.Prepared, error) {
	var runs []string
	for _, b := range bs {
		runs = append(runs, b.RunID)
	}
	rows, err := w.gatedPreparer.PrepareBatches(bs)
	w.made <- runs
	return &watchedRows{rows, runs}, err
}

func (w *watchedPreparer) SavePrepared(ctx context.Context, p store.Prepared) error {
	r := p.(*watchedRows)
	w.count(r.runs)
	return w.gatedPreparer.SavePrepared(ctx, r.rows)
}

func (w *watchedPreparer) SaveBatch(ctx context.Context, bs []store.Batch) error {
	var runs []string
	for _, b := range bs {
		runs = append(runs, b.RunID)
	}
	w.count(runs)
	return w.gatedPreparer.SaveBatch(ctx, bs)
}

func (w *watchedPreparer) count(runs []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wrote == nil {
		w.wrote = map[string]int{}
	}
	for _, r := range runs {
		w.wrote[r]++
	}
}
