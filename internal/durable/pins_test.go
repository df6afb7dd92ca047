package durable_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
)

// A pinned step whose output was stored masked is not reused as if ***
// were its value: it runs again, and the reason says why.
func TestPinOfMaskedStepRunsAgain(t *testing.T) {
	t.Parallel()
	steps := []*store.Step{
		{Node: "token", Visit: 1, Status: engine.StatusSuccess, Output: map[string]any{"text": "***"}, Masked: true},
		{Node: "plain", Visit: 1, Status: engine.StatusSuccess, Output: map[string]any{"text": "hello"}},
	}
	r := durable.ForPins(steps, []string{"token", "plain"})
	got, ok := r.Reuse(engine.ReuseQuery{Node: "token", Visit: 1, Hash: "h1"})
	require.False(t, ok, "a masked step is never pinned")
	require.Contains(t, got.Miss, "stored masked, so it runs again")

	got, ok = r.Reuse(engine.ReuseQuery{Node: "plain", Visit: 1, Hash: "h2"})
	require.True(t, ok)
	require.True(t, got.Pinned)
	require.Equal(t, "hello", got.Output["text"])
}
