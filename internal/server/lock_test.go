package server_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/mcp/mcptest"
	"github.com/skeinhq/skein/internal/runner"
)

// Workflows served from a folder use the lock file beside each one: the
// first run writes it, a changed tool fails a later run, and a lock
// written by skein lock update is read by the next run, without a restart.
func TestServedWorkflowUsesItsLockFile(t *testing.T) {
	t.Parallel()
	tools := mcptest.New(t)
	echo := func(context.Context, map[string]any) (*sdk.CallToolResult, error) { return mcptest.Text("hi"), nil }
	tools.AddDescribedTool("echo", "Echoes.", nil, echo)
	flows := t.TempDir()
	file := filepath.Join(flows, "pinned.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`version: 1
name: pinned
mcp_servers:
  tools: {url: "`+tools.URL+`"}
nodes:
  - {id: say, type: mcp, server: tools, tool: echo}
`), 0o644))
	p := newInproc(t, inprocOpts{flows: flows})

	require.Equal(t, "completed", p.waitEnd(p.start("pinned", `{}`)))
	_, err := os.Stat(filepath.Join(flows, "pinned.skein.lock"))
	require.NoError(t, err)

	tools.AddDescribedTool("echo", "Echoes, and more.", nil, echo)
	require.Equal(t, "failed", p.waitEnd(p.start("pinned", `{}`)))

	_, err = runner.UpdateLock(t.Context(), nil, runner.LockRequest{File: file})
	require.NoError(t, err)
	require.Equal(t, "completed", p.waitEnd(p.start("pinned", `{}`)))
}
