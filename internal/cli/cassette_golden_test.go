package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/runner"
)

// goldenCassette is an example whose recorded run is checked in: its
// cassette in examples/testdata/cassettes/<name>.jsonl, its result in
// testdata/examples/<name>.json (as TestExampleGoldens keeps it).
type goldenCassette struct {
	name, file string
	inputs     map[string]any
	// model: the run calls the fake model (agent).
	model bool
}

var goldenCassettes = []goldenCassette{
	{name: "hello", file: "hello.yaml", inputs: map[string]any{"who": "Ada"}},
	{name: "branches", file: "branches.yaml"},
	{name: "loops", file: "loops.yaml"},
	{name: "foreach", file: "foreach.yaml"},
	{name: "retry-cycle", file: "retry-cycle.yaml"},
	{name: "routing", file: "routing.yaml", inputs: map[string]any{"topic": "invoice"}},
	{name: "fallback", file: "fallback.yaml"},
	{name: "subworkflow", file: "subworkflow.yaml"},
	{name: "shell", file: "shell.yaml", inputs: map[string]any{"word": "$(id); rm -rf /"}},
	{name: "http", file: "http.yaml", inputs: map[string]any{"base_url": "{SERVER}"}},
	{name: "http-fallback", file: "http.yaml", inputs: map[string]any{"base_url": "{SERVER}", "quantity": 0}},
	{name: "agent", file: "agent.yaml", model: true},
}

// closedURL is where nothing listens: the replays' API.
const closedURL = "http://127.0.0.1:1"

// fakeModel is the environment of the agent example's model.
func fakeModel(baseURL string) map[string]string {
	return map[string]string{"SKEIN_LLM_PROVIDER": "openai", "SKEIN_LLM_BASE_URL": baseURL, "SKEIN_LLM_MODEL": "gpt-4.1-mini", "SKEIN_LLM_API_KEY": "fake-key"}
}

// TestExampleCassettes is issue 18's golden runs: every example's recorded
// cassette is replayed offline (its servers and model at a closed port, no
// MCP server started) and must give the example's golden result — the same
// steps with the same statuses, iterations, attempts and outputs, in any
// order where they ran concurrently, so a change to the scheduler that
// decides otherwise on a recorded run fails here. With -update the
// cassettes are recorded again, live (the example API, the fake model,
// server-everything).
func TestExampleCassettes(t *testing.T) {
	t.Parallel()
	if *update {
		recordCassettes(t)
	}
	for _, g := range goldenCassettes {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			c, err := cassette.Open(filepath.Join("..", "..", "examples", "testdata", "cassettes", g.name+".jsonl"))
			require.NoError(t, err, "record it with: go test ./internal/cli -run TestExampleCassettes -update")
			defer c.Close()
			// An empty environment: the cassette names the models and a
			// replay needs no key.
			nothing := func(string) (string, bool) { return "", false }
			r, err := runner.Open(runner.Config{Dir: t.TempDir(), LookupEnv: nothing})
			require.NoError(t, err)
			defer r.Close()
			ctx := context.Background()
			w, err := r.Load(filepath.Join("..", "..", "examples", g.file))
			require.NoError(t, err)
			if g.model {
				// Were it started, it would fail: nothing may start.
				w.MCPServers[0].Command, w.MCPServers[0].Args = "false", nil
			}
			in, err := w.ResolveInputs(goldenInputs(g.inputs, closedURL))
			require.NoError(t, err)
			res, err := r.Start(ctx, runner.StartRequest{Workflow: w, Inputs: in, Options: runner.Options{Replay: &runner.ReplaySource{Cassette: c}}})
			require.NoError(t, err)
			require.NoError(t, res.Err)
			b, err := json.Marshal(r.Doc(ctx, res))
			require.NoError(t, err)
			var doc map[string]any
			require.NoError(t, json.Unmarshal(b, &doc))
			want, err := os.ReadFile(filepath.Join("testdata", "examples", g.name+".json"))
			require.NoError(t, err)
			require.Equal(t, string(want), string(normalize(doc, closedURL)),
				"the replay of %s's cassette decided otherwise than its recorded run", g.name)
		})
	}
}

func goldenInputs(in map[string]any, server string) map[string]any {
	out := map[string]any{}
	for k, v := range in {
		if s, ok := v.(string); ok {
			v = strings.ReplaceAll(s, "{SERVER}", server)
		}
		out[k] = v
	}
	return out
}

// recordCassettes runs every golden example live with --record and keeps
// its cassette and result.
func recordCassettes(t *testing.T) {
	srv := exampleServer(t)
	everything, err := filepath.Abs(filepath.Join("..", "mcp", "testdata", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	require.NoError(t, err)
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("recording the agent example needs node")
	}
	_, err = os.Stat(everything)
	require.NoError(t, err, "recording the agent example needs: npm ci --prefix internal/mcp/testdata")
	dir := filepath.Join("..", "..", "examples", "testdata", "cassettes")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, g := range goldenCassettes {
		var env map[string]string
		if g.model {
			model := llmtest.NewServer(t, llmtest.OpenAI, agentExampleScript())
			env = fakeModel(model.BaseURL())
		}
		r, err := runner.Open(runner.Config{Dir: t.TempDir(), LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
		require.NoError(t, err)
		ctx := context.Background()
		w, err := r.Load(filepath.Join("..", "..", "examples", g.file))
		require.NoError(t, err)
		if g.model {
			w.MCPServers[0].Args = []string{everything, "stdio"} // the file's path is relative to the repository root
		}
		in, err := w.ResolveInputs(goldenInputs(g.inputs, srv.URL))
		require.NoError(t, err)
		res, err := r.Start(ctx, runner.StartRequest{Workflow: w, Inputs: in, Options: runner.Options{Record: true}})
		require.NoError(t, err)
		require.NoError(t, res.Err)
		b, err := os.ReadFile(filepath.Join(res.Run.Dir, cassette.FileName))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, g.name+".jsonl"), b, 0o644))
		doc, err := json.Marshal(r.Doc(ctx, res))
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(doc, &m))
		require.NoError(t, os.WriteFile(filepath.Join("testdata", "examples", g.name+".json"), normalize(m, srv.URL), 0o644))
		require.NoError(t, r.Close())
	}
}
