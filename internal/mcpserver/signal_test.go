package mcpserver_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/mcpserver"
)

// TestMCPSignalRun: an approval workflow run through MCP waits; signal_run
// approves it and returns the run, completed with the approver's data; a
// signal to a node that does not wait is a tool error.
func TestMCPSignalRun(t *testing.T) {
	t.Parallel()
	url, _ := serveMCP(t, t.TempDir(), mcpserver.HTTPConfig{})
	cs := connectMCP(t, url, "")
	file, err := filepath.Abs("../../examples/approval.yaml")
	require.NoError(t, err)

	run := toolResult[map[string]any](t, callTool(t, cs, "run_workflow", map[string]any{"file": file, "inputs": map[string]any{"to": "ada@example.com"}}))
	require.Equal(t, "waiting", run["status"])
	id := run["execution_id"].(string)

	bad := toolError(t, callTool(t, cs, "signal_run", map[string]any{"id": id, "node": "draft", "data": map[string]any{"approved": true}}))
	require.Contains(t, bad.Message, "only a wait with until: signal (or an agent with approve_tools) takes signals")

	done := toolResult[map[string]any](t, callTool(t, cs, "signal_run", map[string]any{"id": id, "node": "approve",
		"data": map[string]any{"approved": true, "by": "Grace"}}))
	require.Equal(t, id, done["execution_id"])
	require.Equal(t, "completed", done["status"])
	outs := done["outputs"].(map[string]any)
	require.Equal(t, "To ada@example.com: the release is ready. (approved by Grace)", outs["result"])
	require.Equal(t, map[string]any{"approved": true, "by": "Grace"}, outs["approval"])

	again := toolError(t, callTool(t, cs, "signal_run", map[string]any{"id": id, "node": "approve"}))
	require.Equal(t, "completed", again.Code, "a completed run takes no signal")
}
