package llm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/mcp"
	nodellm "github.com/skeinhq/skein/internal/nodes/llm"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard" // the other kinds of the workflows validated here
	"github.com/skeinhq/skein/workflow"
)

// pngMagic starts every PNG file.
var pngMagic = []byte("\x89PNG\r\n\x1a\n")

func toolCall(id, name string, args map[string]any) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: args}
}

// toolMessage returns the tool message answering call id, failing when the
// request has none.
func toolMessage(t *testing.T, req *llmtest.Request, id string) llm.Message {
	t.Helper()
	for _, m := range req.Messages {
		if m.Role == llm.RoleTool && m.ToolCallID == id {
			return m
		}
	}
	require.Failf(t, "no tool result", "the request has no result for tool call %s: %+v", id, req.Messages)
	return llm.Message{}
}

// imagesIn lists every image a request carries, wherever the provider put
// it (OpenAI: a user message after the tool results; Anthropic: inside the
// tool_result block).
func imagesIn(req *llmtest.Request) []llm.Image {
	var out []llm.Image
	for _, m := range req.Messages {
		out = append(out, m.Images...)
	}
	return out
}

func toolNames(req *llmtest.Request) []string {
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// TestAgentEverything runs an agent against the real everything MCP server
// with a scripted model, in both API flavors. The model asks for echo and
// get-tiny-image in one turn, then answers. The test checks the tools
// offered, the tool events (arguments and results redacted), the image kept
// as an artifact and passed on to the model (no vision model is
// configured), the tool results the model received on its second turn, and
// the usage summed over both turns with its cost.
func TestAgentEverything(t *testing.T) {
	t.Parallel()
	tests := []struct {
		flavor llmtest.Flavor
		model  string
		price  llm.Price
	}{
		{llmtest.OpenAI, testModel, llm.Price{InputPerMTok: 0.40, OutputPerMTok: 1.60}},
		{llmtest.Anthropic, "claude-haiku-4-5", llm.Price{InputPerMTok: 1.00, OutputPerMTok: 5.00}},
	}
	for _, tc := range tests {
		t.Run(string(tc.flavor), func(t *testing.T) {
			t.Parallel()
			pool := everythingPool(t)
			srv := llmtest.NewServer(t, tc.flavor, llmtest.Script{
				{
					ToolCalls: []llm.ToolCall{
						toolCall("call_echo", "everything__echo", map[string]any{"message": "hello s3cr3t-token"}),
						toolCall("call_img", "everything__get-tiny-image", map[string]any{}),
					},
					Usage: llm.Usage{InputTokens: 100, OutputTokens: 15},
				},
				{Text: "I echoed hello and looked at a tiny image.", Usage: llm.Usage{InputTokens: 300, OutputTokens: 25}},
			})
			b := setup(t, models(map[string]*llmtest.Server{"default": srv}, tc.flavor), map[string]any{
				"system": "You use the tools you are given.",
				"prompt": "Echo hello, then fetch the tiny image.",
				"tools":  []any{"everything.*"},
			}, mcp.Service.Provide(nil, pool))

			out, err := b.run(t, nodellm.AgentKind{})
			require.Nil(t, err, "the agent should finish")
			require.Equal(t, "I echoed hello and looked at a tiny image.", out["text"])
			require.Equal(t, 2, out["tool_calls"])
			require.Equal(t, tc.model, out["model"])
			require.Equal(t, "", out["stopped"], "an agent that answered did not stop")

			// Turn 1: the prompt, and the server's tools under server__tool names.
			require.Equal(t, 2, srv.Calls(), "two model turns")
			first := srv.Requests()[0]
			require.Equal(t, []llm.Message{llm.System("You use the tools you are given."), llm.User("Echo hello, then fetch the tiny image.")}, first.Messages)
			require.Subset(t, toolNames(first), []string{"everything__echo", "everything__get-tiny-image", "everything__get-sum"})
			for _, tl := range first.Tools {
				if tl.Name == "everything__echo" {
					require.Equal(t, "object", tl.InputSchema["type"], "the tool's input schema is offered")
					require.Contains(t, tl.InputSchema["properties"], "message")
				}
			}

			// Turn 2: the assistant's calls and both results.
			second := srv.Requests()[1]
			var asked []string
			for _, m := range second.Messages {
				for _, c := range m.ToolCalls {
					asked = append(asked, c.Name)
				}
			}
			require.Equal(t, []string{"everything__echo", "everything__get-tiny-image"}, asked, "the model's calls are sent back")
			require.Equal(t, "Echo: hello s3cr3t-token", toolMessage(t, second, "call_echo").Content,
				"the model gets the real tool result (redaction is for records, not for the model)")
			require.Contains(t, toolMessage(t, second, "call_img").Content, "[image saved as agent-get-tiny-image-1.png]")

			// The image: an artifact, and passed on to the model.
			art := filepath.Join(b.call.ArtifactDir, "agent-get-tiny-image-1.png")
			data, rerr := os.ReadFile(art)
			require.NoError(t, rerr, "the image is saved in the node's artifacts")
			require.True(t, bytes.HasPrefix(data, pngMagic), "the artifact is the PNG the tool returned")
			imgs := imagesIn(second)
			require.Len(t, imgs, 1, "with no vision model the image goes to the model")
			require.Equal(t, llm.Image{MIME: "image/png", Data: data}, imgs[0])

			// Events.
			require.Len(t, b.events.ofKind("llm_call"), 2)
			require.Empty(t, b.events.ofKind("vision_summary"))
			calls := b.events.ofKind("tool_call")
			require.Len(t, calls, 2)
			require.Equal(t, "everything.echo", calls[0]["tool"])
			require.Equal(t, map[string]any{"message": "hello ***"}, calls[0]["arguments"], "secrets are redacted from events")
			require.Equal(t, "everything.get-tiny-image", calls[1]["tool"])
			results := b.events.ofKind("tool_result")
			require.Len(t, results, 2)
			require.Equal(t, "Echo: hello ***", results[0]["text"])
			require.Equal(t, false, results[0]["is_error"])
			require.Equal(t, 0, results[0]["images"])
			require.Equal(t, 1, results[1]["images"])
			require.Equal(t, false, results[1]["is_error"])
			require.Contains(t, results[1], "duration_ms")

			// Usage over both turns, priced, and the directive.
			u := out["usage"].(map[string]any)
			require.Equal(t, 400, u["input_tokens"])
			require.Equal(t, 40, u["output_tokens"])
			require.Equal(t, 440, u["total_tokens"])
			require.InDelta(t, (400*tc.price.InputPerMTok+40*tc.price.OutputPerMTok)/1e6, u["cost_usd"], 1e-12)
			require.Equal(t, true, u["priced"])
			require.Equal(t, u, out["_token_usage"])
		})
	}
}

// TestAgentAllowedTools checks that allowed_tools narrows what the model
// sees: of the tools that match tools, only the allowed ones are offered.
// A call of a tool that matches tools but is not allowed, or of one that
// does not exist, does not run: the model gets an error message as its
// result on the next turn, and the run goes on to its answer.
func TestAgentAllowedTools(t *testing.T) {
	t.Parallel()
	pool := everythingPool(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		llmtest.CallTools(toolCall("call_sum", "everything__get-sum", map[string]any{"a": 2, "b": 3})),
		llmtest.CallTools(
			toolCall("call_echo", "everything__echo", map[string]any{"message": "fallback"}),
			toolCall("call_ghost", "everything__teleport", map[string]any{}),
		),
		llmtest.Reply("I could only echo."),
	})
	b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI), map[string]any{
		"prompt":        "Add 2 and 3.",
		"tools":         []any{"everything.*"},
		"allowed_tools": []any{"everything.echo"},
	}, mcp.Service.Provide(nil, pool))

	out, err := b.run(t, nodellm.AgentKind{})
	require.Nil(t, err, "a refused tool is not a failed step")
	require.Equal(t, "I could only echo.", out["text"])
	require.Equal(t, 3, out["tool_calls"])
	require.Equal(t, 3, srv.Calls())

	for i, req := range srv.Requests() {
		require.Equal(t, []string{"everything__echo"}, toolNames(req), "request %d offers only the allowed tool", i)
	}
	refused := toolMessage(t, srv.Requests()[1], "call_sum").Content
	require.Contains(t, refused, `there is no tool "everything.get-sum"`)
	require.NotContains(t, refused, "The sum", "the tool did not run")

	third := srv.Requests()[2]
	require.Equal(t, "Echo: fallback", toolMessage(t, third, "call_echo").Content)
	require.Contains(t, toolMessage(t, third, "call_ghost").Content, `there is no tool "everything.teleport"`)

	results := b.events.ofKind("tool_result")
	require.Len(t, results, 3)
	require.Equal(t, []any{true, false, true}, []any{results[0]["is_error"], results[1]["is_error"], results[2]["is_error"]})
	require.Equal(t, "everything.get-sum", results[0]["tool"])
}

// TestAgentVision checks images with a vision model configured: the image
// is kept as an artifact, described by the vision model (a second scripted
// server), the description goes to the agent's model in place of the
// image, a vision_summary event is emitted, and its tokens are counted.
// With images: pass the image goes to the agent's model as it is.
func TestAgentVision(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		images    string
		summarize bool
	}{
		{name: "summarize", images: "summarize", summarize: true},
		{name: "pass", images: "pass"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := everythingPool(t)
			agent := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
				{ToolCalls: []llm.ToolCall{toolCall("call_img", "everything__get-tiny-image", nil)}, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}},
				{Text: "It is the MCP logo.", Usage: llm.Usage{InputTokens: 200, OutputTokens: 10}},
			})
			vision := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
				{Text: "A tiny square logo on a white background.", Usage: llm.Usage{InputTokens: 50, OutputTokens: 12}},
			})
			b := setup(t, models(map[string]*llmtest.Server{"default": agent, "vision": vision}, llmtest.OpenAI), map[string]any{
				"prompt": "What does the tiny image show?",
				"tools":  []any{"everything.get-tiny-image"},
				"images": tc.images,
			}, mcp.Service.Provide(nil, pool))

			out, err := b.run(t, nodellm.AgentKind{})
			require.Nil(t, err)
			require.Equal(t, "It is the MCP logo.", out["text"])
			require.Equal(t, []string{"everything__get-tiny-image"}, toolNames(agent.Requests()[0]), "a tools pattern naming one tool offers that tool only")

			data, rerr := os.ReadFile(filepath.Join(b.call.ArtifactDir, "agent-get-tiny-image-1.png"))
			require.NoError(t, rerr, "the image is an artifact either way")
			second := agent.Requests()[1]
			result := toolMessage(t, second, "call_img").Content
			u := out["usage"].(map[string]any)

			if !tc.summarize {
				require.Zero(t, vision.Calls(), "images: pass never asks the vision model")
				require.Empty(t, b.events.ofKind("vision_summary"))
				require.Equal(t, []llm.Image{{MIME: "image/png", Data: data}}, imagesIn(second))
				require.NotContains(t, result, "[image summary]")
				require.Equal(t, 320, u["total_tokens"])
				return
			}
			require.Equal(t, 1, vision.Calls(), "the vision model describes the image")
			vreq := vision.Last()
			require.Len(t, vreq.Messages, 1)
			require.Equal(t, llm.RoleUser, vreq.Messages[0].Role)
			require.Equal(t, []llm.Image{{MIME: "image/png", Data: data}}, vreq.Messages[0].Images, "the vision model gets the tool's image")

			sums := b.events.ofKind("vision_summary")
			require.Len(t, sums, 1)
			require.Equal(t, "everything.get-tiny-image", sums[0]["tool"])
			require.Equal(t, "A tiny square logo on a white background.", sums[0]["text"])

			require.Empty(t, imagesIn(second), "the summary replaces the image")
			require.Contains(t, result, "[image summary] A tiny square logo on a white background.")
			require.Equal(t, 100+200+50, u["input_tokens"], "the vision call's tokens are counted")
			require.Equal(t, 10+10+12, u["output_tokens"])
		})
	}
}

// TestAgentMaxToolCalls checks that the loop stops at max_tool_calls with
// the last text and `stopped`.
func TestAgentMaxToolCalls(t *testing.T) {
	t.Parallel()
	pool := everythingPool(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{Text: "Echoing twice.", ToolCalls: []llm.ToolCall{
			toolCall("c1", "everything__echo", map[string]any{"message": "one"}),
			toolCall("c2", "everything__echo", map[string]any{"message": "two"}),
		}, Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}},
	})
	b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI), map[string]any{
		"prompt": "Echo one and two.", "tools": []any{"everything.echo"}, "max_tool_calls": 1,
	}, mcp.Service.Provide(nil, pool))
	out, err := b.run(t, nodellm.AgentKind{})
	require.Nil(t, err)
	require.Equal(t, "max_tool_calls", out["stopped"])
	require.Equal(t, "Echoing twice.", out["text"])
	require.Equal(t, 1, out["tool_calls"])
	require.Len(t, b.events.ofKind("tool_call"), 1)
	require.Len(t, b.events.ofKind("warning"), 1, "a warning says the agent stopped")
	require.Equal(t, 1, srv.Calls())
	require.Equal(t, 15, out["_token_usage"].(map[string]any)["total_tokens"])
}

// TestAgentRefuses checks failures before any model call.
func TestAgentRefuses(t *testing.T) {
	t.Parallel()
	spent := &engine.Budget{MaxTokens: 100}
	spent.Add(150, 0)
	tests := []struct {
		name     string
		params   map[string]any
		services *node.Services
		code     string
	}{
		{"budget spent", map[string]any{"prompt": "hi"}, node.BudgetService.Provide(nil, spent), "budget_exceeded"},
		{"tools without an MCP pool", map[string]any{"prompt": "hi", "tools": []any{"everything.*"}}, nil, "service_unavailable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply("should not be asked")})
			b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI), tc.params, tc.services)
			out, err := b.run(t, nodellm.AgentKind{})
			require.Nil(t, out)
			require.NotNil(t, err)
			require.Equal(t, tc.code, err.Code, err.Message)
			require.Zero(t, srv.Calls())
		})
	}
}

// TestAgentToolTrouble checks tool calls that cannot go as asked: arguments
// that are not a JSON object are refused with a message saying so (the
// tool is not called with none), and an image is still passed on when the
// node has no artifact folder to save it in.
func TestAgentToolTrouble(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		call        llm.ToolCall
		noArtifacts bool
		isError     bool
		result      string
		images      int
	}{
		{
			name:    "arguments not an object",
			call:    llm.ToolCall{ID: "c1", Name: "everything__echo", RawArguments: `"hello"`},
			isError: true,
			result:  `error: the arguments of everything.echo must be a JSON object, not "hello"`,
		},
		{
			name:        "no artifact folder",
			call:        toolCall("c1", "everything__get-tiny-image", map[string]any{}),
			noArtifacts: true,
			result:      "Here's the image you requested:\n[image]\nThe image above is the MCP logo.",
			images:      1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := everythingPool(t)
			srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.CallTools(tc.call), llmtest.Reply("ok")})
			b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI),
				map[string]any{"prompt": "go", "tools": []any{"everything.*"}}, mcp.Service.Provide(nil, pool))
			if tc.noArtifacts {
				b.call.ArtifactDir = ""
			}
			out, err := b.run(t, nodellm.AgentKind{})
			require.Nil(t, err)
			require.Equal(t, "ok", out["text"])
			last := srv.Last()
			require.Equal(t, tc.result, toolMessage(t, last, "c1").Content)
			require.Len(t, imagesIn(last), tc.images)
			results := b.events.ofKind("tool_result")
			require.Len(t, results, 1)
			require.Equal(t, tc.isError, results[0]["is_error"])
		})
	}
}

// TestAgentTwoServers offers tools of two servers (the everything server
// twice, under two names): they are offered in a fixed order whatever the
// order of the patterns, and each call goes to its own server.
func TestAgentTwoServers(t *testing.T) {
	t.Parallel()
	alpha, beta := everythingServer(t), everythingServer(t)
	alpha.Name, beta.Name = "alpha", "beta"
	pool := mcp.NewPool([]*workflow.MCPServer{alpha, beta}, mcp.Scope(nil, nil))
	t.Cleanup(func() { require.NoError(t, pool.Close()) })
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		llmtest.CallTools(
			toolCall("b", "beta__echo", map[string]any{"message": "from beta"}),
			toolCall("a", "alpha__get-sum", map[string]any{"a": 1, "b": 2}),
		),
		llmtest.Reply("ok"),
	})
	b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI),
		map[string]any{"prompt": "go", "tools": []any{"beta.echo", "alpha.get-sum", "alpha.echo"}}, mcp.Service.Provide(nil, pool))
	_, err := b.run(t, nodellm.AgentKind{})
	require.Nil(t, err)
	names := toolNames(srv.Requests()[0])
	require.ElementsMatch(t, []string{"alpha__echo", "alpha__get-sum", "beta__echo"}, names, "the patterns pick three tools")
	require.Equal(t, "beta__echo", names[2], "servers are offered in name order, not map order")
	last := srv.Last()
	require.Equal(t, "Echo: from beta", toolMessage(t, last, "b").Content)
	require.Equal(t, "The sum of 1 and 2 is 3.", toolMessage(t, last, "a").Content)
}

// TestAgentStoppedValidates: a workflow may read an agent's documented
// `stopped` output (it failed validation as an unknown output).
func TestAgentStoppedValidates(t *testing.T) {
	t.Parallel()
	w, ds := workflow.Decode("stopped.yaml", []byte(`version: 1
name: stopped
nodes:
  - {id: start, type: trigger.manual}
  - {id: ask, type: agent, prompt: "Find it", max_tool_calls: 3}
  - {id: gave_up, type: if, condition: 'ask.stopped == "max_tool_calls"'}
  - {id: note, type: template, text: "stopped: {{ ask.stopped }}"}
edges:
  - {from: start, to: ask}
  - {from: ask, to: gave_up}
  - {from: gave_up, to: note, on: "true"}
`))
	require.Empty(t, ds.Errors())
	require.Empty(t, workflow.Validate(w, node.Default).Errors())
}

// An agent's tool results keep the links to resources a tool answers with
// (they were dropped), and the progress a tool reports during a call is
// recorded as tool_progress events.
func TestAgentResourceLinksAndProgress(t *testing.T) {
	t.Parallel()
	pool := everythingPool(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{ToolCalls: []llm.ToolCall{
			toolCall("links", "everything__get-resource-links", map[string]any{"count": 2}),
			toolCall("slow", "everything__trigger-long-running-operation", map[string]any{"duration": 0.6, "steps": 3}),
		}},
		llmtest.Reply("done"),
	})
	b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI), map[string]any{
		"prompt": "List two resources, then run the long operation.",
		"tools":  []any{"everything.get-resource-links", "everything.trigger-long-running-operation"},
	}, mcp.Service.Provide(nil, pool))
	out, err := b.run(t, nodellm.AgentKind{})
	require.Nil(t, err)
	require.Equal(t, "done", out["text"])
	links := toolMessage(t, srv.Requests()[1], "links").Content
	require.Contains(t, links, "[resource link ")
	require.Equal(t, 2, strings.Count(links, "[resource link "), links)
	progress := b.events.ofKind("tool_progress")
	require.NotEmpty(t, progress, "the long operation's progress")
	require.Equal(t, "everything.trigger-long-running-operation", progress[0]["tool"])
	require.Equal(t, 1.0, progress[0]["progress"])
	require.Equal(t, 3.0, progress[0]["total"])
}

// TestAgentMessages: an agent given messages (the run's `{{ messages }}`)
// sends them after its system prompt and before its task.
func TestAgentMessages(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply("done")})
	b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI), map[string]any{
		"system":   "Be brief.",
		"prompt":   "Sum it up.",
		"messages": []any{map[string]any{"role": "user", "content": "hi"}, map[string]any{"role": "assistant", "content": "hello"}},
	}, nil)
	out, err := b.run(t, nodellm.AgentKind{})
	require.Nil(t, err)
	require.Equal(t, "done", out["text"])
	require.Equal(t, []llm.Message{llm.System("Be brief."), llm.User("hi"), {Role: llm.RoleAssistant, Content: "hello"}, llm.User("Sum it up.")},
		srv.Last().Messages)
}
