package llm_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/anthropic"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/internal/mcp/mcptest"
	"github.com/skeinhq/skein/internal/memory"
	nodellm "github.com/skeinhq/skein/internal/nodes/llm"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// weatherSchema is the shape of an agent's final answer in these tests.
var weatherSchema = map[string]any{
	"type":     "object",
	"required": []any{"city", "celsius"},
	"properties": map[string]any{
		"city":    map[string]any{"type": "string"},
		"celsius": map[string]any{"type": "number"},
	},
}

// lookupPool is an MCP pool over an in-process server with one tool,
// lookup, that answers "12 degrees".
func lookupPool(t *testing.T) *mcp.Pool {
	t.Helper()
	srv := mcptest.New(t)
	srv.AddTool("lookup", nil, func(context.Context, map[string]any) (*sdk.CallToolResult, error) {
		return mcptest.Text("12 degrees"), nil
	})
	pool := mcp.NewPool([]*workflow.MCPServer{{Name: "weather", URL: srv.URL}}, mcp.Scope(nil, nil))
	t.Cleanup(func() { require.NoError(t, pool.Close()) })
	return pool
}

// askedSchema is the schema a request asks the reply to match: OpenAI's
// response format, Anthropic's forced tool, or (beside other tools) the
// input schema of Anthropic's answer tool.
func askedSchema(req *llmtest.Request) map[string]any {
	if req.Schema != nil {
		return req.Schema
	}
	for _, tl := range req.Tools {
		if tl.Name == anthropic.StructuredTool {
			return tl.InputSchema
		}
	}
	return nil
}

// TestAgentSchema checks an agent's structured answer in both API flavors:
// the schema, temperature and max_tokens go with every request, beside the
// tools; a final answer that does not match gets one re-ask without tools;
// the parsed answer is `json`; the usage counts every reply, the re-ask's
// too. A second bad answer fails the node as llm_malformed, both replies
// billed.
func TestAgentSchema(t *testing.T) {
	t.Parallel()
	for _, flavor := range []llmtest.Flavor{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(string(flavor), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, flavor, llmtest.Script{
				{ToolCalls: []llm.ToolCall{toolCall("call_1", "weather__lookup", map[string]any{"city": "Oslo"})}, Usage: llm.Usage{InputTokens: 40, OutputTokens: 5}},
				{Text: `{"city": "Oslo", "celsius": "twelve"}`, Usage: llm.Usage{InputTokens: 60, OutputTokens: 9}},
				{Text: `{"city": "Oslo", "celsius": 12}`, Usage: llm.Usage{InputTokens: 80, OutputTokens: 8}},
			})
			b := setup(t, models(map[string]*llmtest.Server{"default": srv}, flavor), map[string]any{
				"prompt": "How warm is Oslo?", "tools": []any{"weather.*"},
				"schema": weatherSchema, "temperature": 0.2, "max_tokens": 300,
			}, mcp.Service.Provide(nil, lookupPool(t)))

			out, err := b.run(t, nodellm.AgentKind{})
			require.Nil(t, err)
			require.Equal(t, map[string]any{"city": "Oslo", "celsius": float64(12)}, out["json"], "the parsed answer")
			require.JSONEq(t, `{"city": "Oslo", "celsius": 12}`, out["text"].(string))
			require.Equal(t, 1, out["tool_calls"])
			require.Equal(t, 40+5+60+9+80+8, out["usage"].(map[string]any)["total_tokens"], "every reply counts, the re-ask's too")

			reqs := srv.Requests()
			require.Len(t, reqs, 3)
			for i, req := range reqs {
				sch := askedSchema(req)
				require.NotNil(t, sch, "request %d asks for the schema", i)
				require.Contains(t, sch["properties"], "celsius", "request %d carries the node's schema", i)
				require.NotNil(t, req.Temperature, "request %d sends the temperature", i)
				require.InDelta(t, 0.2, *req.Temperature, 1e-9)
				require.Equal(t, 300, req.MaxTokens, "request %d sends max_tokens", i)
			}
			require.Contains(t, toolNames(reqs[1]), "weather__lookup", "the tools go with the schema")
			require.NotContains(t, toolNames(reqs[2]), "weather__lookup", "the re-ask wants the answer, not a tool call")
			reask := reqs[2].Messages[len(reqs[2].Messages)-1]
			require.Equal(t, llm.RoleUser, reask.Role)
			require.True(t, strings.HasPrefix(reask.Content, "Your previous reply was not valid"), reask.Content)
			require.Contains(t, reask.Content, "celsius")
		})
	}

	t.Run("invalid twice", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
			{Text: "It is mild.", Usage: llm.Usage{InputTokens: 30, OutputTokens: 4}},
			{Text: `{"city": "Oslo"}`, Usage: llm.Usage{InputTokens: 50, OutputTokens: 6}},
		})
		b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI),
			map[string]any{"prompt": "How warm is Oslo?", "schema": weatherSchema}, nil)
		_, err := b.run(t, nodellm.AgentKind{})
		require.NotNil(t, err)
		require.Equal(t, llm.CategoryMalformed, err.Category)
		require.Equal(t, 2, srv.Calls())
		require.Equal(t, 30+4+50+6, err.Details["token_usage"].(map[string]any)["total_tokens"], "both replies are billed")
	})
}

// TestSamplingBounds checks that temperature and max_tokens out of bounds
// are validation errors naming the parameter, written or rendered.
func TestSamplingBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"temperature too high", map[string]any{"prompt": "x", "temperature": 2.5}, "temperature must be between 0 and 2, not 2.5"},
		{"temperature negative", map[string]any{"prompt": "x", "temperature": -1}, "temperature must be between 0 and 2, not -1"},
		{"max_tokens zero", map[string]any{"prompt": "x", "max_tokens": 0}, "max_tokens must be more than 0, not 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, s := range []struct {
				check func(map[string]any) []node.ParamError
				kind  node.Kind
			}{
				{nodellm.LLMSpec.Check, nodellm.LLMKind{}},
				{nodellm.AgentSpec.Check, nodellm.AgentKind{}},
			} {
				errs := s.check(tc.params)
				require.Len(t, errs, 1, "validation reports it")
				require.Equal(t, tc.want, errs[0].Message)

				srv := llmtest.NewServer(t, llmtest.OpenAI, nil)
				b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI), tc.params, nil)
				_, err := b.run(t, s.kind)
				require.NotNil(t, err, "a rendered value is checked too")
				require.Contains(t, err.Message, "node n: "+tc.want)
				require.Zero(t, srv.Calls(), "no model is called")
			}
		})
	}
}

// fakeMemory is a memory in a map, by thread.
type fakeMemory struct {
	mu      sync.Mutex
	threads map[string][]llm.Message
	steps   []memory.Step
}

func (m *fakeMemory) Recall(_ context.Context, thread string, step memory.Step, limit int) ([]llm.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.steps = append(m.steps, step)
	msgs := m.threads[thread]
	if limit > 0 && len(msgs) > limit {
		msgs = msgs[len(msgs)-limit:]
	}
	return slices.Clone(msgs), nil
}

func (m *fakeMemory) Remember(_ context.Context, thread string, step memory.Step, msgs []llm.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.steps = append(m.steps, step)
	m.threads[thread] = append(m.threads[thread], msgs...)
	return nil
}

// TestLLMMemory: an llm node with memory sends the thread's last messages
// after the system prompt and before its own, and keeps its last user
// message and the reply; a thread that renders empty keeps nothing.
func TestLLMMemory(t *testing.T) {
	t.Parallel()
	mem := &fakeMemory{threads: map[string][]llm.Message{"t1": {
		{Role: llm.RoleUser, Content: "old question"}, {Role: llm.RoleAssistant, Content: "old answer"},
		{Role: llm.RoleUser, Content: "I am Ada."}, {Role: llm.RoleAssistant, Content: "Hi Ada."},
	}}}
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply("You are Ada."), llmtest.Reply("Hello.")})
	ms := models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI)
	b := setup(t, ms, map[string]any{
		"system":   "Be brief.",
		"messages": []any{map[string]any{"role": "user", "content": "Who am I?"}},
		"memory":   map[string]any{"thread": "t1", "max_messages": 2},
	}, memory.Service.Provide(nil, mem))
	out, err := b.run(t, nodellm.LLMKind{})
	require.Nil(t, err)
	require.Equal(t, "You are Ada.", out["text"])
	require.Equal(t, []llm.Message{
		{Role: llm.RoleSystem, Content: "Be brief."},
		{Role: llm.RoleUser, Content: "I am Ada."}, {Role: llm.RoleAssistant, Content: "Hi Ada."},
		{Role: llm.RoleUser, Content: "Who am I?"},
	}, srv.Requests()[0].Messages, "the last two messages of the thread, between the system prompt and the node's")
	require.Equal(t, []llm.Message{{Role: llm.RoleUser, Content: "Who am I?"}, {Role: llm.RoleAssistant, Content: "You are Ada."}},
		mem.threads["t1"][4:], "the node's turn is kept")
	require.Equal(t, memory.Step{RunID: "r1", Step: "n/1"}, mem.steps[0], "the step is named by run, node and visit")

	empty := setup(t, ms, map[string]any{"prompt": "Hi", "memory": map[string]any{"thread": ""}}, nil)
	out, err = empty.run(t, nodellm.LLMKind{})
	require.Nil(t, err, "an empty thread needs no memory")
	require.Equal(t, "Hello.", out["text"])
	require.Len(t, srv.Requests()[1].Messages, 1)
}

// TestMemoryParamChecks: memory without a thread, with a max_messages
// that is not more than 0, or with an unknown field is a validation
// error; a host without memory fails the node, naming the service.
func TestMemoryParamChecks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		memory map[string]any
		want   string
	}{
		{"no thread", map[string]any{"max_messages": 5}, "memory needs a thread"},
		{"zero max", map[string]any{"thread": "t", "max_messages": 0}, "memory.max_messages must be a whole number more than 0, not 0"},
		{"unknown field", map[string]any{"thread": "t", "size": 3}, `memory has no field "size" (fields: thread, max_messages)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, check := range []func(map[string]any) []node.ParamError{nodellm.LLMSpec.Check, nodellm.AgentSpec.Check} {
				errs := check(map[string]any{"prompt": "x", "memory": tc.memory})
				require.Len(t, errs, 1)
				require.Contains(t, errs[0].Message, tc.want)
			}
		})
	}
	require.Empty(t, nodellm.AgentSpec.Check(map[string]any{"prompt": "x", "memory": map[string]any{"thread": "{{ trigger.conversation }}", "max_messages": "{{ inputs.n }}"}}),
		"templates are checked when they are rendered")

	srv := llmtest.NewServer(t, llmtest.OpenAI, nil)
	b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI),
		map[string]any{"prompt": "x", "memory": map[string]any{"thread": "t"}}, nil)
	_, err := b.run(t, nodellm.AgentKind{})
	require.NotNil(t, err)
	require.Contains(t, err.Message, "conversation memory")
	require.Zero(t, srv.Calls())
}
