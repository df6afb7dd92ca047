package llm_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/internal/mcp"
	nodellm "github.com/skeinhq/skein/internal/nodes/llm"
	"github.com/skeinhq/skein/workflow"
)

// Prices of the two models of the fallback tests, in US dollars per
// million tokens.
var (
	primaryPrice = workflow.Price{InputPerMTok: 1, OutputPerMTok: 2}
	backupPrice  = workflow.Price{InputPerMTok: 10, OutputPerMTok: 20}
)

// fallbackModels declares primary and backup, each on its own server
// (primaryURL may be a server that is gone).
func fallbackModels(flavor llmtest.Flavor, primaryURL string, backup *llmtest.Server) *registry.Models {
	return registry.New(&workflow.Workflow{Name: "t", LLM: []*workflow.LLMConfig{
		{Name: "primary", Provider: string(flavor), Model: "primary-model", BaseURL: primaryURL, APIKey: "k", Price: &primaryPrice},
		{Name: "backup", Provider: string(flavor), Model: "backup-model", BaseURL: backup.BaseURL(), APIKey: "k", Price: &backupPrice},
	}}, noEnv)
}

// exhaustedBy is a primary's script: the first attempt and its three
// retries all fail with status (waiting a millisecond each).
func exhaustedBy(status int) llmtest.Script {
	turn := llmtest.Turn{Status: status, RetryAfter: "0.001"}
	return llmtest.Script{turn, turn, turn, turn}
}

// TestLLMFallback: model: [primary, backup] on an llm node, in both API
// flavors. When the primary is exhausted (429, 503 after its retries, or
// unreachable, 408) the backup answers: the output names it, a model_fallback
// event says what happened, and the reply is charged at the backup's
// price. A 401 does not fall through.
func TestLLMFallback(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	tests := []struct {
		name     string
		primary  llmtest.Script // nil: the primary is unreachable
		calls    int            // requests the primary gets
		fallback bool
		category string // the node's error without a fallback
	}{
		{name: "rate limited", primary: exhaustedBy(http.StatusTooManyRequests), calls: 4, fallback: true},
		{name: "server error", primary: exhaustedBy(http.StatusServiceUnavailable), calls: 4, fallback: true},
		{name: "unreachable", fallback: true},
		{name: "timed out", primary: llmtest.Script{llmtest.Fail(http.StatusRequestTimeout)}, calls: 1, fallback: true},
		{name: "bad key", primary: llmtest.Script{llmtest.Fail(http.StatusUnauthorized)}, calls: 1, category: llm.CategoryAuthentication},
		{name: "bad request", primary: llmtest.Script{llmtest.Fail(http.StatusBadRequest)}, calls: 1, category: llm.CategoryHTTP},
	}
	for _, flavor := range []llmtest.Flavor{llmtest.OpenAI, llmtest.Anthropic} {
		for _, tc := range tests {
			t.Run(string(flavor)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				backup := llmtest.NewServer(t, flavor, llmtest.Script{
					{Text: "from the backup", Usage: llm.Usage{InputTokens: 100_000, OutputTokens: 50_000}},
				})
				primaryURL := gone.URL
				var primary *llmtest.Server
				if tc.primary != nil {
					primary = llmtest.NewServer(t, flavor, tc.primary)
					primaryURL = primary.BaseURL()
				}
				b := setup(t, fallbackModels(flavor, primaryURL, backup),
					map[string]any{"prompt": "hi", "model": []any{"primary", "backup"}}, nil)
				out, err := b.run(t, nodellm.LLMKind{})
				if primary != nil {
					require.Equal(t, tc.calls, primary.Calls(), "the primary's attempts")
				}
				if !tc.fallback {
					require.NotNil(t, err)
					require.Equal(t, tc.category, err.Category)
					require.Zero(t, backup.Calls(), "a refused request does not fall through")
					require.Empty(t, b.events.ofKind("model_fallback"))
					return
				}
				require.Nil(t, err)
				require.Equal(t, "from the backup", out["text"])
				require.Equal(t, "backup-model", out["model"], "the output names the model that answered")
				require.InDelta(t, 0.1*10+0.05*20, out["usage"].(map[string]any)["cost_usd"], 1e-9, "charged at the backup's price")
				fell := b.events.ofKind("model_fallback")
				require.Len(t, fell, 1)
				require.Equal(t, "primary-model", fell[0]["from"])
				require.Equal(t, "backup-model", fell[0]["to"])
				require.NotEmpty(t, fell[0]["error"])
				calls := b.events.ofKind("llm_call")
				require.Len(t, calls, 2, "an llm_call per model tried")
				require.Equal(t, "backup-model", calls[1]["model"])
				require.Equal(t, "backup-model", backup.Last().Model, "the backup is asked for its own model")
			})
		}
	}
}

// TestAgentFallback: an agent whose primary answers 503 until exhausted
// goes on with the backup, which answers its later turns too (the primary
// is not asked again); the usage counts the backup's replies at its price.
func TestAgentFallback(t *testing.T) {
	t.Parallel()
	for _, flavor := range []llmtest.Flavor{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(string(flavor), func(t *testing.T) {
			t.Parallel()
			primary := llmtest.NewServer(t, flavor, exhaustedBy(http.StatusServiceUnavailable))
			backup := llmtest.NewServer(t, flavor, llmtest.Script{
				{ToolCalls: []llm.ToolCall{toolCall("call_1", "weather__lookup", map[string]any{"city": "Oslo"})}, Usage: llm.Usage{InputTokens: 100_000}},
				{Text: "12 degrees in Oslo.", Usage: llm.Usage{InputTokens: 100_000, OutputTokens: 50_000}},
			})
			b := setup(t, fallbackModels(flavor, primary.BaseURL(), backup), map[string]any{
				"prompt": "How warm is Oslo?", "tools": []any{"weather.*"}, "model": []any{"primary", "backup"},
			}, mcp.Service.Provide(nil, lookupPool(t)))
			out, err := b.run(t, nodellm.AgentKind{})
			require.Nil(t, err)
			require.Equal(t, "12 degrees in Oslo.", out["text"])
			require.Equal(t, "backup-model", out["model"])
			require.Equal(t, 4, primary.Calls(), "the primary is not asked again once exhausted")
			require.Equal(t, 2, backup.Calls())
			require.Len(t, b.events.ofKind("model_fallback"), 1)
			require.InDelta(t, 0.2*10+0.05*20, out["usage"].(map[string]any)["cost_usd"], 1e-9)
		})
	}
}
