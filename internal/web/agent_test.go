package web_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/mcp/mcptest"
)

// TestApproveAnAgentsToolCall: an agent's call of a tool in approve_tools
// waits; the page shows the waiting node with the call, and its approval
// form runs the call; the run completes.
func TestApproveAnAgentsToolCall(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	var wrote atomic.Int64
	srv := mcptest.New(t)
	srv.AddDescribedTool("write_file", "Writes a file.", map[string]any{
		"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"},
	}, func(context.Context, map[string]any) (*sdk.CallToolResult, error) {
		wrote.Add(1)
		return mcptest.Text("written"), nil
	})
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "fs__write_file", Arguments: map[string]any{"path": "notes.txt"}}},
			Usage: llm.Usage{InputTokens: 50, OutputTokens: 10}},
		{Text: "Wrote notes.txt.", Usage: llm.Usage{InputTokens: 60, OutputTokens: 5}},
	})
	s := serve(t, map[string]string{"writer.yaml": `version: 1
name: writer
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "` + model.BaseURL() + `", api_key: test}
mcp_servers:
  fs: {url: "` + srv.URL + `"}
nodes:
  - {id: start, type: trigger.manual}
  - {id: writer, type: agent, prompt: "write the notes", tools: [fs.*], approve_tools: [write_file]}
edges:
  - {from: start, to: writer}
outputs:
  said: "{{ writer.text }}"
`})
	s.signIn(ctx)
	id := s.start("writer")
	do(t, ctx, chromedp.Navigate(s.url+"/#/runs/"+id))
	until(t, ctx, `document.querySelector('g.node[data-node="writer"][data-status="waiting"]')`)
	do(t, ctx, chromedp.Click(`g.node[data-node="writer"]`), chromedp.WaitVisible(`form.approve textarea`))
	until(t, ctx, `document.querySelector('section.panel').textContent.includes("notes.txt")`)
	require.Zero(t, wrote.Load(), "the call waits for the approval")
	require.Contains(t, eval[string](t, ctx, `document.querySelector("form.approve textarea").value`), `"approved": true`)

	do(t, ctx, chromedp.Click(`form.approve button[type="submit"]`))
	until(t, ctx, `document.querySelector('section.run[data-status="completed"]')`)
	require.EqualValues(t, 1, wrote.Load(), "the approved call ran")
	require.Equal(t, map[string]any{"said": "Wrote notes.txt."}, s.api("GET", "/api/runs/"+id, nil)["outputs"])
	require.Equal(t, 2, model.Calls(), "no model turn is paid for twice")
}
