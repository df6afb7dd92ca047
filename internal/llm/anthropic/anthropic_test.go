package anthropic_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/anthropic"
	"github.com/skeinhq/skein/internal/llm/llmtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConformance runs the provider suite against the fake Anthropic server.
func TestConformance(t *testing.T) {
	t.Parallel()
	llmtest.RunProviderSuite(t, func(t *testing.T, cfg llm.Config) llm.Provider {
		p, err := anthropic.New(cfg)
		require.NoError(t, err)
		return p
	}, llmtest.Anthropic)
}

func newProvider(t *testing.T, srv *llmtest.Server) llm.Provider {
	t.Helper()
	p, err := anthropic.New(llm.Config{BaseURL: srv.BaseURL(), APIKey: "k", Model: llmtest.AnthropicModel})
	require.NoError(t, err)
	return p
}

// TestJSONNotAnObject checks a schema whose top is not an object: the
// forced tool's input wraps it as {"value": …}, and the reply unwraps.
func TestJSONNotAnObject(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.Anthropic, llmtest.Script{llmtest.Reply(`{"value": ["a", "b"]}`)})
	schema := map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	v, _, err := llm.ChatJSON(context.Background(), newProvider(t, srv), llm.Request{Messages: []llm.Message{llm.User("two letters")}}, schema)
	require.NoError(t, err)
	require.Equal(t, []any{"a", "b"}, v)
	sent := srv.Last().Schema
	require.Equal(t, "object", sent["type"])
	require.Equal(t, schema, sent["properties"].(map[string]any)["value"])
}

// TestJSONWithTools checks a schema alongside other tools: the model must
// call some tool, and answers through the structured one.
func TestJSONWithTools(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.Anthropic, llmtest.Script{
		llmtest.CallTools(llm.ToolCall{ID: "t1", Name: "lookup", Arguments: map[string]any{"q": "Paris"}}),
		llmtest.CallTools(llm.ToolCall{ID: "t2", Name: anthropic.StructuredTool, Arguments: map[string]any{"city": "Paris"}}),
	})
	p := newProvider(t, srv)
	schema := map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}
	req := llm.Request{Messages: []llm.Message{llm.User("Where?")}, Tools: []llm.Tool{{Name: "lookup"}}, JSONSchema: schema}

	resp, err := p.Chat(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, resp.ToolCalls, 1)
	require.Equal(t, "lookup", resp.ToolCalls[0].Name)
	body := srv.Last().Body
	require.Equal(t, map[string]any{"type": "any"}, body["tool_choice"])
	require.Contains(t, body["system"].([]any)[0].(map[string]any)["text"], anthropic.StructuredTool)

	req.Messages = append(req.Messages, llm.Assistant(resp), llm.ToolResult("t1", "France"))
	resp, err = p.Chat(context.Background(), req)
	require.NoError(t, err)
	require.Empty(t, resp.ToolCalls)
	require.JSONEq(t, `{"city":"Paris"}`, resp.Text)
	require.Equal(t, llm.StopEnd, resp.StopReason)

	_, err = p.Chat(context.Background(), llm.Request{Messages: req.Messages[:1], Tools: []llm.Tool{{Name: anthropic.StructuredTool}}, JSONSchema: schema})
	require.ErrorContains(t, err, "reserved")
}

// TestToolResultsShareOneTurn checks that parallel tool results, with a
// tool's image, travel in one user turn.
func TestToolResultsShareOneTurn(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.Anthropic, llmtest.Script{llmtest.Reply("done")})
	shot := llm.Image{MIME: "image/png", Data: []byte("png-bytes")}
	_, err := newProvider(t, srv).Chat(context.Background(), llm.Request{Messages: []llm.Message{
		llm.System("You drive a browser."),
		llm.User("Open the page."),
		{Role: llm.RoleAssistant, Content: "On it.", ToolCalls: []llm.ToolCall{{ID: "a", Name: "open"}, {ID: "b", Name: "shot"}}},
		llm.ToolResult("a", "opened"),
		llm.ToolResult("b", "", shot),
		llm.User("Anything odd?"),
	}})
	require.NoError(t, err)
	last := srv.Last()
	turns := last.Body["messages"].([]any)
	require.Len(t, turns, 3, "user, assistant, user (results and question merged)")
	require.Len(t, turns[2].(map[string]any)["content"], 3)
	require.Equal(t, []llm.Message{
		llm.System("You drive a browser."),
		llm.User("Open the page."),
		{Role: llm.RoleAssistant, Content: "On it.", ToolCalls: []llm.ToolCall{
			{ID: "a", Name: "open", Arguments: map[string]any{}, RawArguments: "{}"},
			{ID: "b", Name: "shot", Arguments: map[string]any{}, RawArguments: "{}"},
		}},
		{Role: llm.RoleTool, ToolCallID: "a", Content: "opened"},
		{Role: llm.RoleTool, ToolCallID: "b", Images: []llm.Image{shot}},
		llm.User("Anything odd?"),
	}, last.Messages)
}

// TestBaseURL accepts a base URL with or without /v1.
func TestBaseURL(t *testing.T) {
	t.Parallel()
	for _, suffix := range []string{"", "/", "/v1", "/v1/"} {
		t.Run("suffix "+suffix, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, llmtest.Anthropic, llmtest.Script{llmtest.Reply("ok")})
			p, err := anthropic.New(llm.Config{BaseURL: srv.BaseURL() + suffix, APIKey: "k", Model: "claude-haiku-4-5"})
			require.NoError(t, err)
			_, err = p.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}})
			require.NoError(t, err)
			require.Equal(t, "/v1/messages", srv.Last().Path)
		})
	}
}
