package durable_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

// A step output over 256 KiB is kept in a file of the run folder, not in
// the database, and reads back whole.
func TestLargeOutputsGoToFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	defer st.Close()
	ctx := context.Background()
	require.NoError(t, st.CreateRun(ctx, &store.Run{ID: "r1", Workflow: "w"}))
	c := durable.NewCommitter(st)
	defer c.Close()
	rec := durable.NewRecorder(c, "r1", filepath.Join(dir, "run"))

	big := strings.Repeat("x", 300<<10)
	now := time.Now()
	require.NoError(t, rec.Step(&engine.StepRecord{StepOrder: 1, Node: "big", Visit: 1, Status: engine.StatusSuccess,
		Output: map[string]any{"stdout": big}, Directives: map[string]any{"_route": "b"}, StartedAt: &now, FinishedAt: &now}))
	require.NoError(t, rec.Step(&engine.StepRecord{StepOrder: 2, Node: "small", Visit: 1, Status: engine.StatusSuccess,
		Output: map[string]any{"stdout": "hi"}, StartedAt: &now, FinishedAt: &now}))
	require.NoError(t, rec.Sync())

	steps, err := st.Steps(ctx, "r1")
	require.NoError(t, err)
	require.Len(t, steps, 2)
	require.Nil(t, steps[0].Output, "the large output is not in the database")
	require.FileExists(t, steps[0].OutputRef)
	require.True(t, strings.HasPrefix(steps[0].OutputRef, filepath.Join(dir, "run", "big")))
	out, directives, err := durable.Output(steps[0])
	require.NoError(t, err)
	require.Equal(t, big, out["stdout"])
	require.Equal(t, map[string]any{"_route": "b"}, directives)
	require.Equal(t, "hi", steps[1].Output["stdout"])

	info, err := os.Stat(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	require.Less(t, info.Size(), int64(256<<10), "the database stays small")
}
