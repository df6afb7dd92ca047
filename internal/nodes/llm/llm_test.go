package llm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	nodellm "github.com/skeinhq/skein/internal/nodes/llm"
	"github.com/skeinhq/skein/node"
)

// pngBytes starts like a PNG; the kinds pass image bytes on untouched.
var pngBytes = []byte("\x89PNG\r\n\x1a\nnot-really-pixels")

// writeImage writes an image into dir and returns its path.
func writeImage(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, pngBytes, 0o644))
	return path
}

func ptr[T any](v T) *T { return &v }

// TestLLM checks what the llm kind sends for each way of asking, and what it
// returns: the reply's text, the model, and the usage as both the `usage`
// output and the `_token_usage` directive.
func TestLLM(t *testing.T) {
	t.Parallel()
	// The workflow's folder, declared readable (files: [.]).
	assets := t.TempDir()
	img := writeImage(t, assets, "shot.png")
	tests := []struct {
		name   string
		params map[string]any
		// sent is what the model must receive.
		sent        []llm.Message
		temperature *float64
		maxTokens   int
	}{
		{
			name:   "prompt",
			params: map[string]any{"prompt": "Say hi"},
			sent:   []llm.Message{llm.User("Say hi")},
		},
		{
			name:   "system and prompt",
			params: map[string]any{"system": "Be brief.", "prompt": "Say hi"},
			sent:   []llm.Message{llm.System("Be brief."), llm.User("Say hi")},
		},
		{
			name: "system and messages",
			params: map[string]any{"system": "Be brief.", "messages": []any{
				map[string]any{"role": "user", "content": "What is 2+2?"},
				map[string]any{"role": "assistant", "content": "4"},
				map[string]any{"role": "user", "content": "And 3+3?"},
			}},
			sent: []llm.Message{
				llm.System("Be brief."), llm.User("What is 2+2?"),
				{Role: llm.RoleAssistant, Content: "4"}, llm.User("And 3+3?"),
			},
		},
		{
			name: "the run's messages, tool calls and text parts included",
			params: map[string]any{"messages": []any{
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Weather "}, "in Paris?"}},
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
					map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "weather", "arguments": `{"city":"Paris"}`}},
				}},
				map[string]any{"role": "tool", "tool_call_id": "c1", "content": "sunny"},
			}},
			sent: []llm.Message{
				llm.User("Weather in Paris?"),
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "weather", Arguments: map[string]any{"city": "Paris"}, RawArguments: `{"city":"Paris"}`}}},
				{Role: llm.RoleTool, Content: "sunny", ToolCallID: "c1"},
			},
		},
		{
			name:        "temperature and max_tokens",
			params:      map[string]any{"prompt": "Say hi", "temperature": 0.2, "max_tokens": 50},
			sent:        []llm.Message{llm.User("Say hi")},
			temperature: ptr(0.2),
			maxTokens:   50,
		},
		{
			name:        "temperature 0 written as an integer is sent",
			params:      map[string]any{"prompt": "Say hi", "temperature": 0},
			sent:        []llm.Message{llm.User("Say hi")},
			temperature: ptr(0.0),
		},
		{
			name:   "images as paths",
			params: map[string]any{"prompt": "What is this?", "images": []any{img}},
			sent:   []llm.Message{llm.User("What is this?", llm.Image{MIME: "image/png", Data: pngBytes})},
		},
		{
			name:   "images relative to the workflow's folder",
			params: map[string]any{"prompt": "What is this?", "images": []any{"./shot.png"}},
			sent:   []llm.Message{llm.User("What is this?", llm.Image{MIME: "image/png", Data: pngBytes})},
		},
		{
			name: "images as an mcp node's images output",
			params: map[string]any{"prompt": "What is this?", "images": []any{
				map[string]any{"path": img, "mime": "image/png"},
			}},
			sent: []llm.Message{llm.User("What is this?", llm.Image{MIME: "image/png", Data: pngBytes})},
		},
		{
			name:   "an unknown model name falls back to default",
			params: map[string]any{"prompt": "Say hi", "model": "fast"},
			sent:   []llm.Message{llm.User("Say hi")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
				{Text: "hi there", Usage: llm.Usage{InputTokens: 100, OutputTokens: 20}},
			})
			b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI), tc.params, nil)
			b.call.Files = node.NewFiles(assets, assets)
			out, err := b.run(t, nodellm.LLMKind{})
			require.Nil(t, err, "the llm node should succeed")

			require.Equal(t, 1, srv.Calls(), "one model call")
			req := srv.Last()
			require.Equal(t, testModel, req.Model)
			require.Equal(t, tc.sent, req.Messages, "the conversation the model received")
			require.Equal(t, tc.temperature, req.Temperature)
			require.Equal(t, tc.maxTokens, req.MaxTokens)
			require.Empty(t, req.Tools, "an llm node offers no tools")

			require.Equal(t, "hi there", out["text"])
			require.Equal(t, testModel, out["model"])
			require.NotContains(t, out, "json", "no schema, no json")
			u := out["usage"].(map[string]any)
			require.Equal(t, 100, u["input_tokens"])
			require.Equal(t, 20, u["output_tokens"])
			require.Equal(t, 120, u["total_tokens"])
			require.InDelta(t, (100*0.40+20*1.60)/1e6, u["cost_usd"], 1e-12, "gpt-4.1-mini list price")
			require.Equal(t, true, u["priced"])
			require.Equal(t, u, out["_token_usage"], "usage is also the _token_usage directive")

			calls := b.events.ofKind("llm_call")
			require.Len(t, calls, 1)
			require.Equal(t, testModel, calls[0]["model"])
			require.Equal(t, len(tc.sent), calls[0]["messages"])
		})
	}
}

// TestLLMSchema checks JSON replies: a valid reply is parsed into `json`; an
// invalid one gets exactly one re-ask naming the problem; two invalid
// replies fail the step as llm_malformed.
func TestLLMSchema(t *testing.T) {
	t.Parallel()
	schema := map[string]any{
		"type":     "object",
		"required": []any{"city", "days"},
		"properties": map[string]any{
			"city": map[string]any{"type": "string"},
			"days": map[string]any{"type": "integer"},
		},
	}
	tests := []struct {
		name     string
		script   llmtest.Script
		wantJSON any
		wantErr  string // category
		calls    int
	}{
		{
			name:     "valid at once",
			script:   llmtest.Script{{Text: `{"city": "Paris", "days": 3}`, Usage: llm.Usage{InputTokens: 50, OutputTokens: 10}}},
			wantJSON: map[string]any{"city": "Paris", "days": float64(3)},
			calls:    1,
		},
		{
			name: "one re-ask",
			script: llmtest.Script{
				{Text: `{"city": "Paris", "days": "three"}`, Usage: llm.Usage{InputTokens: 50, OutputTokens: 10}},
				{Text: "```json\n{\"city\": \"Paris\", \"days\": 3}\n```", Usage: llm.Usage{InputTokens: 80, OutputTokens: 12}},
			},
			wantJSON: map[string]any{"city": "Paris", "days": float64(3)},
			calls:    2,
		},
		{
			name: "invalid twice",
			script: llmtest.Script{
				llmtest.Reply("Paris, for three days"),
				llmtest.Reply(`{"city": "Paris"}`),
			},
			wantErr: llm.CategoryMalformed,
			calls:   2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, llmtest.OpenAI, tc.script)
			b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI),
				map[string]any{"prompt": "Where and how long? Paris, three days.", "schema": schema}, nil)
			out, err := b.run(t, nodellm.LLMKind{})
			require.Equal(t, tc.calls, srv.Calls(), "model calls")
			for i, req := range srv.Requests() {
				require.NotNil(t, req.Schema, "request %d asks for JSON with the schema", i)
				require.Contains(t, req.Schema["properties"], "city", "request %d carries the node's schema", i)
			}
			if tc.calls == 2 {
				second := srv.Requests()[1].Messages
				require.Len(t, second, 3, "prompt, the bad reply, the re-ask")
				require.Equal(t, llm.RoleAssistant, second[1].Role)
				require.Equal(t, srv.Requests()[0].Messages, second[:1], "the re-ask continues the conversation")
				require.Equal(t, llm.RoleUser, second[2].Role)
				require.True(t, strings.HasPrefix(second[2].Content, "Your previous reply was not valid"), second[2].Content)
			}
			if tc.wantErr != "" {
				require.NotNil(t, err, "two invalid replies fail the step")
				require.Equal(t, tc.wantErr, err.Category)
				return
			}
			require.Nil(t, err)
			require.Equal(t, tc.wantJSON, out["json"])
			require.NotEmpty(t, out["text"], "the raw reply stays available")
			if tc.calls == 2 {
				require.Equal(t, 50+80+10+12, out["usage"].(map[string]any)["total_tokens"], "usage counts both calls")
			}
		})
	}
}

// TestLLMRefuses checks the failures that happen before any model call: a
// spent budget, a message without a role, an image that cannot be read, a
// host without models.
func TestLLMRefuses(t *testing.T) {
	t.Parallel()
	spent := &engine.Budget{MaxTokens: 1000}
	spent.Add(1000, 0)
	costly := &engine.Budget{MaxCostUSD: 0.5}
	costly.Add(10, 0.75)
	tests := []struct {
		name     string
		params   map[string]any
		services *node.Services
		noModels bool
		category string
		code     string
	}{
		{
			name: "token budget spent", params: map[string]any{"prompt": "hi"},
			services: node.BudgetService.Provide(nil, spent),
			category: engine.CategoryBudget, code: "budget_exceeded",
		},
		{
			name: "cost budget spent", params: map[string]any{"prompt": "hi"},
			services: node.BudgetService.Provide(nil, costly),
			category: engine.CategoryBudget, code: "budget_exceeded",
		},
		{
			name:     "message without a role",
			params:   map[string]any{"messages": []any{map[string]any{"content": "hi"}}},
			category: node.CategoryValidation, code: "messages",
		},
		{
			name:     "image that does not exist",
			params:   map[string]any{"prompt": "hi", "images": []any{"gone.png"}},
			category: node.CategoryValidation, code: node.CodeFileNotFound,
		},
		{
			name:     "image outside the readable folders",
			params:   map[string]any{"prompt": "hi", "images": []any{"/etc/passwd"}},
			category: node.CategoryValidation, code: node.CodeFileNotAllowed,
		},
		{
			name: "no models on this host", params: map[string]any{"prompt": "hi"}, noModels: true,
			category: node.CategoryInternal, code: "service_unavailable",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply("should not be asked")})
			b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI), tc.params, tc.services)
			if tc.noModels {
				b.call.Services = node.BudgetService.Provide(nil, &engine.Budget{})
			}
			out, err := b.run(t, nodellm.LLMKind{})
			require.Nil(t, out)
			require.NotNil(t, err, "the step must fail")
			require.Equal(t, tc.category, err.Category, err.Message)
			require.Equal(t, tc.code, err.Code)
			require.Zero(t, srv.Calls(), "no model call is made")
			require.Empty(t, b.events.ofKind("llm_call"))
		})
	}
}

// TestLLMBudgetLeft checks that a budget with room left lets the call
// through.
func TestLLMBudgetLeft(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply("ok")})
	budget := &engine.Budget{MaxTokens: 1000}
	budget.Add(999, 0)
	b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI),
		map[string]any{"prompt": "hi"}, node.BudgetService.Provide(nil, budget))
	out, err := b.run(t, nodellm.LLMKind{})
	require.Nil(t, err)
	require.Equal(t, "ok", out["text"])
	require.Equal(t, 1, srv.Calls())
}

// TestLLMConfidence: a schema with a top-level confidence number makes
// the answer's confidence the step's (_confidence); without one, or with
// one that is not a number, there is none.
func TestLLMConfidence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		conf    any // the schema's confidence property; nil: none
		reply   string
		want    any
		present bool
	}{
		{name: "a number", conf: map[string]any{"type": "number"}, reply: `{"answer": "yes", "confidence": 0.82}`, want: 0.82, present: true},
		{name: "no confidence in the schema", reply: `{"answer": "yes", "confidence": 0.82}`},
		{name: "a string", conf: map[string]any{"type": "string"}, reply: `{"answer": "yes", "confidence": "high"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			props := map[string]any{"answer": map[string]any{"type": "string"}}
			if tc.conf != nil {
				props["confidence"] = tc.conf
			}
			srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply(tc.reply)})
			b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI),
				map[string]any{"prompt": "Sure?", "schema": map[string]any{"type": "object", "properties": props}}, nil)
			out, err := b.run(t, nodellm.LLMKind{})
			require.Nil(t, err)
			got, ok := out["_confidence"]
			require.Equal(t, tc.present, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

// An llm node takes a prompt or messages, exactly one; null is no value,
// as for any parameter, so it neither counts as one nor forbids the other.
func TestLLMSpecCheckPromptOrMessages(t *testing.T) {
	t.Parallel()
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	tests := []struct {
		name   string
		params map[string]any
		bad    bool
	}{
		{"a prompt", map[string]any{"prompt": "hi"}, false},
		{"messages", map[string]any{"messages": msgs}, false},
		{"both", map[string]any{"prompt": "hi", "messages": msgs}, true},
		{"neither", map[string]any{}, true},
		{"a null prompt beside messages", map[string]any{"prompt": nil, "messages": msgs}, false},
		{"a null prompt alone", map[string]any{"prompt": nil}, true},
		{"null messages beside a prompt", map[string]any{"prompt": "hi", "messages": nil}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var named []string
			for _, e := range nodellm.LLMSpec.Check(tt.params) {
				if e.Message == "set exactly one of prompt or messages" {
					named = append(named, e.Param)
				}
			}
			if tt.bad {
				require.Equal(t, []string{"prompt"}, named, "the check asks for one of prompt or messages")
			} else {
				require.Empty(t, named, "the check lets the node through")
			}
		})
	}
}
