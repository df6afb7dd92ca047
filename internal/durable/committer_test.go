package durable_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

// TestAFailureBelongsToItsRun: when one run's batch cannot be written (its
// owner lost the lease), the other runs committed in the same group are
// not failed with it, and the failed run's later batches fail too, so its
// records never have a gap. It holds on both stores.
func TestAFailureBelongsToItsRun(t *testing.T) {
	t.Parallel()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testAFailureBelongsToItsRun(t, open(t))
		})
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

func testAFailureBelongsToItsRun(t *testing.T, st store.Store) {
	ctx := t.Context()
	for _, id := range []string{"good", "stale"} {
		require.NoError(t, st.CreateRun(ctx, &store.Run{ID: id, Workflow: "w", Status: "running",
			Owner: store.Owner{Host: "h", PID: 1, Token: "tok-" + id}, LeaseTTL: time.Hour}))
	}
	gate := &gatedStore{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
	c := durable.NewCommitter(gate)
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

	// The stale owner's later batch fails without a write, even a valid one.
	done := make(chan error, 1)
	c.Submit(store.Batch{RunID: "stale", Token: "someone-else"}, func(err error) { done <- err })
	require.ErrorIs(t, <-done, store.ErrLeaseLost)
}

// gatedStore holds its first SaveBatch until release is closed.
type gatedStore struct {
	store.Store
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (g *gatedStore) SaveBatch(ctx context.Context, bs []store.Batch) error {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		<-g.release
	}
	return g.Store.SaveBatch(ctx, bs)
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

// TestSyncEndsWaitsForTheCommit: a recorder with SyncEnds does not return
// from the flush of a step that ended until its transaction committed:
// what the step released starts once its end is durable.
func TestSyncEndsWaitsForTheCommit(t *testing.T) {
	t.Parallel()
	st := stores["sqlite"](t)
	ctx := t.Context()
	require.NoError(t, st.CreateRun(ctx, &store.Run{ID: "r", Workflow: "w", Status: "running",
		Owner: store.Owner{Host: "h", PID: 1, Token: "tok"}, LeaseTTL: time.Hour}))
	gate := &gatedStore{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
	c := durable.NewCommitter(gate)
	defer c.Close()
	release := sync.OnceFunc(func() { close(gate.release) })
	defer release() // before Close, should the test fail with the commit held
	rec := durable.NewRecorder(c, "r", nil, nil)
	rec.Token, rec.Generation, rec.SyncEnds = "tok", 1, true
	now := time.Now()
	require.NoError(t, rec.Step(&engine.StepRecord{Node: "a", Type: "set", Visit: 1, StepOrder: 1, Status: engine.StatusSuccess, Attempts: 1,
		StartedAt: &now, FinishedAt: &now, Output: map[string]any{"n": 1}}))
	flushed := make(chan error, 1)
	go func() { flushed <- rec.Flush() }()
	<-gate.entered
	select {
	case err := <-flushed:
		t.Fatalf("the flush of an ended step returned (%v) while its commit was held", err)
	default:
	}
	release()
	require.NoError(t, <-flushed)
	steps, err := st.Steps(ctx, "r")
	require.NoError(t, err)
	require.Len(t, steps, 1)
	require.Equal(t, engine.StatusSuccess, steps[0].Status, "the step's end is committed when the flush returns")
}
