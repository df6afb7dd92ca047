// Package storetest is the conformance suite of store.Store: every
// implementation runs it, so they all keep the contract the store package
// documents. Change the suite first, then the implementations.
//
// The suite is kept in a file per area: workflows, runs (with deleting
// old runs), steps, events, leases, signals (with waits), schedules,
// deliveries, tokens, chat, memory and transactions (tx). Each area is a
// function that takes the setup of a test; Run runs them all.
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := sqlite.Open(filepath.Join(t.TempDir(), "skein.db"))
//			require.NoError(t, err)
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// Run runs the suite. open must return a new, empty store for the test it
// is given and close it when the test ends (t.Cleanup); the subtests run in
// parallel, each with a store of its own.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	setup := setupOf(open)
	t.Run("Workflows", func(t *testing.T) { testWorkflows(t, setup) })
	t.Run("Runs", func(t *testing.T) { testRuns(t, setup) })
	t.Run("Steps", func(t *testing.T) { testSteps(t, setup) })
	t.Run("Plans", func(t *testing.T) { testPlans(t, setup) })
	t.Run("Events", func(t *testing.T) { testEvents(t, setup) })
	t.Run("Tokens", func(t *testing.T) { testTokens(t, setup) })
	t.Run("Chat", func(t *testing.T) { testChat(t, setup) })
	t.Run("Memory", func(t *testing.T) { testMemory(t, setup) })
	t.Run("Schedules", func(t *testing.T) { testSchedules(t, setup) })
	t.Run("DeleteRuns", func(t *testing.T) { testDeleteRuns(t, setup) })
	t.Run("Deliveries", func(t *testing.T) { testDeliveries(t, setup) })
	t.Run("Leases", func(t *testing.T) { testLeases(t, setup) })
	t.Run("Signals", func(t *testing.T) { testSignals(t, setup) })
	t.Run("Waits", func(t *testing.T) { testWaits(t, setup) })
	t.Run("Tx", func(t *testing.T) { testTx(t, setup) })
	t.Run("CancelledContext", func(t *testing.T) { testCancelledContext(t, setup) })
}

// RunTx runs the suite's transactions area alone, for a store whose
// transaction is reached another way too (Postgres's WithTx): open's
// store gives its Tx that way.
func RunTx(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	t.Run("Tx", func(t *testing.T) { testTx(t, setupOf(open)) })
}

func setupOf(open func(t *testing.T) store.Store) func(t *testing.T) *bundle {
	return func(t *testing.T) *bundle {
		t.Helper()
		return &bundle{ctx: t.Context(), s: open(t)}
	}
}

// bundle is what a test of the suite works with: its context and a new,
// empty store.
type bundle struct {
	ctx context.Context
	s   store.Store
}

// assertNoError is require.NoError for goroutines other than the test's.
func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}

// base is the start of the suite's runs: microsecond precision, UTC, so
// that it round-trips in every implementation.
var base = time.Date(2025, 3, 1, 12, 0, 0, 123456000, time.UTC)

func createRun(t *testing.T, s store.Store, id, workflow string, started time.Time) *store.Run {
	t.Helper()
	r := &store.Run{ID: id, Workflow: workflow, Status: "running", StartedAt: started}
	require.NoError(t, s.CreateRun(t.Context(), r), "creating run %s", id)
	r.LeaseExpired = true // it has no owner: it reads back so
	return r
}

func runIDs(runs []*store.Run) []string {
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	return ids
}

func seqs(evs []store.Event) []int64 {
	var s []int64
	for _, ev := range evs {
		s = append(s, ev.Seq)
	}
	return s
}

// clone returns a shallow copy, so a store that writes to what it is given
// cannot make a comparison pass by accident.
func clone[T any](v *T) *T {
	c := *v
	return &c
}

// memoryContents lists the contents of memory messages, in order.
func memoryContents(msgs []*store.MemoryMessage) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Content)
	}
	return out
}

// saveSteps saves steps of a run as a batch of steps alone.
func saveSteps(ctx context.Context, s store.Store, runID string, steps []*store.Step) error {
	return s.SaveBatch(ctx, []store.Batch{{RunID: runID, Steps: steps}})
}
