package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/cli"
	"github.com/skeinhq/skein/internal/mcpserver/mcptest"
)

// The MCP server's tools are tested in internal/mcpserver; these are the
// tests of `skein mcp`, the command that serves it.

// TestMCPCommand: skein mcp --http serves the tools on the folder of
// --dir, with the flags' options.
func TestMCPCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, _ := serveMCP(t, "mcp", "--http", "127.0.0.1:0", "--dir", dir, "--token", "s3cret", "--concurrency", "2")
	_, err := dialMCP(url, "")
	require.Error(t, err, "--token: a request without it is refused")
	cs := connectMCP(t, url, "s3cret")
	res := callTool(t, cs, "run_workflow", map[string]any{"file": "testdata/ok.yaml", "inputs": map[string]any{"city": "Paris"}})
	require.False(t, res.IsError, toolText(res))
	r := skein(t, "runs", "list", "--dir", dir)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "ok", "the run is recorded in --dir")
}

// TestMCPWorkflowsFolder: --workflows names the folder whose workflow
// files the tools take; a file outside it is refused, and a --workflows
// that is not a folder is a usage error.
func TestMCPWorkflowsFolder(t *testing.T) {
	t.Parallel()
	flows := t.TempDir()
	ok, err := os.ReadFile("testdata/ok.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(flows, "ok.yaml"), ok, 0o644))
	url, _ := serveMCP(t, "mcp", "--http", "127.0.0.1:0", "--dir", t.TempDir(), "--workflows", flows)
	cs := connectMCP(t, url, "")
	res := callTool(t, cs, "run_workflow", map[string]any{"file": filepath.Join(flows, "ok.yaml"), "inputs": map[string]any{"city": "Paris"}})
	require.False(t, res.IsError, toolText(res))
	res = callTool(t, cs, "validate_workflow", map[string]any{"file": "testdata/ok.yaml"})
	require.True(t, res.IsError, "a file of the working folder, outside --workflows, is refused")
	require.Contains(t, toolText(res), `is outside the workflows folder: this server runs and validates only the workflow files in it`)

	r := skein(t, "mcp", "--workflows", filepath.Join(flows, "ok.yaml"))
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "is not a folder; give the folder of the workflow files the tools may take")
}

func TestMCPRefusesOpenAddressWithoutToken(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:7070", "example.com:7070"} {
		t.Run(addr, func(t *testing.T) {
			t.Parallel()
			r := skein(t, "mcp", "--http", addr, "--dir", t.TempDir())
			require.Equal(t, cli.ExitInvalid, r.code)
			require.Contains(t, r.stderr, "pass --token")
		})
	}
	r := skein(t, "mcp", "--http", "nohost", "--dir", t.TempDir())
	require.Equal(t, cli.ExitInvalid, r.code)
	require.Contains(t, r.stderr, "host:port")
}

func TestMCPSessionFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ flag, value string }{
		{"--session-idle", "-1s"},
		{"--max-sessions", "0"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			t.Parallel()
			r := skein(t, "mcp", "--http", "127.0.0.1:0", "--dir", t.TempDir(), tc.flag, tc.value)
			require.Equal(t, cli.ExitInvalid, r.code)
			require.Contains(t, r.stderr, tc.flag)
		})
	}
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		r := skein(t, "mcp", "--help")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		require.Regexp(t, `--max-sessions int\s+.*\(default 64\)`, r.stdout)
		require.Regexp(t, `--session-idle duration\s+.*\(default 10m0s\)`, r.stdout)
	})
}

// serveMCP runs skein with args until stop is called or the test ends,
// and returns the URL it listens on. stop returns the exit code.
func serveMCP(t *testing.T, args ...string) (url string, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, args, strings.NewReader(""), io.Discard, pw)
		pw.Close()
	}()
	stop = sync.OnceValue(func() int {
		cancel()
		return <-done
	})
	t.Cleanup(func() { require.Equal(t, cli.ExitOK, stop()) })
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	_, url, ok := strings.Cut(strings.TrimSpace(line), "listening on ")
	require.True(t, ok, "want the address on stderr, got %q", line)
	return url, stop
}

// The SDK's client on the server's Streamable HTTP endpoint (mcptest).
var (
	connectMCP = mcptest.Connect
	dialMCP    = mcptest.Dial
	callTool   = mcptest.CallTool
)

// toolError decodes a failed call's structured error.
func toolError(t *testing.T, res *sdk.CallToolResult) mcpError {
	t.Helper()
	require.True(t, res.IsError, "want a tool error, got %s", toolText(res))
	var out mcpError
	require.NoError(t, json.Unmarshal([]byte(toolText(res)), &out), toolText(res))
	return out
}

func toolText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

type mcpError struct {
	Code     string         `json:"code"`
	Category string         `json:"category"`
	Message  string         `json:"message"`
	Details  map[string]any `json:"details"`
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}
