package durable

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

// storeWithRun is a SQLite store holding the running run r1.
func storeWithRun(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "skein.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.CreateRun(t.Context(), &store.Run{ID: "r1", Workflow: "w", Status: "running"}))
	return st
}

// A recorder keeps no trace of the steps that ended: a long loop's
// recorder holds only its steps under way, and what it wrote is every step.
func TestARecorderLetsGoOfEndedSteps(t *testing.T) {
	t.Parallel()
	st := storeWithRun(t)
	c := NewCommitter(st)
	defer c.Close()
	rec := NewRecorder(c, "r1", nil, nil)
	rec.Generation = 1
	now := time.Now().UTC().Truncate(time.Microsecond)
	for visit := 1; visit <= 500; visit++ {
		s := &engine.StepRecord{StepOrder: visit, Node: "body", Type: "set", Visit: visit, Status: engine.StatusPending}
		require.NoError(t, rec.Step(s))
		require.NoError(t, rec.Flush())
		s.Status, s.Attempts, s.StartedAt = engine.StatusRunning, 1, &now
		require.NoError(t, rec.Step(s))
		require.NoError(t, rec.Flush())
		s.Status, s.FinishedAt = engine.StatusSuccess, &now
		require.NoError(t, rec.Step(s))
		require.NoError(t, rec.Flush())
	}
	running := &engine.StepRecord{StepOrder: 501, Node: "slow", Type: "http", Visit: 1, Status: engine.StatusRunning, Attempts: 1, StartedAt: &now}
	require.NoError(t, rec.Step(running))
	require.NoError(t, rec.Sync())
	rec.mu.Lock()
	saved := len(rec.saved)
	rec.mu.Unlock()
	require.Equal(t, 1, saved, "only the step under way")
	steps, err := st.Steps(t.Context(), "r1")
	require.NoError(t, err)
	require.Len(t, steps, 501)
	require.Equal(t, engine.StatusSuccess, steps[499].Status)
}

// gatedStore saves no batch until its gate opens.
type gatedStore struct {
	store.Store
	gate chan struct{}
}

func (s gatedStore) SaveBatch(ctx context.Context, bs []store.Batch) error {
	<-s.gate
	return s.Store.SaveBatch(ctx, bs)
}

// A run whose records are made faster than the disk writes them waits for
// the disk once maxPending records wait: what it holds in memory stays
// bounded. Submit returns only once earlier records were answered.
func TestSubmitWaitsWhenTooMuchWaitsForTheDisk(t *testing.T) {
	t.Parallel()
	st := storeWithRun(t)
	gate := make(chan struct{})
	c := NewCommitter(gatedStore{st, gate})
	defer c.Close()
	var answered atomic.Int64
	batch := func(from int) store.Batch {
		b := store.Batch{RunID: "r1"}
		for i := range 1000 {
			b.Events = append(b.Events, store.Event{Type: "variable_set", Node: fmt.Sprint("n", from+i)})
		}
		return b
	}
	n := 0
	for ; n*1000 < maxPending; n++ {
		c.Submit(batch(n*1000), func(error) { answered.Add(1) })
	}
	got := make(chan int64)
	go func() {
		c.Submit(batch(n*1000), func(error) { answered.Add(1) })
		got <- answered.Load()
	}()
	close(gate)
	require.Positive(t, <-got, "the submission past the bound waited for an answer")
	c.Sync()
	evs, err := st.Events(t.Context(), "r1", 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, (n+1)*1000, "every record is written")
}
