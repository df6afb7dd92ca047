package cli_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMCPCancelRun: one client's run_workflow is stopped by another
// client's cancel_run; the run ends cancelled and the first call returns
// it as its result.
func TestMCPCancelRun(t *testing.T) {
	t.Parallel()
	url, _ := serveMCP(t, "mcp", "--http", "127.0.0.1:0", "--dir", t.TempDir())
	runner, other := connectMCP(t, url, ""), connectMCP(t, url, "")

	done := make(chan map[string]any, 1)
	go func() {
		res := callTool(t, runner, "run_workflow", map[string]any{"file": "testdata/long.yaml"})
		done <- toolResult[map[string]any](t, res)
	}()
	var id string
	require.Eventually(t, func() bool {
		out := toolResult[map[string]any](t, callTool(t, other, "list_runs", map[string]any{"status": "running"}))
		runs, _ := out["runs"].([]any)
		if len(runs) == 1 {
			id = runs[0].(map[string]any)["id"].(string)
		}
		return id != ""
	}, 10*time.Second, 20*time.Millisecond, "the run never showed up as running")

	begin := time.Now()
	out := toolResult[map[string]any](t, callTool(t, other, "cancel_run", map[string]any{"id": id}))
	require.Equal(t, id, out["execution_id"])
	require.Equal(t, "cancelled", out["status"])
	run := <-done
	require.Less(t, time.Since(begin), 2*time.Second)
	require.Equal(t, "cancelled", run["status"])
	require.Equal(t, id, run["execution_id"])
}
