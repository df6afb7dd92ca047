package main_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// startMCP runs `skein mcp` on stdio with a temporary --dir and connects
// the SDK's client to it; the test's end closes the session, which ends
// the process.
func startMCP(t *testing.T) (cs *sdk.ClientSession, dir string) {
	t.Helper()
	dir = t.TempDir()
	cmd := exec.Command(bin, "mcp", "--dir", dir)
	client := sdk.NewClient(&sdk.Implementation{Name: "skein-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs, dir
}

func callMCP(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any, out any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	if out != nil {
		require.False(t, res.IsError, "%s: want a result, got the error %s", name, mcpText(res))
		data, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, out), string(data))
	}
	return res
}

func mcpText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestMCPStdio drives `skein mcp` over stdio: validate, run, get, list,
// read the events, and a call that fails.
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	cs, _ := startMCP(t)
	okFile, err := filepath.Abs("../../internal/cli/testdata/ok.yaml")
	require.NoError(t, err)

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("version: 1\nname: bad\nnodes:\n  - {id: start, type: trigger.manual}\nedges:\n  - {from: start, to: missing}\n"), 0o600))
	var valid struct {
		Valid       bool `json:"valid"`
		Diagnostics []struct {
			File, Severity, Message, Path string
			Line, Col                     int
		} `json:"diagnostics"`
	}
	callMCP(t, cs, "validate_workflow", map[string]any{"file": bad}, &valid)
	require.False(t, valid.Valid)
	require.Len(t, valid.Diagnostics, 1)
	d := valid.Diagnostics[0]
	require.Equal(t, bad, d.File)
	require.Equal(t, [2]int{6, 23}, [2]int{d.Line, d.Col})
	require.Equal(t, "error", d.Severity)
	require.Equal(t, "edges[0].to", d.Path)
	require.Equal(t, `edge to unknown node "missing"`, d.Message)

	type run struct {
		ID      string         `json:"execution_id"`
		Status  string         `json:"status"`
		Outputs map[string]any `json:"outputs"`
		Steps   []struct{ Node, Status string }
	}
	var ran run
	callMCP(t, cs, "run_workflow", map[string]any{"file": okFile, "inputs": map[string]any{"city": "Paris"}}, &ran)
	require.Equal(t, "completed", string(ran.Status))
	require.Equal(t, "Paris for 3 days", ran.Outputs["text"])

	var got run
	callMCP(t, cs, "get_run", map[string]any{"id": ran.ID}, &got)
	require.Equal(t, ran.ID, got.ID)
	require.Equal(t, "completed", string(got.Status))
	require.Equal(t, ran.Steps, got.Steps)

	var list struct {
		Runs []struct{ ID, Workflow, Status string } `json:"runs"`
	}
	callMCP(t, cs, "list_runs", nil, &list)
	require.Len(t, list.Runs, 1)
	require.Equal(t, ran.ID, list.Runs[0].ID)
	require.Equal(t, "ok", list.Runs[0].Workflow)
	require.Equal(t, "completed", string(list.Runs[0].Status))

	rr, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "skein://runs/" + ran.ID + "/events"})
	require.NoError(t, err)
	require.Len(t, rr.Contents, 1)
	require.Equal(t, "application/x-ndjson", rr.Contents[0].MIMEType)
	lines := strings.Split(strings.TrimSpace(rr.Contents[0].Text), "\n")
	require.Contains(t, lines[0], `"execution_started"`)
	require.Contains(t, lines[len(lines)-1], `"execution_finished"`)

	res := callMCP(t, cs, "run_workflow", map[string]any{"file": filepath.Join(t.TempDir(), "nosuch.yaml")}, nil)
	require.True(t, res.IsError)
	var terr struct{ Code, Category, Message string }
	require.NoError(t, json.Unmarshal([]byte(mcpText(res)), &terr), mcpText(res))
	require.Equal(t, "invalid_workflow", terr.Code, "as skein run -o json says it")
	require.Equal(t, "validation", terr.Category)
	require.Contains(t, terr.Message, "nosuch.yaml")
}

// TestMCPStdioCancelCall cancels a run_workflow call in progress: the run
// ends cancelled and is recorded so.
func TestMCPStdioCancelCall(t *testing.T) {
	t.Parallel()
	cs, dir := startMCP(t)
	slow, err := filepath.Abs("testdata/slow.yaml")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_workflow", Arguments: map[string]any{"file": slow}})
		called <- err
	}()
	waitForRun(t, dir, "running")
	cancel()
	require.ErrorIs(t, <-called, context.Canceled)
	waitForRun(t, dir, "cancelled")
}

// TestMCPStdioClientLeaves closes stdin while a run is in progress: the
// process cancels the run, records it, and exits at once.
func TestMCPStdioClientLeaves(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	slow, err := filepath.Abs("testdata/slow.yaml")
	require.NoError(t, err)
	cmd := exec.Command(bin, "mcp", "--dir", dir)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_workflow","arguments":{"file":` + strconv.Quote(slow) + `}}}`,
	} {
		_, err := io.WriteString(stdin, msg+"\n")
		require.NoError(t, err)
	}
	waitForRun(t, dir, "running")

	require.NoError(t, stdin.Close())
	// The run waits an hour: the process exits because its client left.
	require.Equal(t, 0, waitExit(t, cmd, time.Minute), "the process exits when its client leaves, before the run would end")
	waitForRun(t, dir, "cancelled")
}

// waitForRun waits until `skein runs list` shows a run with status.
func waitForRun(t *testing.T, dir, status string) {
	t.Helper()
	require.Eventually(t, func() bool {
		out, _ := exec.Command(bin, "runs", "list", "--dir", dir, "--status", status).Output()
		return strings.Contains(string(out), "slow")
	}, 60*time.Second, 20*time.Millisecond, "a run %s", status)
}
