package mcpserver_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/mcpserver"
)

// TestMCPCancelRun: one client's run_workflow is stopped by another
// client's cancel_run; the run ends cancelled and the first call returns
// it as its result.
func TestMCPCancelRun(t *testing.T) {
	t.Parallel()
	url, _ := serveMCP(t, t.TempDir(), mcpserver.HTTPConfig{})
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
	}, 60*time.Second, 20*time.Millisecond, "the run never showed up as running")

	out := toolResult[map[string]any](t, callTool(t, other, "cancel_run", map[string]any{"id": id}))
	require.Equal(t, id, out["execution_id"])
	require.Equal(t, "cancelled", out["status"])
	var run map[string]any
	select { // the node sleeps an hour: the call returns only because the cancel stopped it
	case run = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the run_workflow call did not return after the cancel")
	}
	require.Equal(t, "cancelled", run["status"])
	require.Equal(t, id, run["execution_id"])
}

// TestMCPCancelRunLetFinish: cancel_run with let_finish lets the running
// node finish, recorded success; the node after it is skipped, the cancel
// its reason, and the run ends cancelled.
func TestMCPCancelRunLetFinish(t *testing.T) {
	t.Parallel()
	url, _ := serveMCP(t, t.TempDir(), mcpserver.HTTPConfig{})
	runner, other := connectMCP(t, url, ""), connectMCP(t, url, "")
	dir := t.TempDir()
	gate, flow := filepath.Join(dir, "gate"), filepath.Join(dir, "gated.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: gated
inputs:
  gate: {type: string, required: true}
nodes:
  - {id: start, type: trigger.manual}
  - id: slow
    type: shell
    command: [sh, -c, 'while [ ! -e "$GATE" ]; do sleep 0.02; done; echo finished']
    env: {GATE: "{{ inputs.gate }}"}
  - {id: after, type: set, values: {x: 1}}
  - {id: nap, type: wait, duration: 1h}
edges:
  - {from: start, to: slow}
  - {from: slow, to: after}
  - {from: start, to: nap}
`), 0o600))

	done := make(chan map[string]any, 1)
	go func() {
		res := callTool(t, runner, "run_workflow", map[string]any{"file": flow, "inputs": map[string]any{"gate": gate}})
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
	}, 60*time.Second, 20*time.Millisecond, "the run never showed up as running")

	cancelled := make(chan map[string]any, 1)
	go func() {
		cancelled <- toolResult[map[string]any](t, callTool(t, other, "cancel_run", map[string]any{"id": id, "let_finish": true}))
	}()
	// The run's owner took the cancel: the hour's wait stopped at once.
	require.Eventually(t, func() bool {
		doc := toolResult[map[string]any](t, callTool(t, other, "get_run", map[string]any{"id": id}))
		return stepStatus(doc, "nap") == "cancelled"
	}, 30*time.Second, 20*time.Millisecond, "the cancel never reached the run's owner")
	require.NoError(t, os.WriteFile(gate, nil, 0o600))

	out := <-cancelled
	require.Equal(t, "cancelled", out["status"])
	run := <-done
	require.Equal(t, "cancelled", run["status"])
	require.Equal(t, "success", stepStatus(run, "slow"), "the running node finished and was recorded")
	require.Equal(t, "cancelled", stepStatus(run, "after"), "nothing new started")
	for _, s := range run["steps"].([]any) {
		if s := s.(map[string]any); s["node"] == "after" {
			require.Nil(t, s["started_at"], "it never started")
		}
	}
}

// stepStatus is the status of node's step in a run document.
func stepStatus(doc map[string]any, node string) string {
	steps, _ := doc["steps"].([]any)
	for _, s := range steps {
		if s := s.(map[string]any); s["node"] == node {
			st, _ := s["status"].(string)
			return st
		}
	}
	return ""
}
