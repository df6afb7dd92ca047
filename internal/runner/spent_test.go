package runner

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

// A run whose execution died before it recorded its totals resumes from
// what its recorded steps and its child runs' steps spent; one that
// recorded them, from its totals (which hold its retries' spend too).
func TestSpentBefore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	r, err := Open(Config{Dir: dir, Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })

	now := time.Now()
	parent := &store.Run{ID: "p", Workflow: "w", Status: "running", StartedAt: now}
	child := &store.Run{ID: "p.sub1", Workflow: "c", Status: "running", StartedAt: now, ParentID: "p"}
	require.NoError(t, st.CreateRun(ctx, parent))
	require.NoError(t, st.CreateRun(ctx, child))
	require.NoError(t, st.SaveBatch(ctx, []store.Batch{
		{RunID: "p", Steps: []*store.Step{
			{RunID: "p", StepOrder: 1, Node: "ask", Visit: 1, Status: "success", Tokens: 300, CostUSD: 0.25},
			{RunID: "p", StepOrder: 2, Node: "sub", Visit: 1, Status: "running"},
		}},
		{RunID: "p.sub1", Steps: []*store.Step{
			{RunID: "p.sub1", StepOrder: 1, Node: "inner", Visit: 1, Status: "success", Tokens: 700, CostUSD: 0.5},
		}},
	}))
	hist, err := st.StepHistory(ctx, "p")
	require.NoError(t, err)
	require.Equal(t, engine.Spent{Tokens: 1000, CostUSD: 0.75}, r.spentBefore(ctx, parent, hist), "steps and children")

	parent.Tokens, parent.CostUSD = 1500, 1.0 // recorded totals, a retry's spend included
	require.Equal(t, engine.Spent{Tokens: 1500, CostUSD: 1.0}, r.spentBefore(ctx, parent, hist), "the recorded totals")
}
