package mcp_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/internal/proc/proctest"
	"github.com/skeinhq/skein/workflow"
)

// TestSharedPoolsAcrossRuns: on a worker, runs whose servers start the same
// way share one server process; a run whose secret differs gets its own;
// a pool no run uses is closed after Idle, and its process exits.
func TestSharedPoolsAcrossRuns(t *testing.T) {
	t.Parallel()
	p := servers(t)
	marker := newMarker(t)
	shared := &mcp.Shared{Idle: 50 * time.Millisecond}
	t.Cleanup(func() {
		require.NoError(t, shared.Close())
		requireNoSurvivors(t, marker)
	})
	srv := func() []*workflow.MCPServer {
		s := p.everythingServer(marker)
		s.Env["API_TOKEN"] = "{{ secrets.TOKEN }}"
		return []*workflow.MCPServer{s}
	}
	ctx := context.Background()
	a, releaseA := shared.Acquire(srv(), mcp.Scope(map[string]any{"who": "Ada"}, map[string]string{"TOKEN": "one"}))
	b, releaseB := shared.Acquire(srv(), mcp.Scope(map[string]any{"who": "Bo"}, map[string]string{"TOKEN": "one"}))
	require.Same(t, a, b, "two runs whose servers start the same way share one pool")
	c, releaseC := shared.Acquire(srv(), mcp.Scope(nil, map[string]string{"TOKEN": "two"}))
	require.NotSame(t, a, c, "another secret is another server")
	require.Equal(t, 2, shared.Len())

	_, err := a.Tools(ctx, "everything")
	require.NoError(t, err)
	require.Len(t, proctest.Survivors(markerVar, marker), 1, "one server process for both runs")

	releaseA()
	releaseA() // a second release changes nothing
	_, err = b.Tools(ctx, "everything")
	require.NoError(t, err, "the pool outlives one of its runs")
	releaseB()
	releaseC()
	require.Eventually(t, func() bool { return shared.Len() == 0 && len(proctest.Survivors(markerVar, marker)) == 0 },
		time.Minute, 10*time.Millisecond, "idle pools close, and their servers exit")
}
