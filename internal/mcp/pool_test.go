package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/internal/mcp/mcptest"
	"github.com/skeinhq/skein/internal/proc/proctest"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

func TestListTools(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p paths, m string) []*workflow.MCPServer { return []*workflow.MCPServer{p.everythingServer(m)} })
	ctx := context.Background()

	tools, err := b.pool.Tools(ctx, "everything")
	require.NoError(t, err)
	names := map[string]bool{}
	for _, tl := range tools {
		names[tl.Name] = true
	}
	for _, want := range []string{"echo", "get-sum", "get-tiny-image", "get-structured-content"} {
		require.True(t, names[want], "everything lists %s; it lists %v", want, names)
	}

	again, err := b.pool.Tools(ctx, "everything")
	require.NoError(t, err)
	require.Same(t, tools[0], again[0], "the second list comes from the session's cache")

	b.pool.Evict("everything")
	fresh, err := b.pool.Tools(ctx, "everything")
	require.NoError(t, err)
	require.NotSame(t, tools[0], fresh[0], "after Evict the tools are listed again")
	require.Equal(t, len(tools), len(fresh))
}

func TestUnknownToolAndServer(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p paths, m string) []*workflow.MCPServer { return []*workflow.MCPServer{p.everythingServer(m)} })
	ctx := context.Background()

	_, err := b.pool.Tool(ctx, "everything", "ecko")
	e := node.AsError(err)
	require.Equal(t, "unknown_tool", e.Code)
	require.Equal(t, node.CategoryValidation, e.Category)
	require.True(t, e.Permanent)
	require.Contains(t, e.Message, `did you mean "echo"?`)

	_, err = b.pool.Tool(ctx, "nope", "echo")
	e = node.AsError(err)
	require.Equal(t, "unknown_server", e.Code)
	require.Contains(t, e.Message, `MCP server "nope" is not declared`)
}

// Nodes that use a server at once share one start and one process.
func TestConcurrentFirstUse(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p paths, m string) []*workflow.MCPServer { return []*workflow.MCPServer{p.everythingServer(m)} })
	ctx := context.Background()

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := b.pool.CallTool(ctx, "everything", "echo", map[string]any{"message": "hi"})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	pid := mcp.ServerPID(b.pool, "everything")
	require.NotZero(t, pid)
	require.Equal(t, []int{pid}, proctest.Survivors(markerVar, b.marker), "one server process for every caller")
}

// args and env of a stdio server are templates over inputs and secrets.
func TestTemplatesInArgsAndEnv(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p paths, m string) []*workflow.MCPServer {
		s := p.everythingServer(m)
		s.Env["GREETING"] = "hello {{ inputs.who }}"
		s.Env["API_TOKEN"] = "{{ secrets.TOKEN }}"
		s.Env["UNRELATED"] = "{{ 1 + 1 }}"
		return []*workflow.MCPServer{s}
	})
	c := callKind(context.Background(), t, b.pool, "everything", "get-env", nil, 1)
	require.Nil(t, c.err)
	require.Equal(t, "hello world", c.out["GREETING"])
	require.Equal(t, "s3cr3t-token", c.out["API_TOKEN"])
	require.Equal(t, "2", c.out["UNRELATED"])
	require.NotContains(t, c.out, "GOPATH", "only PATH, HOME, LANG, TMPDIR and USER come from Skein's environment")

	var result map[string]any
	for _, ev := range c.events {
		if ev.kind == "tool_result" {
			result = ev.data
		}
	}
	require.NotNil(t, result)
	require.NotContains(t, result["text"], "s3cr3t-token", "the event's text is redacted")
	require.Contains(t, result["text"], "***")
}

func TestTemplateErrorInArgs(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p paths, m string) []*workflow.MCPServer {
		s := p.everythingServer(m)
		s.Args = []string{"{{ inputs.who + }}"}
		return []*workflow.MCPServer{s}
	})
	_, err := b.pool.Tools(context.Background(), "everything")
	e := node.AsError(err)
	require.Equal(t, mcp.CategoryStart, e.Category)
	require.Equal(t, "template", e.Code)
	require.Contains(t, e.Message, "args[0]")
	require.Empty(t, proctest.Survivors(markerVar, b.marker), "nothing was spawned")
}

// A streamable HTTP server gets the server's headers, rendered.
func TestHTTPServer(t *testing.T) {
	t.Parallel()
	srv := mcptest.New(t)
	srv.AddTool("greet", map[string]any{
		"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"},
	}, func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
		return mcptest.Text(`{"greeting": "hello ` + args["name"].(string) + `"}`), nil
	})
	pool := mcp.NewPool([]*workflow.MCPServer{{
		Name: "web", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer {{ secrets.TOKEN }}"},
	}}, mcp.Scope(nil, map[string]string{"TOKEN": "abc123"}))
	t.Cleanup(func() { require.NoError(t, pool.Close()) })

	c := callKind(context.Background(), t, pool, "web", "greet", map[string]any{"name": "ada"}, 1)
	require.Nil(t, c.err)
	require.Equal(t, map[string]any{"greeting": "hello ada"}, c.out)
	require.Equal(t, "Bearer abc123", srv.Header("Authorization"))
}

// A streamable HTTP server that forgot the session (it restarted: 404 Not
// Found) gets a new session at once, and the request is sent again in it:
// the node does not fail (it failed, and only a retry reconnected).
func TestHTTPServerForgetsTheSession(t *testing.T) {
	t.Parallel()
	srv := mcptest.New(t)
	var calls atomic.Int32
	srv.AddTool("count", nil, func(context.Context, map[string]any) (*sdk.CallToolResult, error) {
		return mcptest.Text(fmt.Sprintf(`{"n": %d}`, calls.Add(1))), nil
	})
	pool := mcp.NewPool([]*workflow.MCPServer{{Name: "web", URL: srv.URL}}, nil)
	t.Cleanup(func() { require.NoError(t, pool.Close()) })

	c := callKind(context.Background(), t, pool, "web", "count", nil, 1)
	require.Nil(t, c.err)
	for _, what := range []string{"tools/call", "tools/list"} {
		srv.ForgetSessions()
		if what == "tools/list" {
			pool.Evict("web") // the next use lists the tools again
		}
		c = callKind(context.Background(), t, pool, "web", "count", nil, 1)
		require.Nil(t, c.err, "%s in a forgotten session: %v", what, c.err)
	}
	require.Equal(t, map[string]any{"n": 3}, c.out, "each call ran once")
}

func TestHTTPServerUnreachable(t *testing.T) {
	t.Parallel()
	pool := mcp.NewPool([]*workflow.MCPServer{{Name: "web", URL: "http://127.0.0.1:1/mcp"}}, nil)
	t.Cleanup(func() { require.NoError(t, pool.Close()) })
	_, err := pool.Tools(context.Background(), "web")
	e := node.AsError(err)
	require.Equal(t, mcp.CategoryStart, e.Category)
	require.Equal(t, "connect", e.Code)
	require.Contains(t, e.Message, "127.0.0.1:1")
}

func TestAllowList(t *testing.T) {
	t.Parallel()
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not in PATH")
	}
	cases := []struct {
		name    string
		list    []string
		program string
		ok      bool
	}{
		{"bare name found in PATH", []string{"node"}, nodeBin, true},
		{"absolute path", []string{nodeBin}, nodeBin, true},
		{"another program", []string{"node"}, "/bin/sh", false},
		{"same name elsewhere", []string{"node"}, "/tmp/evil/node", false},
		{"empty list", nil, nodeBin, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := mcp.AllowList(tc.list...)(tc.program)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

// The Allow hook is asked before anything is spawned.
func TestNotAllowed(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p paths, m string) []*workflow.MCPServer { return []*workflow.MCPServer{p.faultyServer(m)} })
	var asked []string
	b.pool.Allow = func(program string) error {
		asked = append(asked, program)
		return errors.New("the operator did not list it")
	}
	c := callKind(context.Background(), t, b.pool, "faulty", "echo", map[string]any{"message": "x"}, 1)
	require.NotNil(t, c.err)
	require.Equal(t, mcp.CategoryStart, c.err.Category)
	require.Equal(t, "command_not_allowed", c.err.Code)
	require.True(t, c.err.Permanent)
	require.Contains(t, c.err.Message, "the operator did not list it")
	require.Equal(t, []string{b.paths.node}, asked)
	require.Empty(t, proctest.Survivors(markerVar, b.marker))
}

func TestClosedPool(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p paths, m string) []*workflow.MCPServer { return []*workflow.MCPServer{p.everythingServer(m)} })
	_, err := b.pool.Tools(context.Background(), "everything")
	require.NoError(t, err)
	require.NoError(t, b.pool.Close())
	requireNoSurvivors(t, b.marker)
	_, err = b.pool.Tools(context.Background(), "everything")
	require.ErrorIs(t, err, mcp.ErrClosed)
	require.NoError(t, b.pool.Close(), "Close is idempotent")
}

// Loading, validating and planning a workflow, and making its pool, start
// nothing: a server is spawned on first use only.
func TestNothingSpawnsBeforeFirstUse(t *testing.T) {
	t.Parallel()
	p := servers(t)
	proof := filepath.Join(t.TempDir(), "spawned")
	file := filepath.Join(t.TempDir(), "flow.yaml")
	src := fmt.Sprintf(`
version: 1
name: lazy
mcp_servers:
  touch:
    command: %s
    args: ["-e", "require('fs').writeFileSync(process.argv[1], 'x')", %s]
nodes:
  - {id: call, type: mcp, server: touch, tool: anything}
`, q(p.node), q(proof))
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))

	w, ds := workflow.Load(file, node.Default)
	require.False(t, ds.HasErrors(), ds.Error())
	_, err := engine.NewPlan(w, node.Default)
	require.NoError(t, err)
	pool := mcp.NewPool(w.MCPServers, nil)
	require.NoFileExists(t, proof, "nothing is spawned before the first use")
	require.False(t, mcp.ClientMade(pool), "a pool makes its MCP client at the first start: most runs start no server")

	_, err = pool.Tools(context.Background(), "touch")
	require.Equal(t, mcp.CategoryStart, node.AsError(err).Category, "the script is no MCP server")
	require.FileExists(t, proof, "the first use spawns the server")
	require.True(t, mcp.ClientMade(pool))
	require.NoError(t, pool.Close())
}
