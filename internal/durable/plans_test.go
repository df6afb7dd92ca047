package durable_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
)

// A run's planned steps go to the store as its plan, one row for a
// batch, not a pending step row each; they read back pending until they
// start, on both stores. A step that has a row stays a row when it is
// pending again.
func TestPlannedStepsAreThePlan(t *testing.T) {
	t.Parallel()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testPlannedStepsAreThePlan(t, open(t))
		})
	}
}

func testPlannedStepsAreThePlan(t *testing.T, st store.Store) {
	ctx := t.Context()
	require.NoError(t, st.CreateRun(ctx, &store.Run{ID: "r1", Workflow: "w", Status: "running"}))
	rs := &recordingStore{Store: st}
	c := durable.NewCommitter(rs)
	defer c.Close()
	rec := durable.NewRecorder(c, "r1", nil, nil)
	rec.Generation = 1

	pending := func(order int, node string) *engine.StepRecord {
		return &engine.StepRecord{StepOrder: order, Node: node, Type: "set", Visit: 1, Status: engine.StatusPending}
	}
	a, b := pending(1, "a"), pending(2, "b")
	require.NoError(t, rec.Step(a))
	require.NoError(t, rec.Step(b))
	require.NoError(t, rec.Sync())
	require.Equal(t, []string{"steps [] plan [a b]"}, rs.take())

	now := time.Now().UTC().Truncate(time.Microsecond)
	a.Status, a.Attempts, a.StartedAt, a.RanOn = engine.StatusRunning, 1, &now, engine.Here()
	require.NoError(t, rec.Step(a))
	require.NoError(t, rec.Sync())
	// The queue's worker gave the step back: pending again, as planned.
	a2 := pending(1, "a")
	require.NoError(t, rec.Step(a2))
	require.NoError(t, rec.Sync())
	require.Equal(t, []string{"steps [a:running] plan []", "steps [a:pending] plan []"}, rs.take(),
		"a step with a row is saved as a row")

	steps, err := st.Steps(ctx, "r1")
	require.NoError(t, err)
	var got []string
	for _, s := range steps {
		got = append(got, fmt.Sprintf("%d:%s %s %s", s.StepOrder, s.Node, s.Type, s.Status))
	}
	require.Equal(t, []string{"1:a set pending", "2:b set pending"}, got)
}

// A step planned and started in one transaction of the committer is
// written once, as its step row, without a plan.
func TestAPlanStartedInTheSameTransactionIsNotWritten(t *testing.T) {
	t.Parallel()
	st := stores["sqlite"](t)
	ctx := t.Context()
	require.NoError(t, st.CreateRun(ctx, &store.Run{ID: "r1", Workflow: "w", Status: "running"}))
	gate := &gatedStore{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
	rs := &recordingStore{Store: gate}
	c := durable.NewCommitter(rs)
	defer c.Close()

	c.Submit(store.Batch{RunID: "r1", Events: []store.Event{{Type: "execution_started"}}}, nil)
	<-gate.entered
	planned := func(node string) *store.Step {
		return &store.Step{Generation: 1, StepOrder: 1, Node: node, Visit: 1, Type: "set", Status: "pending"}
	}
	c.Submit(store.Batch{RunID: "r1", Plan: []*store.Step{planned("a"), planned("b")}}, nil)
	c.Submit(store.Batch{RunID: "r1", Steps: []*store.Step{{Generation: 1, StepOrder: 1, Node: "a", Visit: 1, Type: "set", Status: "running", Attempts: 1}}}, nil)
	close(gate.release)
	c.Sync()
	require.Equal(t, []string{"steps [] plan []", "steps [a:running] plan [b]"}, rs.take())
}

// recordingStore records the steps and plans of the batches it saves.
type recordingStore struct {
	store.Store
	mu  sync.Mutex
	log []string
}

func (r *recordingStore) SaveBatch(ctx context.Context, bs []store.Batch) error {
	r.mu.Lock()
	for _, b := range bs {
		var steps, plan []string
		for _, s := range b.Steps {
			steps = append(steps, fmt.Sprintf("%s:%s", s.Node, s.Status))
		}
		for _, s := range b.Plan {
			plan = append(plan, s.Node)
		}
		r.log = append(r.log, fmt.Sprintf("steps %v plan %v", steps, plan))
	}
	r.mu.Unlock()
	return r.Store.SaveBatch(ctx, bs)
}

// take returns what was logged and forgets it.
func (r *recordingStore) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.log
	r.log = nil
	return out
}
