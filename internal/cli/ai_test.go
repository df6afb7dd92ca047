package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// aiRun is `skein run|resume --output json` decoded.
type aiRun struct {
	ID      string         `json:"execution_id"`
	Status  string         `json:"status"`
	Outputs map[string]any `json:"outputs"`
	Error   *struct {
		Code     string `json:"code"`
		Category string `json:"category"`
		Message  string `json:"message"`
	} `json:"error"`
	Tokens  int     `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
	Steps   []struct {
		Node   string         `json:"node"`
		Status string         `json:"status"`
		Output map[string]any `json:"output"`
		Error  *struct {
			Code     string `json:"code"`
			Category string `json:"category"`
		} `json:"error"`
		Cached  bool    `json:"cached"`
		Tokens  int     `json:"tokens"`
		CostUSD float64 `json:"cost_usd"`
	} `json:"steps"`
}

func decodeAIRun(t *testing.T, r result) aiRun {
	t.Helper()
	var out aiRun
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	return out
}

// step returns the last step of a node, failing when it has none.
func (o aiRun) step(t *testing.T, id string) int {
	t.Helper()
	at := -1
	for i, s := range o.Steps {
		if s.Node == id {
			at = i
		}
	}
	require.GreaterOrEqual(t, at, 0, "node %s has no step", id)
	return at
}

// fakeModelEnv points the environment's default model at srv, as a user
// would with an OpenAI-compatible server. t.Setenv: the test cannot be
// parallel.
func fakeModelEnv(t *testing.T, srv *llmtest.Server) {
	t.Setenv("SKEIN_LLM_PROVIDER", "openai")
	t.Setenv("SKEIN_LLM_BASE_URL", srv.BaseURL())
	t.Setenv("SKEIN_LLM_MODEL", "gpt-4.1-mini")
	t.Setenv("SKEIN_LLM_API_KEY", "fake-key")
}

// llmSection is an llm: section pointing at srv, for workflows that do not
// depend on the environment (so their tests can run in parallel).
func llmSection(srv *llmtest.Server) string {
	return fmt.Sprintf(`llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: %q, api_key: fake-key}
`, srv.BaseURL())
}

// TestExtractExample runs examples/extract.yaml through the CLI against a
// fake OpenAI-compatible server named only by SKEIN_LLM_* variables: the
// llm node sends the input text with the schema, its JSON reply (after one
// re-ask when the first is invalid) routes the switch, and the outputs use
// the extracted fields. Usage and cost land on the step and the run.
func TestExtractExample(t *testing.T) {
	const reply = `{"category": %q, "order_id": %s, "customer": %s, "summary": %q}`
	tests := []struct {
		name     string
		args     []string
		script   llmtest.Script
		inText   string
		category string
		ticket   string
		ran      string
		calls    int
	}{
		{
			name: "billing, default input",
			script: llmtest.Script{{
				Text:  fmt.Sprintf(reply, "billing", `"1042"`, `"Dana"`, "Charged twice for order 1042."),
				Usage: llm.Usage{InputTokens: 120, OutputTokens: 30},
			}},
			inText:   "charged twice for order 1042",
			category: "billing",
			ticket:   "[BILLING] order 1042: Charged twice for order 1042.",
			ran:      "billing",
			calls:    1,
		},
		{
			name: "bug, after a re-ask",
			args: []string{"-i", "text=The app crashes when I export a PDF."},
			script: llmtest.Script{
				{Text: `{"category": "crash"}`, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}},
				{Text: fmt.Sprintf(reply, "bug", "null", "null", "Export to PDF crashes the app."), Usage: llm.Usage{InputTokens: 150, OutputTokens: 20}},
			},
			inText:   "The app crashes when I export a PDF.",
			category: "bug",
			ticket:   "[ENG] Export to PDF crashes the app.",
			ran:      "engineering",
			calls:    2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.OpenAI, tc.script)
			fakeModelEnv(t, srv)
			r := skein(t, append([]string{"run", "--output", "json", "--dir", t.TempDir(), "../../examples/extract.yaml"}, tc.args...)...)
			require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			res := decodeAIRun(t, r)
			require.Equal(t, "completed", string(res.Status))
			require.Equal(t, tc.category, res.Outputs["category"])
			require.Equal(t, tc.ticket, res.Outputs["ticket"])

			require.Equal(t, tc.calls, srv.Calls())
			first := srv.Requests()[0]
			require.Equal(t, "gpt-4.1-mini", first.Model, "SKEIN_LLM_MODEL names the model")
			require.Equal(t, "Bearer fake-key", first.Header.Get("Authorization"), "SKEIN_LLM_API_KEY is the key")
			require.NotNil(t, first.Schema, "the node's schema is sent")
			require.Contains(t, first.Schema["properties"], "category")
			require.NotNil(t, first.Temperature)
			require.Zero(t, *first.Temperature)
			require.Len(t, first.Messages, 2, "system and prompt")
			require.Equal(t, llm.RoleSystem, first.Messages[0].Role)
			require.Contains(t, first.Messages[1].Content, tc.inText)

			ex := res.Steps[res.step(t, "extract")]
			require.Equal(t, "success", string(ex.Status))
			require.Equal(t, tc.category, ex.Output["json"].(map[string]any)["category"])
			var tokens int
			for _, turn := range tc.script {
				tokens += turn.Usage.InputTokens + turn.Usage.OutputTokens
			}
			require.Equal(t, tokens, ex.Tokens, "the step's tokens cover every call")
			require.Positive(t, ex.CostUSD)
			require.Equal(t, tokens, res.Tokens, "the run's tokens")
			require.InDelta(t, ex.CostUSD, res.CostUSD, 1e-12)
			require.NotContains(t, ex.Output, "_token_usage", "directives are not outputs")

			for _, team := range []string{"billing", "engineering", "helpdesk"} {
				want := "skipped"
				if team == tc.ran {
					want = "success"
				}
				require.Equal(t, want, res.Steps[res.step(t, team)].Status, "team %s", team)
			}
		})
	}
}

// TestAgentExample runs examples/agent.yaml from the repository root, as
// its header says, with the real everything MCP server and a fake model
// named by SKEIN_LLM_*: the model adds with get-sum, fetches the tiny image
// and echoes, then answers. The run folder holds the tool events and the
// image. Not parallel: it sets the environment and the working directory.
func TestAgentExample(t *testing.T) {
	needEverything(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, agentExampleScript())
	fakeModelEnv(t, srv)
	runs := t.TempDir()
	t.Chdir(filepath.Join("..", ".."))

	r := skein(t, "run", "--output", "json", "--dir", runs, filepath.Join("examples", "agent.yaml"))
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	res := decodeAIRun(t, r)
	require.Equal(t, "completed", string(res.Status))
	require.Equal(t, "19 + 23 is 42. The image is a tiny logo.", res.Outputs["answer"])
	require.EqualValues(t, 3, res.Outputs["tool_calls"])
	require.EqualValues(t, 1475, res.Outputs["tokens"])
	require.Equal(t, 1475, res.Tokens)

	require.Equal(t, 3, srv.Calls())
	require.Contains(t, srv.Requests()[0].Messages[1].Content, "What is 19 + 23?")
	var offered []string
	for _, tl := range srv.Requests()[0].Tools {
		offered = append(offered, tl.Name)
	}
	require.ElementsMatch(t, []string{"everything__get-sum", "everything__get-tiny-image", "everything__echo"}, offered,
		"only the allowed tools are offered")
	var sum string
	for _, m := range srv.Requests()[1].Messages {
		if m.ToolCallID == "c1" {
			sum = m.Content
		}
	}
	require.Equal(t, "The sum of 19 and 23 is 42.", sum, "the model got the real tool's result")

	var events, image []string
	require.NoError(t, filepath.WalkDir(runs, func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		switch {
		case d.Name() == "events.jsonl" && filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(path)))) == "runs":
			events = append(events, path) // the run's events; the node's are those naming it
		case d.Name() == "agent-get-tiny-image-1.png":
			image = append(image, path)
		}
		return nil
	}))
	require.Len(t, image, 1, "the image is saved in the node's artifacts")
	require.Equal(t, "artifacts", filepath.Base(filepath.Dir(image[0])))
	png, err := os.ReadFile(image[0])
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG")), "the artifact is a PNG")
	require.Len(t, events, 1)
	f, err := os.Open(events[0])
	require.NoError(t, err)
	defer f.Close()
	kinds := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev struct {
			Type string `json:"type"`
			Node string `json:"node"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		if ev.Node == "helper" {
			kinds[ev.Type]++
		}
	}
	require.NoError(t, sc.Err())
	require.Equal(t, 3, kinds["tool_call"])
	require.Equal(t, 3, kinds["tool_result"])
	require.Equal(t, 3, kinds["llm_call"])
}

// aiMissing skips a test that needs the npm MCP servers, or fails it when
// CI=true: CI must run it.
func aiMissing(t *testing.T, what string) {
	t.Helper()
	msg := what + "; install the MCP test servers from the repository root with: npm ci --prefix internal/mcp/testdata"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// TestBudgetStopsAndResumes runs two llm steps under limits.max_tokens
// when the first step's usage alone reaches the limit: the second fails
// with budget_exceeded before calling the model, the first step's output is
// kept, and `skein resume --workflow` with a raised limit reuses the first
// step and completes.
func TestBudgetStopsAndResumes(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{Text: "alpha", Usage: llm.Usage{InputTokens: 80, OutputTokens: 20}},
	})
	dir := t.TempDir()
	flow := func(maxTokens int) string {
		file := filepath.Join(dir, fmt.Sprintf("budget-%d.yaml", maxTokens))
		src := fmt.Sprintf(`version: 1
name: budget
%slimits: {max_tokens: %d}
nodes:
  - {id: greek, type: llm, prompt: "Say a Greek letter."}
  - {id: after, type: llm, prompt: "Say the letter after {{ greek.text }}."}
edges:
  - {from: greek, to: after}
outputs:
  letters: "{{ greek.text }} {{ after.text }}"
`, llmSection(srv), maxTokens)
		require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
		return file
	}
	runs := filepath.Join(dir, "state")

	r := skein(t, "run", "--output", "json", "--dir", runs, flow(100))
	require.Equal(t, 1, r.code, "a spent budget fails the run: %s", r.stderr)
	res := decodeAIRun(t, r)
	require.Equal(t, "failed", string(res.Status))
	require.NotNil(t, res.Error)
	require.Equal(t, "budget_exceeded", res.Error.Category, res.Error.Message)
	require.Contains(t, res.Error.Message, "limits.max_tokens is 100")
	first := res.Steps[res.step(t, "greek")]
	require.Equal(t, "success", string(first.Status))
	require.Equal(t, "alpha", first.Output["text"], "the first step's output is kept")
	require.Equal(t, 100, first.Tokens)
	second := res.Steps[res.step(t, "after")]
	require.Equal(t, "failed", string(second.Status))
	require.Equal(t, "budget_exceeded", second.Error.Category)
	require.Equal(t, 1, srv.Calls(), "the second step never called the model")
	require.Equal(t, 100, res.Tokens)

	srv.Push(llmtest.Turn{Text: "beta", Usage: llm.Usage{InputTokens: 90, OutputTokens: 10}})
	r = skein(t, "resume", res.ID, "--output", "json", "--dir", runs, "--file", flow(1000))
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	resumed := decodeAIRun(t, r)
	require.Equal(t, res.ID, resumed.ID)
	require.Equal(t, "completed", string(resumed.Status))
	require.Equal(t, "alpha beta", resumed.Outputs["letters"])
	require.True(t, resumed.Steps[resumed.step(t, "greek")].Cached, "the first step is reused")
	require.Equal(t, "success", string(resumed.Steps[resumed.step(t, "after")].Status))
	require.Equal(t, 2, srv.Calls(), "only the second step called the model")
	require.Equal(t, "Say the letter after alpha.", srv.Last().Messages[0].Content)
}

// TestSecretsAndModels checks what a model sees of secrets. A secret used
// only in an http header and a shell variable does not reach the model
// through a prompt built from those steps' outputs. A prompt that writes
// {{ secrets.X }} does send it (the user asked for it), but every record of
// the prompt — the step's params in run.json — and of the reply shows ***.
func TestSecretsAndModels(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-7Hq2-unguessable"
	var sawAuth atomic.Value
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawAuth.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"note": "3 invoices are overdue"}`)
	}))
	defer api.Close()
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		llmtest.Reply("Three invoices are overdue."),
		llmtest.Reply("Noted: your token is " + secret + "."),
	})

	dir := t.TempDir()
	flow := filepath.Join(dir, "secret-ai.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: secret_ai
secrets: [API_TOKEN]
`+llmSection(model)+`nodes:
  - id: fetch
    type: http
    url: "`+api.URL+`/invoices"
    headers: {Authorization: "Bearer {{ secrets.API_TOKEN }}"}
  - id: probe
    type: shell
    command: [sh, -c, 'test "$TOKEN" = "$1" && echo token-set', x, "{{ secrets.API_TOKEN }}"]
    env: {TOKEN: "{{ secrets.API_TOKEN }}"}
  - id: summary
    type: llm
    prompt: "Summarise: {{ fetch.body.note }} ({{ probe.stdout }})"
  - id: explicit
    type: llm
    prompt: "Remember this token: {{ secrets.API_TOKEN }}"
    send_secrets: true
edges:
  - {from: fetch, to: probe}
  - {from: probe, to: summary}
  - {from: summary, to: explicit}
outputs:
  summary: "{{ summary.text }}"
  echoed: "{{ explicit.text }}"
`), 0o644))
	envFile := filepath.Join(dir, ".env")
	require.NoError(t, os.WriteFile(envFile, []byte("API_TOKEN="+secret+"\n"), 0o600))
	runs := filepath.Join(dir, "state")

	r := skein(t, "run", "--output", "json", "--dir", runs, "--secrets-file", envFile, flow)
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	require.Equal(t, "Bearer "+secret, sawAuth.Load(), "the http node used the secret")
	res := decodeAIRun(t, r)
	require.Equal(t, "token-set\n", res.Steps[res.step(t, "probe")].Output["stdout"], "the shell got the secret")

	require.Equal(t, 2, model.Calls())
	summary, explicit := model.Requests()[0], model.Requests()[1]
	require.Equal(t, "Summarise: 3 invoices are overdue (token-set\n)", summary.Messages[0].Content)
	require.NotContains(t, string(summary.Raw), secret, "a secret the prompt does not name never reaches the model")
	for k, v := range summary.Header {
		require.NotContains(t, strings.Join(v, " "), secret, "header %s", k)
	}
	require.Equal(t, "Remember this token: "+secret, explicit.Messages[0].Content, "a prompt that names a secret sends it")

	require.NotContains(t, r.stdout+r.stderr, secret)
	require.Equal(t, "Noted: your token is ***.", res.Outputs["echoed"])
	require.Equal(t, "Noted: your token is ***.", res.Steps[res.step(t, "explicit")].Output["text"])

	var prompts []string
	require.NoError(t, filepath.WalkDir(runs, func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NotContains(t, string(data), secret, "%s holds the secret", path)
		if filepath.Base(path) == "run.json" {
			var doc struct {
				Steps []struct {
					Node   string         `json:"node"`
					Params map[string]any `json:"params"`
				} `json:"steps"`
			}
			require.NoError(t, json.Unmarshal(data, &doc))
			for _, s := range doc.Steps {
				if s.Node == "explicit" {
					prompts = append(prompts, fmt.Sprint(s.Params["prompt"]))
				}
			}
		}
		return nil
	}))
	require.Equal(t, []string{"Remember this token: ***"}, prompts, "the stored prompt is redacted")
}

// TestSecretInPromptNeedsOptIn: a prompt that reads a secret would send it
// to the model's provider: validate refuses it unless the node says
// send_secrets: true.
func TestSecretInPromptNeedsOptIn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(extra string) string {
		f := filepath.Join(dir, fmt.Sprintf("p%d.yaml", len(extra)))
		require.NoError(t, os.WriteFile(f, []byte(`version: 1
name: p
secrets: [API_TOKEN]
llm:
  default: {provider: openai, model: m, base_url: "http://127.0.0.1:9/v1"}
nodes:
  - id: ask
    type: llm
    system: "You are careful."
    prompt: "Token is {{ secrets.API_TOKEN }}"
`+extra), 0o644))
		return f
	}
	r := skein(t, "validate", write(""))
	require.Equal(t, 2, r.code, r.stdout)
	require.Contains(t, r.stdout+r.stderr, "prompt reads secrets.API_TOKEN, which would be sent to the model's provider; set send_secrets: true")
	r = skein(t, "validate", write("    send_secrets: true\n"))
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
}

// needEverything fails (CI) or skips the test when node or the pinned
// server-everything (make deps) is missing.
func needEverything(t *testing.T) {
	t.Helper()
	everything := filepath.Join("..", "mcp", "testdata", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := exec.LookPath("node"); err != nil {
		aiMissing(t, "node is not in PATH")
	}
	if _, err := os.Stat(everything); err != nil {
		aiMissing(t, everything+" is missing")
	}
}

// agentExampleScript is the fake model of examples/agent.yaml: it adds
// with get-sum, fetches the tiny image, echoes, then answers.
func agentExampleScript() llmtest.Script {
	call := func(id, name string, args map[string]any) llm.ToolCall {
		return llm.ToolCall{ID: id, Name: name, Arguments: args}
	}
	return llmtest.Script{
		{ToolCalls: []llm.ToolCall{
			call("c1", "everything__get-sum", map[string]any{"a": 19, "b": 23}),
			call("c2", "everything__get-tiny-image", map[string]any{}),
		}, Usage: llm.Usage{InputTokens: 300, OutputTokens: 40}},
		{ToolCalls: []llm.ToolCall{call("c3", "everything__echo", map[string]any{"message": "done"})}, Usage: llm.Usage{InputTokens: 500, OutputTokens: 20}},
		{Text: "19 + 23 is 42. The image is a tiny logo.", Usage: llm.Usage{InputTokens: 600, OutputTokens: 15}},
	}
}
