package repair_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	_ "github.com/skeinhq/skein/internal/llm/openai"
	"github.com/skeinhq/skein/internal/repair"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

func TestPrompt(t *testing.T) {
	t.Parallel()
	w := decodeFlow(t, chainFlow)
	res := &engine.Result{Status: engine.RunFailed, Steps: []*engine.StepRecord{
		{Node: "a", Type: "http", Status: engine.StatusSuccess, Cached: true, Output: map[string]any{"status": 200, "success": true}},
		{Node: "b", Type: "set", Status: engine.StatusSuccess, Output: map[string]any{"key": "s3cret-value"}},
		{Node: "c", Type: "http", Status: engine.StatusFailed, Error: &node.Error{Category: "http_status", Message: "GET answered 400"}},
	}}
	problems := []repair.Problem{{
		Phase: repair.PhaseRuntime, Node: "c", Type: "http", Category: "http_status", Code: "http_400", Message: "GET answered 400",
		Status: 400, Body: `{"error": "key s3cret-value is wrong"}`, Params: map[string]any{"query": map[string]any{"key": "s3cret-value"}},
		Upstream: []repair.Fields{{Node: "b", Type: "set", Fields: []string{"key (string)"}}},
	}}

	msgs := repair.Prompt(repair.Case{
		File: "/some/where/chain.yaml", Source: []byte(chainFlow), Problems: problems,
		Steps: repair.Steps(w, res), Kinds: repair.Kinds(w, node.Default),
		Earlier: []string{`node b: values.key: "x" → "y"`},
		Redact:  func(s string) string { return strings.ReplaceAll(s, "s3cret-value", "***") },
	})

	require.Len(t, msgs, 2)
	require.Equal(t, llm.RoleSystem, msgs[0].Role)
	require.Contains(t, msgs[0].Content, `{"workflow": "<the whole corrected workflow file>"`)
	user := msgs[1].Content
	for _, want := range []string{
		"Workflow file chain.yaml:\n```yaml\nversion: 1\nname: chain\n",
		"The run failed. Errors:\n1. node c (http): http_status [http_400], HTTP status 400: GET answered 400",
		`response body: {"error": "key *** is wrong"}`,
		`parameters as run: {"query":{"key":"***"}}`,
		"fields available upstream:\n     b (set): key (string)",
		"- a (http): success (reused); output fields: status (number)",
		"- c (http): failed — http_status: GET answered 400",
		`- node b: values.key: "x" → "y"`,
		"- http: Sends an HTTP request.",
		"    url (string, required): The URL.",
		"- set: ",
	} {
		require.Contains(t, user, want)
	}
	require.NotContains(t, user, "s3cret-value", "secrets are redacted")
}

func TestPromptValidation(t *testing.T) {
	t.Parallel()
	msgs := repair.Prompt(repair.Case{
		File: "flow.json", Source: []byte(`{"version": 1}`),
		Problems: []repair.Problem{{Phase: repair.PhaseValidation, Category: "validation", Message: "the workflow has no name", Line: 1, Col: 1, Path: "name"}},
	})
	user := msgs[1].Content
	require.Contains(t, user, "```json\n{\"version\": 1}\n```")
	require.Contains(t, user, "The workflow does not validate; nothing ran. Errors:\n1. validation: the workflow has no name (line 1, column 1, at name)")
	require.NotContains(t, user, "Steps of the run")
}

func provider(t *testing.T, srv *llmtest.Server) llm.Provider {
	t.Helper()
	p, err := llm.New(workflow.LLMConfig{Name: "repair", Provider: "openai", Model: "repair-model", BaseURL: srv.BaseURL(), APIKey: "k"}, func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	return p
}

func reply(t *testing.T, wf, why string) llmtest.Turn {
	t.Helper()
	b, err := json.Marshal(map[string]string{"workflow": wf, "explanation": why})
	require.NoError(t, err)
	return llmtest.Turn{Text: string(b), Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}}
}

func TestAsk(t *testing.T) {
	t.Parallel()
	msgs := []llm.Message{llm.System("s"), llm.User("u")}
	tests := []struct {
		name    string
		script  llmtest.Script
		want    string
		why     string
		err     string
		calls   int
		tokens  int
		errKind error
	}{
		{name: "JSON", script: llmtest.Script{reply(t, chainFlow, " fixed it ")}, want: chainFlow, why: "fixed it", calls: 1, tokens: 15},
		{name: "a fenced workflow inside the JSON", script: llmtest.Script{reply(t, "```yaml\n"+chainFlow+"```", "")}, want: chainFlow, calls: 1, tokens: 15},
		{name: "a fenced block instead of JSON", script: llmtest.Script{
			llmtest.Reply("Here it is:\n```yaml\n" + chainFlow + "```"), llmtest.Reply("```yaml\n" + chainFlow + "```\nThe key was wrong."),
		}, want: chainFlow, calls: 2},
		{name: "no workflow", script: llmtest.Script{reply(t, "I cannot help", "")}, calls: 1, errKind: repair.ErrNoWorkflow},
		{name: "the model fails", script: llmtest.Script{llmtest.Fail(401)}, calls: 1, err: "401"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, llmtest.OpenAI, tc.script)

			got, resp, err := repair.Ask(context.Background(), provider(t, srv), "repair-model", msgs)

			require.Equal(t, tc.calls, srv.Calls())
			first := srv.Requests()[0]
			require.Equal(t, "repair-model", first.Model)
			require.Equal(t, []any{"workflow", "explanation"}, first.Schema["required"], "the reply schema is sent")
			switch {
			case tc.errKind != nil:
				require.ErrorIs(t, err, tc.errKind)
			case tc.err != "":
				require.ErrorContains(t, err, tc.err)
			default:
				require.NoError(t, err)
				require.Equal(t, tc.want, string(got.Workflow))
				require.Equal(t, tc.why, got.Explanation)
				if tc.tokens > 0 {
					require.Equal(t, tc.tokens, resp.Usage.TotalTokens)
				}
			}
		})
	}
}

func TestExtract(t *testing.T) {
	t.Parallel()
	yaml := "version: 1\nname: x\nnodes: []"
	tests := []struct {
		name string
		text string
		want string // "" when nothing is found
	}{
		{"plain YAML", yaml, yaml + "\n"},
		{"fenced", "Sure:\n```yaml\n" + yaml + "\n```\nDone.", yaml + "\n"},
		{"fenced without a language", "```\n" + yaml + "\n```", yaml + "\n"},
		{"JSON with a workflow", `{"workflow": "version: 1\nnodes: []", "explanation": "x"}`, "version: 1\nnodes: []\n"},
		{"a JSON workflow", `{"version": 1, "name": "x", "nodes": []}`, `{"version": 1, "name": "x", "nodes": []}` + "\n"},
		{"JSON without a workflow", `{"explanation": "no"}`, ""},
		{"prose", "I could not fix it.", ""},
		{"an unclosed fence", "```yaml\n" + yaml, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := repair.Extract(tc.text)
			require.Equal(t, tc.want != "", ok)
			require.Equal(t, tc.want, string(got))
		})
	}
}

func FuzzExtract(f *testing.F) {
	for _, s := range []string{"nodes: []", "```yaml\nnodes: []\n```", `{"workflow": "nodes: []"}`, `{"nodes": []}`, "```", "{", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := repair.Extract(s)
		if !ok {
			return
		}
		if len(got) == 0 || got[len(got)-1] != '\n' {
			t.Fatalf("Extract(%q) = %q: want a final newline", s, got)
		}
		if !strings.Contains(string(got), "nodes") {
			t.Fatalf("Extract(%q) = %q: not a workflow", s, got)
		}
	})
}
