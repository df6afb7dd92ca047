package server_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/mcp/mcptest"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// TestAgentApprovalThroughTheAPI (issue 16, acceptance 4, on skein
// serve): an agent's write_file call waits, the step showing the call; a
// signal through the API approves it and the file is written; the second
// call waits in turn, is denied, and the model's next request holds the
// refusal.
func TestAgentApprovalThroughTheAPI(t *testing.T) {
	t.Parallel()
	t.Run("local", func(t *testing.T) {
		t.Parallel()
		agentApproval(t, func(flows string) *served { return serve(t, serveOpts{flows: flows}) })
	})
	// Queued on Postgres, the agent runs on a worker process: it parks
	// there, and the signals the API records run it on.
	t.Run("queued", func(t *testing.T) {
		t.Parallel()
		db := pgtest.URL(t)
		startQueued := func(flows string) *served {
			s := serve(t, serveOpts{flows: flows, args: []string{"--db", db}})
			w := exec.Command(bin, "worker", "--db", db, "--dir", t.TempDir())
			var wout bytes.Buffer
			w.Stdout, w.Stderr = &wout, &wout
			require.NoError(t, w.Start())
			t.Cleanup(func() {
				_ = w.Process.Signal(syscall.SIGTERM)
				require.NoError(t, w.Wait(), "the worker exits 0 when it drained:\n%s", wout.String())
			})
			return s
		}
		agentApproval(t, startQueued)
	})
}

func agentApproval(t *testing.T, start func(flows string) *served) {
	files := t.TempDir()
	fs := mcptest.New(t)
	fs.AddTool("write_file", nil, func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
		p := filepath.Join(files, filepath.Base(args["path"].(string)))
		return mcptest.Text("wrote " + p), os.WriteFile(p, []byte("x"), 0o644)
	})
	call := func(id, path string) llm.ToolCall {
		return llm.ToolCall{ID: id, Name: "fs__write_file", Arguments: map[string]any{"path": path}}
	}
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		llmtest.CallTools(call("c1", "a.txt")),
		llmtest.CallTools(call("c2", "b.txt")),
		llmtest.Reply("done"),
	})
	flows := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(flows, "writer.yaml"), []byte(`version: 1
name: writer
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "`+model.BaseURL()+`", api_key: test}
mcp_servers:
  fs: {url: "`+fs.URL+`"}
nodes:
  - {id: writer, type: agent, prompt: write the notes, tools: [fs.*], approve_tools: [write_file]}
outputs:
  answer: "{{ writer.text }}"
`), 0o644))
	s := start(flows)
	id := s.start("writer", nil)

	waitsFor := func(call float64) map[string]any {
		doc := s.until(id, "writer waiting", func(doc map[string]any) bool {
			st := step(doc, "writer")
			if st == nil || st["status"] != "waiting" {
				return false
			}
			a, _ := st["output"].(map[string]any)["approval"].(map[string]any)
			return a != nil && a["call"] == call
		})
		return step(doc, "writer")["output"].(map[string]any)["approval"].(map[string]any)
	}
	first := waitsFor(1)
	require.Equal(t, "fs.write_file", first["tool"])
	require.Equal(t, map[string]any{"path": "a.txt"}, first["arguments"])
	require.NoFileExists(t, filepath.Join(files, "a.txt"))

	a := s.do("POST", "/api/runs/"+id+"/signals/writer", s.token, map[string]any{"approved": true})
	require.Equal(t, http.StatusAccepted, a.status, string(a.body))
	second := waitsFor(2)
	require.Equal(t, map[string]any{"path": "b.txt"}, second["arguments"])
	require.FileExists(t, filepath.Join(files, "a.txt"))

	a = s.do("POST", "/api/runs/"+id+"/signals/writer", s.token, map[string]any{"approved": false, "reason": "no b"})
	require.Equal(t, http.StatusAccepted, a.status, string(a.body))
	doc := s.ended(id)
	require.Equal(t, "completed", doc["status"], "%v", doc["error"])
	require.Equal(t, "done", doc["outputs"].(map[string]any)["answer"])
	require.NoFileExists(t, filepath.Join(files, "b.txt"))
	require.Equal(t, 3, model.Calls())
	var refusal string
	for _, m := range model.Last().Messages {
		if m.Role == llm.RoleTool && m.ToolCallID == "c2" {
			refusal = m.Content
		}
	}
	require.Contains(t, refusal, "did not approve")
	require.Contains(t, refusal, "no b")
}

// TestAgentWorkflowToolQueued: on a queued run (Postgres, a worker), an
// agent's workflow tool runs as a child run of the agent's run, its
// outputs are the tool's result, and what it spent counts in the run's
// tokens.
func TestAgentWorkflowToolQueued(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	hundred := llm.Usage{InputTokens: 50, OutputTokens: 50, TotalTokens: 100}
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "lookup", Arguments: map[string]any{"city": "Oslo"}}}, Usage: hundred},
		{Text: "rain", Usage: llm.Usage{InputTokens: 150, OutputTokens: 150, TotalTokens: 300}}, // the child's model
		{Text: "take an umbrella", Usage: hundred},
	})
	flows := t.TempDir()
	llmCfg := "llm:\n  default: {provider: openai, model: gpt-4.1-mini, base_url: \"" + model.BaseURL() + "\", api_key: test}\n"
	require.NoError(t, os.MkdirAll(filepath.Join(flows, "tools"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(flows, "tools", "lookup.yaml"), []byte(`version: 1
name: lookup
inputs:
  city: {type: string, required: true}
`+llmCfg+`nodes:
  - {id: ask, type: llm, prompt: "weather in {{ inputs.city }}"}
outputs:
  forecast: "{{ ask.text }}"
`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(flows, "planner.yaml"), []byte(`version: 1
name: planner
`+llmCfg+`nodes:
  - {id: agent, type: agent, prompt: plan, tools: [{workflow: tools/lookup.yaml, name: lookup}]}
outputs:
  answer: "{{ agent.text }}"
`), 0o644))
	s := serve(t, serveOpts{flows: flows, args: []string{"--db", db}})
	w := exec.Command(bin, "worker", "--db", db, "--dir", t.TempDir())
	var wout bytes.Buffer
	w.Stdout, w.Stderr = &wout, &wout
	require.NoError(t, w.Start())
	t.Cleanup(func() {
		_ = w.Process.Signal(syscall.SIGTERM)
		require.NoError(t, w.Wait(), "the worker exits 0 when it drained:\n%s", wout.String())
	})
	id := s.start("planner", nil)
	doc := s.ended(id)
	require.Equal(t, "completed", doc["status"], "%v", doc["error"])
	require.Equal(t, "take an umbrella", doc["outputs"].(map[string]any)["answer"])
	require.Equal(t, float64(500), doc["tokens"], "the agent's turns and its child's call")
	var result string
	for _, m := range model.Last().Messages {
		if m.Role == llm.RoleTool && m.ToolCallID == "c1" {
			result = m.Content
		}
	}
	require.JSONEq(t, `{"forecast": "rain", "execution_id": "`+id+`.agent1.lookup1"}`, result)
	kid := s.admin("GET", "/api/runs/"+id+".agent1.lookup1", nil, http.StatusOK)
	require.Equal(t, "completed", kid["status"])
	require.Equal(t, id, kid["parent_id"])
}
