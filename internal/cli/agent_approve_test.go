package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/mcp/mcptest"
)

// TestAgentApprovalCLI: `skein run` leaves an agent whose write_file call
// needs approval waiting (exit 4, saying how to approve); `skein signal`
// approves it and the run goes on to the agent's second call, which
// waits too; a second `skein signal` denies that one, and the model's next
// request holds the refusal (acceptance 4 of issue 16).
func TestAgentApprovalCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := t.TempDir()
	fs := mcptest.New(t)
	fs.AddTool("write_file", nil, func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
		p := filepath.Join(files, filepath.Base(args["path"].(string)))
		return mcptest.Text("wrote " + p), os.WriteFile(p, []byte(args["content"].(string)), 0o644)
	})
	call := func(id, path string) llm.ToolCall {
		return llm.ToolCall{ID: id, Name: "fs__write_file", Arguments: map[string]any{"path": path, "content": "x"}}
	}
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		llmtest.CallTools(call("c1", "a.txt")),
		llmtest.CallTools(call("c2", "b.txt")),
		llmtest.Reply("a.txt written, b.txt refused"),
	})
	flow := filepath.Join(dir, "writer.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: writer
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "`+model.BaseURL()+`", api_key: test}
mcp_servers:
  fs: {url: "`+fs.URL+`"}
nodes:
  - {id: writer, type: agent, prompt: write the notes, tools: [fs.*], approve_tools: [fs.write_*]}
outputs:
  answer: "{{ writer.text }}"
`), 0o644))
	skeinDir := filepath.Join(dir, ".skein")

	r := skein(t, "run", "--dir", skeinDir, "--output", "json", flow)
	require.Equal(t, 4, r.code, "waiting: exit 4\n%s", r.stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Equal(t, "waiting", doc["status"])
	id := doc["execution_id"].(string)
	require.NoFileExists(t, filepath.Join(files, "a.txt"))

	show := skein(t, "runs", "show", "--dir", skeinDir, "-o", "json", id)
	require.Equal(t, 0, show.code, show.stderr)
	require.NoError(t, json.Unmarshal([]byte(show.stdout), &doc))
	step := doc["steps"].([]any)[0].(map[string]any)
	require.Equal(t, "waiting", step["status"])
	approval := step["output"].(map[string]any)["approval"].(map[string]any)
	require.Equal(t, "fs.write_file", approval["tool"], "the waiting step shows the call")
	require.Equal(t, map[string]any{"path": "a.txt", "content": "x"}, approval["arguments"])

	r = skein(t, "signal", "--dir", skeinDir, id, "writer", "--data", `{"approved": true}`)
	require.Equal(t, 4, r.code, "the second call waits: %s\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "signal recorded for writer (visit 1) of run "+id)
	require.Contains(t, r.stdout, "resuming run "+id)
	require.Contains(t, r.stdout, "writer waits for a signal: skein signal "+id+" writer")
	require.FileExists(t, filepath.Join(files, "a.txt"))

	r = skein(t, "signal", "--dir", skeinDir, id, "writer", "--data", `{"approved": false, "reason": "no b"}`)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "run "+id+" completed")
	require.Contains(t, r.stdout, `"answer": "a.txt written, b.txt refused"`)
	require.NoFileExists(t, filepath.Join(files, "b.txt"))
	require.Equal(t, 3, model.Calls(), "no turn of the model was asked twice")
	var refusal string
	for _, m := range model.Last().Messages {
		if m.Role == llm.RoleTool && m.ToolCallID == "c2" {
			refusal = m.Content
		}
	}
	require.Contains(t, refusal, "did not approve this call of fs.write_file")
	require.Contains(t, refusal, "no b")
}
