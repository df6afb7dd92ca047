package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// replayDoc is what skein replay -o json prints, the parts the tests read.
type replayDoc struct {
	ReplayOf string `json:"replay_of"`
	Run      struct {
		ExecutionID string         `json:"execution_id"`
		Status      string         `json:"status"`
		Outputs     map[string]any `json:"outputs"`
		Error       map[string]any `json:"error"`
		Steps       []struct {
			Node   string         `json:"node"`
			Visit  int            `json:"visit"`
			Status string         `json:"status"`
			Output map[string]any `json:"output"`
			Error  map[string]any `json:"error"`
		} `json:"steps"`
	} `json:"run"`
	Diverged   []map[string]any `json:"diverged"`
	Mismatches []struct {
		Node string           `json:"node"`
		Diff []map[string]any `json:"diff"`
	} `json:"mismatches"`
}

// TestReplayAgentOffline is issue 18's acceptances 1 and 2. It records a
// run of examples/agent.yaml against the llmtest fake and the real
// server-everything, then stops the fake (its port closed) and replays
// the run with the MCP server's command replaced by one that leaves a
// marker file and fails: the replay has the
// recorded outputs and steps, the fake got no request and no MCP process
// started. Then a replay of the workflow with its prompt edited fails at
// the agent node, naming it and showing how the model request differs.
// Not parallel: it sets the environment and the working directory.
func TestReplayAgentOffline(t *testing.T) {
	needEverything(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, agentExampleScript())
	fakeModelEnv(t, srv)
	runs := t.TempDir()
	t.Chdir(filepath.Join("..", ".."))

	r := skein(t, "run", "--record", "--output", "json", "--dir", runs, filepath.Join("examples", "agent.yaml"))
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	rec := decodeAIRun(t, r)
	require.Equal(t, "completed", string(rec.Status))
	require.Equal(t, 3, srv.Calls())
	var recDoc struct {
		ExecutionID string `json:"execution_id"`
		Dir         string `json:"dir"`
		Steps       []struct {
			Node   string         `json:"node"`
			Status string         `json:"status"`
			Output map[string]any `json:"output"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &recDoc))
	tape, err := os.ReadFile(filepath.Join(recDoc.Dir, "cassette.jsonl"))
	require.NoError(t, err, "the run folder holds the cassette")
	require.NotContains(t, string(tape), "fake-key", "the model's API key is not in the cassette")
	for _, kind := range []string{`"kind":"http"`, `"kind":"mcp_call"`, `"kind":"mcp_tools"`} {
		require.Contains(t, string(tape), kind)
	}

	// Both stopped: the model's port is closed (a request would fail, and
	// the fake counts none), and the MCP server's command would leave a
	// marker. (HTTP_PROXY would prove nothing: Go reads it once per
	// process, and never for loopback.)
	srv.Close()
	marker := filepath.Join(t.TempDir(), "mcp-started")
	src, err := os.ReadFile(filepath.Join("examples", "agent.yaml"))
	require.NoError(t, err)
	dead := strings.Replace(string(src),
		"    command: node\n    args: [internal/mcp/testdata/node_modules/@modelcontextprotocol/server-everything/dist/index.js, stdio]",
		"    command: sh\n    args: [-c, 'touch "+marker+"; exit 1']", 1)
	require.NotEqual(t, string(src), dead, "the example's server is replaced")
	edited := filepath.Join(t.TempDir(), "agent.yaml")
	require.NoError(t, os.WriteFile(edited, []byte(dead), 0o644))

	r = skein(t, "replay", recDoc.ExecutionID, "--file", edited, "--output", "json", "--dir", runs)
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	var rep replayDoc
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.Equal(t, recDoc.ExecutionID, rep.ReplayOf)
	require.NotEqual(t, recDoc.ExecutionID, rep.Run.ExecutionID, "a replay is a new run")
	require.Equal(t, "completed", string(rep.Run.Status))
	require.Equal(t, rec.Outputs, rep.Run.Outputs, "the recorded outputs")
	require.Empty(t, rep.Diverged, "no step diverged")
	require.Empty(t, rep.Mismatches)
	steps := func(node []string) []string { sort.Strings(node); return node }
	var recSteps, repSteps []string
	for _, s := range recDoc.Steps {
		recSteps = append(recSteps, s.Node+":"+s.Status)
	}
	for _, s := range rep.Run.Steps {
		repSteps = append(repSteps, s.Node+":"+s.Status)
	}
	require.Equal(t, steps(recSteps), steps(repSteps), "the recorded steps")
	require.Equal(t, 3, srv.Calls(), "the model got no request")
	require.NoFileExists(t, marker, "no MCP server started")

	// Acceptance 2: a prompt edited; the replay fails at the agent node
	// with the difference of the model requests.
	prompted := strings.Replace(dead, "What is {{ inputs.a }} + {{ inputs.b }}?", "Add {{ inputs.a }} and {{ inputs.b }}.", 1)
	require.NotEqual(t, dead, prompted)
	require.NoError(t, os.WriteFile(edited, []byte(prompted), 0o644))
	r = skein(t, "replay", recDoc.ExecutionID, "--file", edited, "--dir", runs)
	require.Equal(t, 1, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "error: node helper: it (visit 1, attempt 1) made a http request that differs from the recorded one:")
	require.Contains(t, r.stdout, "helper (visit 1): failed, recorded success", "the diverged step")
	require.Contains(t, r.stdout, `body.messages[1].content: recorded "What is 19 + 23?`)
	require.Contains(t, r.stdout, `now "Add 19 and 23.`)
	require.Equal(t, 3, srv.Calls(), "the model got no request")
	require.NoFileExists(t, marker, "no MCP server started")

	r = skein(t, "replay", recDoc.ExecutionID, "--file", edited, "-o", "json", "--dir", runs)
	require.Equal(t, 1, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	rep = replayDoc{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.Equal(t, "failed", string(rep.Run.Status))
	require.Len(t, rep.Mismatches, 1)
	require.Equal(t, "helper", rep.Mismatches[0].Node)
	require.NotEmpty(t, rep.Mismatches[0].Diff)
	require.Contains(t, rep.Run.Error["message"], "node helper")
}

// TestRecordIsLocal: --record keeps what nodes run in this process do, so
// it does not go with --queue.
func TestRecordIsLocal(t *testing.T) {
	t.Parallel()
	r := skein(t, "run", "--record", "--queue", "--dir", t.TempDir(), "testdata/ok.yaml", "-i", "city=Oslo")
	require.Equal(t, 2, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "--record keeps the interactions of nodes run in this process; it does not go with --queue")
}

// TestReplayOfACookie: an answer that sets a cookie is recorded with the
// cookie's value masked (a session is a credential), and its replay
// sets the masked cookie and does not diverge from the recorded run.
func TestReplayOfACookie(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Set-Cookie", "sid=SECRETCOOKIE; Path=/; HttpOnly")
		_, _ = io.WriteString(w, `{"ok": true}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	flow := filepath.Join(dir, "cookie.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: cookie
inputs:
  url: {type: string}
nodes:
  - {id: get, type: http, url: "{{ inputs.url }}"}
  - {id: seen, type: set, values: {has: "{{ get.headers['set-cookie'] != nil }}"}}
edges:
  - {from: get, to: seen}
`), 0o644))
	data := filepath.Join(dir, "data")
	r := skein(t, "run", "--record", "--dir", data, flow, "-i", "url="+srv.URL, "-o", "json")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	var run struct {
		ID  string `json:"execution_id"`
		Dir string `json:"dir"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &run))
	raw, err := os.ReadFile(filepath.Join(run.Dir, "cassette.jsonl"))
	require.NoError(t, err)
	require.NotContains(t, string(raw), "SECRETCOOKIE", "the cassette keeps no session")
	require.Contains(t, string(raw), "sid=***")

	srv.Close() // a replay sends nothing
	r = skein(t, "replay", run.ID, "--dir", data, "-o", "json")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	var doc replayDoc
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Empty(t, doc.Diverged, "the masked cookie is the recorded one")
	for _, s := range doc.Run.Steps {
		switch s.Node {
		case "get":
			require.Equal(t, "sid=***", s.Output["headers"].(map[string]any)["set-cookie"])
		case "seen":
			require.Equal(t, true, s.Output["has"], "a node that reads the cookie finds it")
		}
	}
}

// TestReplayOfASignal: a replay is given the signals the recorded run
// received, as it is given its answers: it does not wait again, and its
// steps are the recorded run's.
func TestReplayOfASignal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := filepath.Join(dir, "approve.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: approve
record: true
nodes:
  - {id: ok, type: wait, until: signal}
  - {id: after, type: template, text: "approved by {{ ok.data.by }}"}
edges:
  - {from: ok, to: after}
`), 0o644))
	data := filepath.Join(dir, "data")
	r := skein(t, "run", "--dir", data, flow, "-o", "json")
	require.Equal(t, 4, r.code, "the run waits: %s", r.stdout+r.stderr)
	var run struct {
		ID string `json:"execution_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &run))
	r = skein(t, "signal", run.ID, "ok", "--data", `{"by": "Ada"}`, "--dir", data)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)

	r = skein(t, "replay", run.ID, "--dir", data, "-o", "json")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	var doc replayDoc
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Equal(t, "completed", doc.Run.Status)
	require.Equal(t, "approved by Ada", doc.Run.Outputs["after"].(map[string]any)["text"])
	require.Empty(t, doc.Diverged)
}

// TestReplayAllowNewSaysWhatWentLive: with --allow-new a request the
// cassette had no answer for is sent live, and the replay says so — not
// that it failed.
func TestReplayAllowNewSaysWhatWentLive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, err := os.ReadFile("../../examples/shell.yaml")
	require.NoError(t, err)
	flow := filepath.Join(dir, "shell.yaml")
	require.NoError(t, os.WriteFile(flow, src, 0o644))
	data := filepath.Join(dir, "data")
	r := skein(t, "run", "--record", "--dir", data, flow, "-i", "word=cassette", "-o", "json")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	var run struct {
		ID string `json:"execution_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &run))
	edited := filepath.Join(dir, "edited.yaml")
	require.NoError(t, os.WriteFile(edited, []byte(strings.Replace(string(src), "wc -c", "wc -m", 1)), 0o644))

	r = skein(t, "replay", run.ID, "--dir", data, "--file", edited)
	require.Equal(t, 1, r.code, "without --allow-new the changed command fails its node: %s", r.stdout+r.stderr)
	require.Contains(t, r.stdout, "✗ the cassette has no answer for a shell request of node letters")

	r = skein(t, "replay", run.ID, "--dir", data, "--file", edited, "--allow-new")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "(1 new interactions sent live and appended)")
	require.Contains(t, r.stdout, "↗ sent live, the cassette had no answer: a shell request of node letters")
	require.NotContains(t, r.stdout, "✗")
}
