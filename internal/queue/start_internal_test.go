package queue

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStartGroupsHoldAtMost64: a group of starts takes the first 64 that
// wait, in order; the others wait for the next.
func TestStartGroupsHoldAtMost64(t *testing.T) {
	g := &starts{}
	for range 100 {
		g.queue = append(g.queue, &start{})
	}
	want := g.queue[:64:64]
	rest := g.queue[64:]
	group := g.take()
	require.Len(t, group, maxStarts)
	require.Equal(t, 64, maxStarts)
	for i := range group {
		require.Same(t, want[i], group[i])
	}
	require.Len(t, g.queue, 36)
	require.Same(t, rest[0], g.queue[0])
	require.Len(t, g.take(), 36)
	require.Empty(t, g.queue)
}
