package llm_test

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/anthropic"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/internal/mcp/mcptest"
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
