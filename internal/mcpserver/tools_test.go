package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/mcpserver"
	"github.com/skeinhq/skein/internal/mcpserver/mcptest"
	"github.com/skeinhq/skein/internal/runner"
	_ "github.com/skeinhq/skein/node/standard"
)

const badWorkflow = `version: 1
name: bad
nodes:
  - {id: start, type: trigger.manual}
  - {id: say, type: nosuchkind}
edges:
  - {from: start, to: missing}
`

// flakyWorkflow fails until its marker file exists.
const flakyWorkflow = `version: 1
name: flaky
inputs:
  marker: {type: string, required: true}
nodes:
  - {id: start, type: trigger.manual}
  - {id: gate, type: shell, command: [test, -f, "{{ inputs.marker }}"]}
edges:
  - {from: start, to: gate}
`

const slowWorkflow = `version: 1
name: slow
nodes:
  - {id: start, type: trigger.manual}
  - {id: nap, type: wait, duration: 30s}
edges:
  - {from: start, to: nap}
`

type mcpBundle struct {
	dir     string // the server's folder
	url     string
	session *sdk.ClientSession
}

// setupMCP serves the MCP server over HTTP until the test ends, with a
// temporary folder, and connects a client to it.
func setupMCP(t *testing.T) *mcpBundle {
	t.Helper()
	b := &mcpBundle{dir: t.TempDir()}
	b.url, _ = serveMCP(t, b.dir, mcpserver.HTTPConfig{})
	b.session = connectMCP(t, b.url, "")
	return b
}

// serveMCP serves the MCP server, recording runs in dir, over streamable
// HTTP on a loopback port until stop is called or the test ends, as skein
// mcp --http does, and returns its URL.
func serveMCP(t *testing.T, dir string, hc mcpserver.HTTPConfig) (url string, stop func()) {
	t.Helper()
	_, url, stop = serveMCPServer(t, dir, hc)
	return url, stop
}

// serveMCPServer is serveMCP that returns the server too.
func serveMCPServer(t testing.TB, dir string, hc mcpserver.HTTPConfig) (srv *mcpserver.Server, url string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv = mcpserver.New(ctx, config(dir))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.ServeStreamableHTTP(ctx, ln, hc) }()
	stop = sync.OnceFunc(func() {
		cancel()
		require.NoError(t, <-done)
		srv.Close()
	})
	t.Cleanup(stop)
	return srv, "http://" + ln.Addr().String() + mcpserver.Path, stop
}

// config is the server's configuration as skein mcp makes it, recording
// runs in dir: a run that only waits for a signal is left waiting and
// returned, for signal_run to continue. Its tools take workflow files
// anywhere (the tests write them in folders of their own); which files
// a server takes is TestHTTPTakesOnlyTheFolderItServes's.
func config(dir string) mcpserver.Config {
	return mcpserver.Config{Runner: runner.Config{Dir: dir},
		Options:   runner.Options{Park: &runner.Park{After: time.Minute, SignalsOnly: true}},
		Workflows: string(filepath.Separator)}
}

// The SDK's client on the server's Streamable HTTP endpoint (mcptest).
var (
	connectMCP = mcptest.Connect
	dialMCP    = mcptest.Dial
	callTool   = mcptest.CallTool
)

// toolResult decodes a successful call's structured content.
func toolResult[T any](t *testing.T, res *sdk.CallToolResult) T {
	t.Helper()
	require.False(t, res.IsError, "want a result, got the error %s", toolText(res))
	data, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var out T
	require.NoError(t, json.Unmarshal(data, &out), string(data))
	return out
}

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

type mcpRun struct {
	ID      string         `json:"execution_id"`
	Status  string         `json:"status"`
	Outputs map[string]any `json:"outputs"`
	Error   *mcpError      `json:"error"`
	File    string         `json:"file"`
	Source  string         `json:"source"`
	Steps   []struct {
		Node   string `json:"node"`
		Status string `json:"status"`
		Cached bool   `json:"cached"`
	} `json:"steps"`
}

type mcpDiagnostic struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Col      int    `json:"col"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	Node     string `json:"node"`
	Path     string `json:"path"`
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

func TestMCPTools(t *testing.T) {
	t.Parallel()
	b := setupMCP(t)
	cs := b.session

	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
		require.NotNil(t, tool.InputSchema, tool.Name)
		require.NotNil(t, tool.OutputSchema, tool.Name)
	}
	require.Equal(t, map[string]bool{"validate_workflow": true, "run_workflow": true, "list_runs": true, "get_run": true, "resume_run": true, "cancel_run": true, "signal_run": true}, names)

	t.Run("validate", func(t *testing.T) {
		t.Parallel()
		bad := writeFile(t, "bad.yaml", badWorkflow)
		tests := []struct {
			name string
			args map[string]any
			file string
		}{
			// Over HTTP a file outside the server's folders is named by
			// its last element.
			{"file", map[string]any{"file": bad}, "…" + string(filepath.Separator) + filepath.Base(bad)},
			{"inline yaml", map[string]any{"yaml": badWorkflow}, "inline.yaml"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				out := toolResult[struct {
					Valid       bool            `json:"valid"`
					Diagnostics []mcpDiagnostic `json:"diagnostics"`
				}](t, callTool(t, cs, "validate_workflow", tt.args))
				require.False(t, out.Valid)
				require.Equal(t, []mcpDiagnostic{
					{File: tt.file, Line: 5, Col: 21, Severity: "error", Node: "say", Path: "nodes[1].type",
						Message: out.Diagnostics[0].Message},
					{File: tt.file, Line: 7, Col: 23, Severity: "error", Path: "edges[0].to", Message: `edge to unknown node "missing"`},
				}, out.Diagnostics)
				require.Contains(t, out.Diagnostics[0].Message, `unknown node type "nosuchkind"`)
			})
		}
	})

	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		out := toolResult[map[string]any](t, callTool(t, cs, "validate_workflow", map[string]any{"file": "testdata/ok.yaml"}))
		// What a run here would lack comes as warnings, as skein validate
		// gives them: ok.yaml's required input.
		require.Equal(t, map[string]any{"valid": true, "diagnostics": []any{map[string]any{
			"file": "testdata/ok.yaml", "line": float64(4), "col": float64(3), "severity": "warning",
			"message": "input city is required and has no default: a run needs -i city=…"}}}, out)
	})

	t.Run("run, get, list, events", func(t *testing.T) {
		t.Parallel()
		res := callTool(t, cs, "run_workflow", map[string]any{"file": "testdata/ok.yaml", "inputs": map[string]any{"city": "Paris"}})
		run := toolResult[mcpRun](t, res)
		require.Equal(t, "completed", string(run.Status))
		require.Equal(t, "Paris for 3 days", run.Outputs["text"])
		require.NotEmpty(t, run.ID)
		require.Len(t, run.Steps, 2)
		require.JSONEq(t, toolText(res), mustJSON(t, res.StructuredContent), "the text is the structured result")

		got := toolResult[mcpRun](t, callTool(t, cs, "get_run", map[string]any{"id": run.ID}))
		require.Equal(t, run.ID, got.ID)
		require.Equal(t, "completed", string(got.Status))
		require.Equal(t, run.Outputs, got.Outputs)
		require.Len(t, got.Steps, 2)
		require.Equal(t, filepath.Join("testdata", "ok.yaml"), got.File, "over HTTP, within the working folder")
		require.Equal(t, "mcp", got.Source, "a run started by the run_workflow tool")

		list := toolResult[struct {
			Runs []struct {
				ID, Workflow, Status string
				StartedAt            string  `json:"started_at"`
				FinishedAt           *string `json:"finished_at"`
			} `json:"runs"`
		}](t, callTool(t, cs, "list_runs", map[string]any{"workflow": "ok", "status": "completed"}))
		require.NotEmpty(t, list.Runs)
		found := false
		for _, r := range list.Runs {
			if r.ID == run.ID {
				found = true
				require.Equal(t, "ok", r.Workflow)
				require.Equal(t, "completed", string(r.Status))
				require.NotEmpty(t, r.StartedAt)
				require.NotNil(t, r.FinishedAt)
			}
		}
		require.True(t, found, "list_runs has run %s", run.ID)

		uri := "skein://runs/" + run.ID + "/events"
		rr, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: uri})
		require.NoError(t, err)
		require.Len(t, rr.Contents, 1)
		require.Equal(t, "application/x-ndjson", rr.Contents[0].MIMEType)
		var types []string
		for _, line := range strings.Split(strings.TrimSpace(rr.Contents[0].Text), "\n") {
			var ev struct{ Type string }
			require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
			types = append(types, ev.Type)
		}
		require.Equal(t, "execution_started", types[0])
		require.Equal(t, "execution_finished", types[len(types)-1])

		_, err = cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "skein://runs/nosuchrun/events"})
		require.ErrorContains(t, err, "not found")
	})

	t.Run("failed run resumes", func(t *testing.T) {
		t.Parallel()
		flaky := writeFile(t, "flaky.yaml", flakyWorkflow)
		marker := filepath.Join(t.TempDir(), "marker")
		run := toolResult[mcpRun](t, callTool(t, cs, "run_workflow", map[string]any{"file": flaky, "inputs": map[string]any{"marker": marker}}))
		require.Equal(t, "failed", string(run.Status), "a failed run is a result")
		require.NotNil(t, run.Error)

		require.NoError(t, os.WriteFile(marker, nil, 0o600))
		resumed := toolResult[mcpRun](t, callTool(t, cs, "resume_run", map[string]any{"id": run.ID}))
		require.Equal(t, run.ID, resumed.ID)
		require.Equal(t, "completed", string(resumed.Status))

		again := toolError(t, callTool(t, cs, "resume_run", map[string]any{"id": run.ID}))
		require.Equal(t, "completed", again.Code, "as skein resume and the HTTP API say it")
		require.Contains(t, again.Message, "nothing to resume")
	})

	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		bad := writeFile(t, "bad.yaml", badWorkflow)
		tests := []struct {
			name    string
			tool    string
			args    map[string]any
			code    string
			message string
		}{
			{"unknown file", "run_workflow", map[string]any{"file": "testdata/nosuch.yaml"}, "invalid_workflow", "testdata/nosuch.yaml"},
			// Over HTTP a path outside the server's folders is named by
			// its last element.
			{"invalid workflow", "run_workflow", map[string]any{"file": bad}, "invalid_workflow", "…/bad.yaml:5:21: error: unknown node type"},
			{"every path of a message", "run_workflow", map[string]any{"file": bad}, "invalid_workflow", "\n…/bad.yaml:7:23: error: edge to unknown node"},
			{"missing input", "run_workflow", map[string]any{"file": "testdata/ok.yaml"}, "invalid_inputs", "missing required input city"},
			{"mistyped input", "run_workflow", map[string]any{"file": "testdata/ok.yaml", "inputs": map[string]any{"city": "Rome", "days": "many"}}, "invalid_inputs", "days"},
			{"unknown trigger", "run_workflow", map[string]any{"file": "testdata/ok.yaml", "inputs": map[string]any{"city": "Rome"}, "trigger": "nosuch"}, "usage", "nosuch"},
			{"unknown run", "get_run", map[string]any{"id": "nosuchrun"}, "not_found", `no run "nosuchrun"`},
			{"resume unknown run", "resume_run", map[string]any{"id": "nosuchrun"}, "not_found", `no run "nosuchrun"`},
			{"file and yaml", "validate_workflow", map[string]any{"file": bad, "yaml": badWorkflow}, "invalid_arguments", "either file or yaml"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				terr := toolError(t, callTool(t, cs, tt.tool, tt.args))
				require.Equal(t, tt.code, terr.Code, terr.Message)
				require.Equal(t, "validation", terr.Category)
				require.Contains(t, terr.Message, tt.message)
			})
		}
	})

	t.Run("arguments against the schema", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name    string
			tool    string
			args    map[string]any
			message string
		}{
			{"wrong type", "run_workflow", map[string]any{"file": 3}, "file"},
			{"missing", "get_run", map[string]any{}, "id"},
			{"unknown", "list_runs", map[string]any{"sort": "asc"}, "sort"},
			{"not in enum", "list_runs", map[string]any{"status": "done"}, "status"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				terr := toolError(t, callTool(t, cs, tt.tool, tt.args))
				require.Equal(t, "invalid_arguments", terr.Code, terr.Message)
				require.Equal(t, "validation", terr.Category)
				require.Contains(t, terr.Message, tt.message)
			})
		}
	})
}

func TestMCPListRunsEmpty(t *testing.T) {
	t.Parallel()
	b := setupMCP(t)
	out := toolResult[map[string]any](t, callTool(t, b.session, "list_runs", nil))
	require.Equal(t, map[string]any{"runs": []any{}}, out)
	_, err := os.Stat(filepath.Join(b.dir, "skein.db"))
	require.ErrorIs(t, err, os.ErrNotExist, "listing creates no database")
}

func TestMCPToken(t *testing.T) {
	t.Parallel()
	url, _ := serveMCP(t, t.TempDir(), mcpserver.HTTPConfig{Token: "s3cret"})

	for _, token := range []string{"", "wrong"} {
		_, err := dialMCP(url, token)
		require.Error(t, err, "token %q", token)
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	cs := connectMCP(t, url, "s3cret")
	out := toolResult[map[string]any](t, callTool(t, cs, "validate_workflow", map[string]any{"file": "testdata/ok.yaml"}))
	require.Equal(t, true, out["valid"])
}

// TestMCPStopCancelsRuns stops the server while a run is in progress: the
// run ends cancelled, is recorded so, and the client gets its result.
func TestMCPStopCancelsRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, stop := serveMCP(t, dir, mcpserver.HTTPConfig{})
	cs := connectMCP(t, url, "")
	slow := writeFile(t, "slow.yaml", slowWorkflow)

	type call struct {
		res *sdk.CallToolResult
		err error
	}
	calls := make(chan call, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_workflow", Arguments: map[string]any{"file": slow}})
		calls <- call{res, err}
	}()
	require.Eventually(t, func() bool {
		list := toolResult[struct {
			Runs []struct{ Workflow string } `json:"runs"`
		}](t, callTool(t, cs, "list_runs", map[string]any{"status": "running"}))
		return len(list.Runs) == 1 && list.Runs[0].Workflow == "slow"
	}, 60*time.Second, 20*time.Millisecond, "the run starts")

	stop()
	c := <-calls
	require.NoError(t, c.err)
	run := toolResult[mcpRun](t, c.res)
	require.Equal(t, "cancelled", string(run.Status))

	r, err := runner.OpenExisting(runner.Config{Dir: dir})
	require.NoError(t, err)
	defer r.Close()
	doc, err := r.Get(context.Background(), run.ID)
	require.NoError(t, err)
	require.Equal(t, "cancelled", string(doc.Status), "the run is recorded cancelled")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}

// TestMCPSessionIdle leaves HTTP sessions unused for longer than
// SessionIdle: the server closes them, answers a request naming one
// with 404 Not Found, and the client can start a new session.
func TestMCPSessionIdle(t *testing.T) {
	t.Parallel()
	url, _ := serveMCP(t, t.TempDir(), mcpserver.HTTPConfig{SessionIdle: 200 * time.Millisecond})
	deadline := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t.Cleanup(cancel)
		return ctx
	}

	t.Run("raw", func(t *testing.T) {
		t.Parallel()
		ctx := deadline(t)
		rs := &rawSession{url: url}
		rs.initialize(t)
		// The session's event stream is no request: it ends when the
		// server closes the session.
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", rs.sessionID)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.NoError(t, err, "the server ends the event stream of an idle session")

		rep := rs.call(t, "tools/call", `{"name":"list_runs","arguments":{}}`)
		require.Equal(t, http.StatusNotFound, rep.HTTPStatus, rep.Body)

		again := &rawSession{url: url}
		again.initialize(t)
		rep = again.call(t, "tools/call", `{"name":"list_runs","arguments":{}}`)
		require.Equal(t, http.StatusOK, rep.HTTPStatus, rep.Body)
		require.Nil(t, rep.Error, rep.Body)
	})

	t.Run("sdk client", func(t *testing.T) {
		t.Parallel()
		ctx := deadline(t)
		cs, err := dialMCP(url, "")
		require.NoError(t, err)
		defer cs.Close()
		callTool(t, cs, "list_runs", nil)
		waited := make(chan error, 1)
		go func() { waited <- cs.Wait() }()
		select {
		case <-waited:
		case <-ctx.Done():
			t.Fatal("the client's session did not end")
		}
		_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "list_runs"})
		require.Error(t, err, "a call on an expired session fails")

		cs2 := connectMCP(t, url, "")
		toolResult[map[string]any](t, callTool(t, cs2, "list_runs", nil))
	})
}
