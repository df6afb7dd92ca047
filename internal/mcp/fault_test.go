package mcp_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/internal/proc/proctest"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Each way a server can fail ends the node with a clear, categorised error,
// and leaves no process behind (setup checks it when the test ends).
func TestFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		server   func(p paths, marker string) *workflow.MCPServer
		tool     string
		timeout  time.Duration
		category string
		code     string
		message  []string
		stderr   string
		perm     bool
	}{
		{
			name: "command not found",
			server: func(p paths, m string) *workflow.MCPServer {
				return &workflow.MCPServer{Name: "faulty", Command: "skein-no-such-mcp-server", Env: map[string]string{markerVar: m}}
			},
			tool: "echo", category: mcp.CategoryStart, code: "command_not_found", perm: true,
			message: []string{`MCP server "faulty"`, `command "skein-no-such-mcp-server" not found`},
		},
		{
			name:     "exits at start",
			server:   func(p paths, m string) *workflow.MCPServer { return p.faultyServer(m, "--exit-at-start") },
			tool:     "echo",
			category: mcp.CategoryStart, code: "exited",
			message: []string{"exited during the MCP handshake (exit status 2)"},
			stderr:  "faulty: refusing to start",
		},
		{
			name:     "exits during a call",
			server:   func(p paths, m string) *workflow.MCPServer { return p.faultyServer(m) },
			tool:     "exit",
			category: mcp.CategoryProtocol, code: "server_exited",
			message: []string{`the server exited during tools/call "exit" (exit status 3)`},
			stderr:  "faulty: exiting in the middle of a call",
		},
		{
			name:     "answers with a JSON-RPC error",
			server:   func(p paths, m string) *workflow.MCPServer { return p.faultyServer(m) },
			tool:     "rpcerror",
			category: mcp.CategoryProtocol, code: "protocol_error",
			message: []string{`tools/call "rpcerror" was answered with an error: boom from faulty (JSON-RPC code -32000)`},
		},
		{
			name:     "writes garbage",
			server:   func(p paths, m string) *workflow.MCPServer { return p.faultyServer(m) },
			tool:     "garbage",
			category: mcp.CategoryProtocol,
			code:     "protocol_error",
			message:  []string{`tools/call "garbage" failed: the server's answer is not valid MCP`},
		},
		{
			name:     "tool reports an error",
			server:   func(p paths, m string) *workflow.MCPServer { return p.faultyServer(m) },
			tool:     "fail",
			category: mcp.CategoryToolError, code: "mcp_error",
			message: []string{`tool "fail" of MCP server "faulty" failed: the tool failed on purpose`},
		},
		{
			name:     "never answers",
			server:   func(p paths, m string) *workflow.MCPServer { return p.faultyServer(m) },
			tool:     "hang",
			timeout:  time.Second,
			category: node.CategoryTimeout, code: "timeout",
			message: []string{`tools/call "hang" did not finish`},
		},
		{
			name:     "hangs the whole server",
			server:   func(p paths, m string) *workflow.MCPServer { return p.faultyServer(m) },
			tool:     "spin",
			timeout:  time.Second,
			category: node.CategoryTimeout, code: "timeout",
			message: []string{`tools/call "spin" did not finish`, "did not answer a ping either, so it was stopped"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(p paths, m string) []*workflow.MCPServer { return []*workflow.MCPServer{tc.server(p, m)} })
			ctx := context.Background()
			if tc.timeout > 0 {
				// Warm the session first, so the timeout measures the call.
				_, err := b.pool.Tools(ctx, "faulty")
				require.NoError(t, err)
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			c := callKind(ctx, t, b.pool, "faulty", tc.tool, nil, 1)
			require.NotNil(t, c.err, "the node fails")
			t.Logf("%s/%s in %s: %s %v", c.err.Category, c.err.Code, c.took, c.err.Message, c.err.Details)
			require.Equal(t, tc.category, c.err.Category)
			if tc.code != "" {
				require.Equal(t, tc.code, c.err.Code)
			}
			require.Equal(t, tc.perm, c.err.Permanent)
			for _, m := range tc.message {
				require.Contains(t, c.err.Message, m)
			}
			if tc.stderr != "" {
				require.Contains(t, c.err.Details["stderr"], tc.stderr, "the error carries the server's stderr")
			}
			// A call on a server that never answers returns at all only
			// because its timeout stopped it: no bound on how soon.
		})
	}
}

// A server that hangs is stopped as soon as the call times out, without
// waiting for the pool to close; the next call starts it afresh.
func TestHungServerIsStoppedAndRestarted(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p paths, m string) []*workflow.MCPServer { return []*workflow.MCPServer{p.faultyServer(m)} })
	_, err := b.pool.Tools(context.Background(), "faulty")
	require.NoError(t, err)
	hung := mcp.ServerPID(b.pool, "faulty")
	// The call's timeout starts once the server is up, however long that
	// took: the call is what times out.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()

	c := callKind(ctx, t, b.pool, "faulty", "spin", nil, 1)
	require.Equal(t, node.CategoryTimeout, c.err.Category)
	require.Eventually(t, func() bool { return len(proctest.Survivors(markerVar, b.marker)) == 0 },
		time.Minute, 20*time.Millisecond, "the hung server is killed without waiting for Close")

	c = callKind(context.Background(), t, b.pool, "faulty", "echo", map[string]any{"message": "again"}, 2)
	require.Nil(t, c.err)
	require.Equal(t, map[string]any{"text": "echo: again"}, c.out)
	require.NotEqual(t, hung, mcp.ServerPID(b.pool, "faulty"), "a new process")
}

// A server that exited is started again by the next call (a retry).
func TestCrashedServerIsRestarted(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p paths, m string) []*workflow.MCPServer { return []*workflow.MCPServer{p.faultyServer(m)} })
	c := callKind(context.Background(), t, b.pool, "faulty", "exit", nil, 1)
	require.Equal(t, "server_exited", c.err.Code)
	c = callKind(context.Background(), t, b.pool, "faulty", "echo", map[string]any{"message": "back"}, 2)
	require.Nil(t, c.err)
	require.Equal(t, "echo: back", c.out["text"])
}

// A server that exits during a call while a child it started still holds
// its output open is noticed at once, not when the node times out: the
// stream never ends, but the process did.
func TestCrashedServerWithChildHoldingOutput(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p paths, m string) []*workflow.MCPServer { return []*workflow.MCPServer{p.faultyServer(m)} })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := callKind(ctx, t, b.pool, "faulty", "orphan", nil, 1)
	require.NotNil(t, c.err)
	require.Equal(t, mcp.CategoryProtocol, c.err.Category, c.err.Message)
	require.Equal(t, "server_exited", c.err.Code)
	require.Contains(t, c.err.Message, `the server exited during tools/call "orphan" (exit status 3)`)
	require.Contains(t, c.err.Details["stderr"], "faulty: exiting, my child keeps stdout")
	// server_exited, not a timeout: noticed when the server exits, not
	// when the call's 30 s run out.
	require.Eventually(t, func() bool { return len(proctest.Survivors(markerVar, b.marker)) == 0 },
		time.Minute, 20*time.Millisecond, "the child holding the output is killed with the server's group")

	c = callKind(context.Background(), t, b.pool, "faulty", "echo", map[string]any{"message": "back"}, 2)
	require.Nil(t, c.err)
	require.Equal(t, "echo: back", c.out["text"])
}

// A server that ignores the end of its stdin does not stall Close: it is
// killed after CloseGrace, with everything in its process group.
func TestCloseKillsStubbornServer(t *testing.T) {
	t.Parallel()
	p := servers(t)
	marker := newMarker(t)
	pool := mcp.NewPool([]*workflow.MCPServer{p.faultyServer(marker, "--ignore-stdin-close")}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	// A call that never returns, on a server that still answers pings: it
	// keeps running after the timeout, until Close.
	c := callKind(ctx, t, pool, "faulty", "hang", nil, 1)
	require.Equal(t, node.CategoryTimeout, c.err.Category)
	require.NotContains(t, c.err.Message, "ping", "the server still answers pings, so it is kept")
	require.Len(t, proctest.Survivors(markerVar, marker), 1)

	// The server ignores the end of its stdin: Close returns only because
	// it killed it (a minute is a safety net, not a bound).
	within(t, time.Minute, "Close", func() { require.NoError(t, pool.Close()) })
	requireNoSurvivors(t, marker)
}

// Directives in a tool's JSON answer reach the engine.
func TestDirectivesFromTool(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p paths, m string) []*workflow.MCPServer { return []*workflow.MCPServer{p.faultyServer(m)} })
	c := callKind(context.Background(), t, b.pool, "faulty", "route", nil, 1)
	require.Nil(t, c.err)
	require.Equal(t, map[string]any{"_route": "b", "n": 1}, c.out)
}
