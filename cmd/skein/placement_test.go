package main_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// TestMCPQueuesLikeRun: with --db postgres://… skein mcp hands a run's
// nodes to the queue's workers as skein run does — the runner decides,
// not the command — and with --local runs them itself, as skein run
// --local does.
func TestMCPQueuesLikeRun(t *testing.T) {
	t.Parallel()
	db := pgURL(t)
	require.Equal(t, 0, run(t, "migrate", "--db", db).code)
	worker(t, db)
	const hello = "../../examples/hello.yaml"
	// jobs counts the steps of run id a worker ran: each was a job.
	jobs := func(id string) int {
		var n int
		pgQuery(t, db, fmt.Sprintf(`SELECT count(*) FROM steps WHERE run_id = '%s' AND ran_worker <> ''`, id), &n)
		return n
	}
	type runDoc struct {
		ID      string         `json:"execution_id"`
		Status  string         `json:"status"`
		Outputs map[string]any `json:"outputs"`
	}

	cli := run(t, "run", "--db", db, "--dir", t.TempDir(), "-o", "json", hello, "-i", "who=Ada")
	require.Equal(t, 0, cli.code, cli.stdout+cli.stderr)
	var byCLI runDoc
	require.NoError(t, json.Unmarshal([]byte(cli.stdout), &byCLI), cli.stdout)
	require.Positive(t, jobs(byCLI.ID), "skein run --db postgres://… queues the nodes")

	for _, tc := range []struct {
		name   string
		args   []string
		queued bool
	}{
		{"default", nil, true},
		{"local", []string{"--local"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := mcpOn(t, append([]string{"--db", db, "--dir", t.TempDir()}, tc.args...)...)
			var doc runDoc
			callMCP(t, cs, "run_workflow", map[string]any{"file": hello, "inputs": map[string]any{"who": "Ada"}}, &doc)
			require.Equal(t, "completed", doc.Status)
			require.Equal(t, byCLI.Outputs, doc.Outputs, "the same run as skein run's")
			if tc.queued {
				require.Positive(t, jobs(doc.ID), "its nodes were jobs a worker ran")
			} else {
				require.Zero(t, jobs(doc.ID), "its nodes ran in skein mcp")
			}
		})
	}
}

// mcpOn runs `skein mcp` with args on stdio and connects a client to it.
func mcpOn(t *testing.T, args ...string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "skein-test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &sdk.CommandTransport{Command: exec.Command(bin, append([]string{"mcp"}, args...)...)}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}
