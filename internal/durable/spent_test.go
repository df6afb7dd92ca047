package durable_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

// TestSpentCountsAKeptStepOnce: a run that went on after its signal keeps
// its earlier steps as they were in its next execution; what they spent is
// counted once, while a step that ran again spends again.
func TestSpentCountsAKeptStepOnce(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "skein.db"))
	require.NoError(t, err)
	defer st.Close()
	ctx := context.Background()
	run := &store.Run{ID: "r1", Workflow: "w"}
	require.NoError(t, st.CreateRun(ctx, run))
	at := func(m int) *time.Time {
		v := time.Date(2026, 1, 1, 0, m, 0, 0, time.UTC)
		return &v
	}
	step := func(gen int, node string, finished int, tokens int) *store.Step {
		return &store.Step{Node: node, Visit: 1, Status: engine.StatusSuccess, ConfigHash: "h-" + node, Generation: gen,
			StartedAt: at(finished - 1), FinishedAt: at(finished), Tokens: tokens}
	}
	hist := []*store.Step{
		step(1, "draft", 1, 100),
		step(2, "draft", 1, 100), // kept: the same step
		step(1, "ask", 2, 40),
		step(2, "ask", 5, 40), // ran again
	}
	require.Equal(t, 180, durable.Spent(ctx, st, run, hist).Tokens)
}
