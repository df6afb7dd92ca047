package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// A write of 85 steps and 85 events goes by INSERTs of 64, 16, 4 and 1
// rows, prepared by the first write that needs them (and only those: a
// store whose writes are short never parses a 64-row INSERT); every row is
// stored and the events are numbered on without a gap.
func TestMultiRowInsertsPreparedWhenNeeded(t *testing.T) {
	ctx := t.Context()
	s, err := Open(filepath.Join(t.TempDir(), "skein.db"))
	require.NoError(t, err)
	defer func() { _ = s.Close() }()
	require.NoError(t, s.CreateRun(ctx, &store.Run{ID: "r1", Workflow: "w"}))

	const n = 64 + 16 + 4 + 1
	write := func(visit, n int) {
		steps := make([]*store.Step, n)
		events := make([]store.Event, n)
		for i := range steps {
			steps[i] = &store.Step{Node: fmt.Sprintf("n%d", i), Visit: visit, StepOrder: visit*100 + i, Type: "set", Status: "success",
				Output: map[string]any{"i": i}}
			events[i] = store.Event{Type: "node_finished", Node: steps[i].Node, Visit: visit}
		}
		require.NoError(t, s.SaveBatch(ctx, []store.Batch{{RunID: "r1", Steps: steps, Events: events}}))
	}
	prepared := func() int {
		s.multiMu.Lock()
		defer s.multiMu.Unlock()
		return len(s.multi)
	}

	write(1, 5)
	require.Equal(t, 2, prepared(), "5 rows: the 4-row INSERTs of steps and of events")
	write(2, n)
	require.Equal(t, 6, prepared(), "64, 16 and 4 rows, of steps and of events")
	write(3, n)

	var steps, events, maxSeq int
	require.NoError(t, s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM steps WHERE run_id = 'r1'`).Scan(&steps))
	require.NoError(t, s.r.QueryRowContext(ctx, `SELECT COUNT(*), MAX(seq) FROM events WHERE run_id = 'r1'`).Scan(&events, &maxSeq))
	require.Equal(t, 5+2*n, steps)
	require.Equal(t, 5+2*n, events)
	require.Equal(t, events, maxSeq, "events numbered without a gap")
}
