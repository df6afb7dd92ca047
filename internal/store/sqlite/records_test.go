package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// A write of 85 steps and 85 events goes by INSERTs of 64, 16, 4 and 1
// rows: unprepared the first time, prepared from the second, every row
// stored either way and the events numbered on without a gap.
func TestMultiRowInsertsPreparedAfterFirstUse(t *testing.T) {
	ctx := t.Context()
	s, err := Open(filepath.Join(t.TempDir(), "skein.db"))
	require.NoError(t, err)
	defer func() { _ = s.Close() }()
	require.NoError(t, s.CreateRun(ctx, &store.Run{ID: "r1", Workflow: "w"}))

	const n = 64 + 16 + 4 + 1
	write := func(visit int) {
		steps := make([]*store.Step, n)
		events := make([]store.Event, n)
		for i := range steps {
			steps[i] = &store.Step{Node: fmt.Sprintf("n%d", i), Visit: visit, StepOrder: visit*n + i, Type: "set", Status: "success",
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

	write(1)
	require.Zero(t, prepared(), "the first write ran its multi-row INSERTs unprepared")
	write(2)
	require.Equal(t, 6, prepared(), "64, 16 and 4 rows, of steps and of events, prepared before the second write")
	write(3)

	var steps, events, maxSeq int
	require.NoError(t, s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM steps WHERE run_id = 'r1'`).Scan(&steps))
	require.NoError(t, s.r.QueryRowContext(ctx, `SELECT COUNT(*), MAX(seq) FROM events WHERE run_id = 'r1'`).Scan(&events, &maxSeq))
	require.Equal(t, 3*n, steps)
	require.Equal(t, 3*n, events)
	require.Equal(t, events, maxSeq, "events numbered 1 to %d without a gap", 3*n)
}
