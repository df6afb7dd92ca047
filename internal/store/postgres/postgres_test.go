package postgres_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
	"github.com/skeinhq/skein/internal/store/storetest"
)

func TestStore(t *testing.T) {
	t.Parallel()
	start := time.Now()
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, pgtest.URL(t))
	})
	t.Cleanup(func() { t.Logf("storetest on Postgres: %s", time.Since(start).Round(time.Millisecond)) })
}

func open(t testing.TB, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.OpenWithOptions(t.Context(), url, postgres.Options{MaxConns: 4})
	require.NoError(t, err, "opening %s", postgres.Redact(url))
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// TestAFailedBatchLeavesNoTrace: a group commit whose writes fail on the
// server (Postgres refuses a NUL byte in text) writes nothing — not the
// other runs' steps, nor events — and leaves no connection of the pool in
// a broken transaction.
func TestAFailedBatchLeavesNoTrace(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, pgtest.URL(t))
	owner := store.Owner{Host: "h", PID: 1, Token: "t1"}
	for _, id := range []string{"a", "b"} {
		require.NoError(t, s.CreateRun(ctx, &store.Run{ID: id, Workflow: "w", Status: "running", Owner: owner, LeaseTTL: time.Hour}))
	}
	for range 10 { // more than the pool's connections
		err := s.SaveBatch(ctx, []store.Batch{
			{RunID: "a", Token: "t1", Steps: []*store.Step{{StepOrder: 1, Node: "ok", Visit: 1, Status: "success"}},
				Events: []store.Event{{Time: time.Now(), Type: "node_finished"}}},
			{RunID: "b", Token: "t1", Steps: []*store.Step{{StepOrder: 1, Node: "bad", Type: "nul\x00byte", Visit: 1, Status: "success"}}},
		})
		require.Error(t, err)
	}
	for _, id := range []string{"a", "b"} {
		steps, err := s.Steps(ctx, id)
		require.NoError(t, err)
		require.Empty(t, steps, "run %s: nothing of the failed batch was written", id)
		evs, err := s.Events(ctx, id, 0, 0)
		require.NoError(t, err)
		require.Empty(t, evs)
	}
	for i := range 10 {
		evs := []store.Event{{Time: time.Now(), Type: "node_finished"}}
		require.NoError(t, s.SaveBatch(ctx, []store.Batch{{RunID: "a", Token: "t1", Events: evs}}), "batch %d after the failures", i)
		require.Equal(t, int64(i+1), evs[0].Seq)
	}
}
