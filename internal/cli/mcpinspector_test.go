package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMCPInspectorStrict runs the official MCP Inspector's CLI with its
// --strict schema portability check on tools/list against `skein mcp`
// over stdio: it must find no error and no warning.
func TestMCPInspectorStrict(t *testing.T) {
	if testing.Short() {
		t.Skip("builds skein")
	}
	t.Parallel()
	nodeBin, inspector := conformanceNode(t, filepath.Join("@modelcontextprotocol", "inspector", "clients", "cli", "build", "index.js"))
	skeinBin := filepath.Join(buildSkein(t), "skein")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	home := t.TempDir() // the Inspector keeps its catalog there
	cmd := exec.CommandContext(ctx, nodeBin, inspector, "--cli", "--method", "tools/list", "--strict", "--format", "json",
		skeinBin, "mcp", "--dir", t.TempDir())
	cmd.Dir = t.TempDir()
	cmd.Env = append(cmd.Environ(), "HOME="+home, "NO_COLOR=1")
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "the Inspector did not finish in time:\n%s", stderr.String())
	require.NoError(t, err, "the Inspector's strict check failed (exit 6 is an error-severity finding):\n%s", stderr.String())

	var envelope struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
		SchemaFindings []json.RawMessage `json:"schemaFindings"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &envelope), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	var names []string
	for _, tool := range envelope.Result.Tools {
		names = append(names, tool.Name)
	}
	require.ElementsMatch(t, []string{"validate_workflow", "run_workflow", "list_runs", "get_run", "resume_run", "cancel_run", "signal_run"}, names)
	require.Empty(t, envelope.SchemaFindings, "the Inspector's portability findings (errors and warnings):\n%s", stderr.String())
	require.NotContains(t, stderr.String(), "Schema portability", "the Inspector reported findings")
}
