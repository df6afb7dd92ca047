package runner_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/runner"
)

// lookupChild is a workflow offered to agents as a tool: a model call that
// costs 300 tokens, its reply the child's output.
func lookupChild(base string) string {
	return `version: 1
name: lookup
description: Looks a city up.
inputs:
  city: {type: string, required: true, description: The city to look up.}
  days: {type: integer, default: 3}
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "` + base + `", api_key: test}
nodes:
  - {id: ask, type: llm, prompt: "weather in {{ inputs.city }} for {{ inputs.days }} days"}
outputs:
  forecast: "{{ ask.text }}"
`
}

func agentWithTools(base, limits string) string {
	return `version: 1
name: helper
` + limits + `llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "` + base + `", api_key: test}
nodes:
  - id: agent
    type: agent
    prompt: plan a trip
    tools:
      - {workflow: lookup.yaml, name: lookup, description: "Weather for a city."}
outputs:
  answer: "{{ agent.text }}"
`
}

// An agent's workflow tool: the model is offered the child's inputs as the
// tool's schema; each call is a child run of the agent's run, its tokens in
// the run's totals; its outputs are the tool result; a call the child
// refuses (a missing required input) comes back as an error the model
// reads, and the agent goes on.
func TestAgentWorkflowTool(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "lookup", Arguments: map[string]any{"city": "Oslo"}}}, Usage: llm.Usage{InputTokens: 50, OutputTokens: 50, TotalTokens: 100}},
		{Text: "rain", Usage: llm.Usage{InputTokens: 150, OutputTokens: 150, TotalTokens: 300}}, // the child's model
		{ToolCalls: []llm.ToolCall{{ID: "c2", Name: "lookup", Arguments: map[string]any{"days": 2}}}, Usage: llm.Usage{InputTokens: 50, OutputTokens: 50, TotalTokens: 100}},
		{Text: "take an umbrella", Usage: llm.Usage{InputTokens: 50, OutputTokens: 50, TotalTokens: 100}},
	})
	b.write(t, "lookup.yaml", lookupChild(srv.BaseURL()))
	w, err := b.r.Load(b.write(t, "helper.yaml", agentWithTools(srv.BaseURL(), "")))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "completed", string(res.Run.Status), "%+v", res.Run.Error)
	require.Equal(t, "take an umbrella", res.Run.Outputs["answer"])
	require.Equal(t, 600, res.Run.Tokens, "the agent's turns and the child's call")

	reqs := srv.Requests()
	require.Len(t, reqs, 4)
	require.Len(t, reqs[0].Tools, 1)
	tool := reqs[0].Tools[0]
	require.Equal(t, "lookup", tool.Name)
	require.Equal(t, "Weather for a city.", tool.Description)
	schema, _ := json.Marshal(tool.InputSchema)
	require.JSONEq(t, `{"type": "object", "additionalProperties": false, "required": ["city"], "properties": {
		"city": {"type": "string", "description": "The city to look up."},
		"days": {"type": "integer", "default": 3}}}`, string(schema))

	require.Equal(t, "weather in Oslo for 3 days", lastUser(reqs[1]), "the child ran with the model's arguments and its defaults")
	result := toolResult(t, reqs[2], "c1")
	require.JSONEq(t, `{"forecast": "rain", "execution_id": "`+res.Run.ID+`.agent1.lookup1"}`, result)
	refused := toolResult(t, reqs[3], "c2")
	require.Contains(t, refused, "error: ")
	require.Contains(t, refused, "city", "the model is told which input is missing")

	kids, err := b.r.List(b.ctx, runner.ListRequest{Parent: res.Run.ID})
	require.NoError(t, err)
	ids := map[string]string{}
	for _, k := range kids {
		ids[k.ID] = string(k.Status)
		require.Empty(t, k.Source, "a child run is started by its parent's node, not by a front end")
	}
	require.Equal(t, "completed", ids[res.Run.ID+".agent1.lookup1"], "the call is a child run: %v", ids)
	require.Equal(t, "cli", res.Run.Source)
}

// What a workflow tool spends counts against the run's budget: the agent
// fails with the budget error once the child has spent it.
func TestAgentWorkflowToolBudget(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "lookup", Arguments: map[string]any{"city": "Oslo"}}}, Usage: llm.Usage{InputTokens: 50, OutputTokens: 50, TotalTokens: 100}},
		{Text: "rain", Usage: llm.Usage{InputTokens: 150, OutputTokens: 150, TotalTokens: 300}},
		llmtest.Reply("never asked"),
	})
	b.write(t, "lookup.yaml", lookupChild(srv.BaseURL()))
	w, err := b.r.Load(b.write(t, "helper.yaml", agentWithTools(srv.BaseURL(), "limits: {max_tokens: 350}\n")))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))
	require.Equal(t, 2, srv.Calls(), "no model call after the budget is spent")
	require.Equal(t, 400, res.Run.Tokens)
	require.NotNil(t, res.Run.Error)
	require.Equal(t, "budget_exceeded", res.Run.Error.Category, res.Run.Error.Message)
}

// Validation checks a workflow tool's file, naming the node.
func TestAgentWorkflowToolValidation(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	_, err := b.r.Load(b.write(t, "helper.yaml", agentWithTools("http://127.0.0.1:1/v1", "")))
	require.Error(t, err)
	require.Contains(t, err.Error(), `child workflow "lookup.yaml" of tool lookup not found`)
	require.Contains(t, err.Error(), "(node agent)")

	b.write(t, "lookup.yaml", "version: 1\nname: [broken\n")
	_, err = b.r.Load(b.write(t, "helper.yaml", agentWithTools("http://127.0.0.1:1/v1", "")))
	require.Error(t, err)
	require.Contains(t, err.Error(), `the workflow of tool lookup, "lookup.yaml", is not a valid workflow file`)

	b.write(t, "lookup.yaml", lookupChild("http://127.0.0.1:1/v1"))
	_, err = b.r.Load(b.write(t, "bad.yaml", `version: 1
name: bad
nodes:
  - id: agent
    type: agent
    prompt: go
    tools: [{workflow: lookup.yaml, name: "look up"}]
`))
	require.Error(t, err)
	require.Contains(t, err.Error(), "a workflow tool needs name")

	_, err = b.r.Load(b.write(t, "bad.yaml", "version: 1\nname: bad\nnodes:\n  - {id: agent, type: agent, prompt: go, tools: 5}\n"))
	require.Error(t, err)
	require.Contains(t, err.Error(), "tools is a list of server.tool patterns")
}

func lastUser(req *llmtest.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

func toolResult(t *testing.T, req *llmtest.Request, id string) string {
	t.Helper()
	for _, m := range req.Messages {
		if m.Role == llm.RoleTool && m.ToolCallID == id {
			return m.Content
		}
	}
	require.Failf(t, "no tool result", "the request has no result for tool call %s: %+v", id, req.Messages)
	return ""
}

// A resumed agent that calls its workflow tool again as it did before
// gets the completed child run's outputs from its record: the child does
// not run again.
func TestAgentWorkflowToolResume(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	call := llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "lookup", Arguments: map[string]any{"city": "Oslo"}}}, Usage: llm.Usage{InputTokens: 50, OutputTokens: 50, TotalTokens: 100}}
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		call,
		{Text: "rain", Usage: llm.Usage{InputTokens: 150, OutputTokens: 150, TotalTokens: 300}}, // the child's model
		llmtest.Fail(400),
	})
	b.write(t, "lookup.yaml", lookupChild(srv.BaseURL()))
	w, err := b.r.Load(b.write(t, "helper.yaml", agentWithTools(srv.BaseURL(), "")))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))
	require.Equal(t, 3, srv.Calls())

	srv.Push(call, llmtest.Reply("take an umbrella"))
	again, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.Equal(t, "completed", string(again.Run.Status), "%+v", again.Run.Error)
	require.Equal(t, 5, srv.Calls(), "the agent's two turns; the child's model was not asked again")
	require.JSONEq(t, `{"forecast": "rain", "execution_id": "`+res.Run.ID+`.agent1.lookup1"}`, toolResult(t, srv.Last(), "c1"))
}

// A single MCP pattern may still be written alone: tools: fs.*.
func TestAgentToolsOnePattern(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply("no tools needed")})
	fs := fsServer(t, t.TempDir())
	w, err := b.r.Load(b.write(t, "one.yaml", `version: 1
name: one
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "`+srv.BaseURL()+`", api_key: test}
mcp_servers:
  fs: {url: "`+fs.URL+`"}
nodes:
  - {id: agent, type: agent, prompt: hi, tools: fs.*}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "completed", string(res.Run.Status), "%+v", res.Run.Error)
	require.Equal(t, []string{"fs__write_file"}, func() (names []string) {
		for _, tl := range srv.Last().Tools {
			names = append(names, tl.Name)
		}
		return names
	}())
}

// approve_tools names a workflow tool by its name: a denied call starts
// no child run.
func TestAgentWorkflowToolApproval(t *testing.T) {
	t.Parallel()
	b := setupSignals(t, 0)
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		llmtest.CallTools(llm.ToolCall{ID: "c1", Name: "lookup", Arguments: map[string]any{"city": "Oslo"}}),
		llmtest.Reply("no lookup then"),
	})
	require.NoError(t, os.WriteFile(filepath.Join(b.dir, "lookup.yaml"), []byte(lookupChild(srv.BaseURL())), 0o644))
	src := strings.Replace(agentWithTools(srv.BaseURL(), ""), "    tools:", "    approve_tools: [lookup]\n    tools:", 1)
	res := b.start(t, src, runner.Options{Park: park})
	require.Equal(t, "waiting", string(res.Run.Status), "%+v", res.Run.Error)
	_, err := b.r.Signal(b.ctx, runner.SignalRequest{RunID: res.Run.ID, Node: "agent", Data: map[string]any{"approved": false}})
	require.NoError(t, err)
	done, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID, Options: runner.Options{Park: park}})
	require.NoError(t, err)
	require.Equal(t, "completed", string(done.Run.Status), "%+v", done.Run.Error)
	require.Equal(t, "no lookup then", done.Run.Outputs["answer"])
	require.Contains(t, toolResult(t, srv.Last(), "c1"), "did not approve this call of lookup")
	kids, err := b.r.List(b.ctx, runner.ListRequest{Parent: res.Run.ID})
	require.NoError(t, err)
	require.Empty(t, kids, "the denied call ran no child")
}

// A workflow tool whose child run fails gives the model an error result
// naming the failure, and the agent goes on.
func TestAgentWorkflowToolFails(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		llmtest.CallTools(llm.ToolCall{ID: "c1", Name: "lookup", Arguments: map[string]any{"city": "Oslo"}}),
		llmtest.Fail(400), // the child's model
		llmtest.Reply("the lookup failed"),
	})
	b.write(t, "lookup.yaml", lookupChild(srv.BaseURL()))
	w, err := b.r.Load(b.write(t, "helper.yaml", agentWithTools(srv.BaseURL(), "")))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "completed", string(res.Run.Status), "%+v", res.Run.Error)
	require.Equal(t, "the lookup failed", res.Run.Outputs["answer"])
	result := toolResult(t, srv.Last(), "c1")
	require.Contains(t, result, "error: child workflow lookup.yaml failed")
	kids, err := b.r.List(b.ctx, runner.ListRequest{Parent: res.Run.ID})
	require.NoError(t, err)
	require.Len(t, kids, 1)
	require.Equal(t, "failed", string(kids[0].Status))
}

// allowed_tools narrows the MCP tools only: a workflow tool is offered as
// written.
func TestAgentWorkflowToolBesideAllowedTools(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply("ok")})
	fs := fsServer(t, t.TempDir())
	b.write(t, "lookup.yaml", lookupChild(srv.BaseURL()))
	w, err := b.r.Load(b.write(t, "both.yaml", `version: 1
name: both
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "`+srv.BaseURL()+`", api_key: test}
mcp_servers:
  fs: {url: "`+fs.URL+`"}
nodes:
  - id: agent
    type: agent
    prompt: hi
    tools: [fs.*, {workflow: lookup.yaml, name: lookup}]
    allowed_tools: [fs.read_*]
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "completed", string(res.Run.Status), "%+v", res.Run.Error)
	var names []string
	for _, tl := range srv.Last().Tools {
		names = append(names, tl.Name)
	}
	require.Equal(t, []string{"lookup"}, names, "write_file is not allowed; the workflow tool is offered")
}
