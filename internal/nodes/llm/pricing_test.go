package llm_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/internal/mcp"
	nodellm "github.com/skeinhq/skein/internal/nodes/llm"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// modelsOf resolves one model config per server: name → (model, server),
// with an optional price per name.
func modelsOf(entries map[string]string, servers map[string]*llmtest.Server, prices map[string]*workflow.Price) *registry.Models {
	w := &workflow.Workflow{Name: "t"}
	for name, model := range entries {
		w.LLM = append(w.LLM, &workflow.LLMConfig{Name: name, Provider: "openai", Model: model,
			BaseURL: servers[name].BaseURL(), APIKey: "test-key", Price: prices[name]})
	}
	return registry.New(w, noEnv)
}

// A schema step whose re-ask fails too was billed for both replies: its
// error carries their tokens and cost, so the step and the run count them
// (they showed 0).
func TestSchemaReaskFailureCountsBothReplies(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{Text: "not json", Usage: llm.Usage{InputTokens: 100, OutputTokens: 20, TotalTokens: 120}},
		{Text: "still not json", Usage: llm.Usage{InputTokens: 150, OutputTokens: 30, TotalTokens: 180}},
	})
	b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI), map[string]any{
		"prompt": "the city as JSON", "schema": map[string]any{"type": "object", "required": []any{"city"}},
	}, nil)
	_, err := b.run(t, nodellm.LLMKind{})
	require.NotNil(t, err)
	require.Equal(t, llm.CategoryMalformed, err.Category)
	require.Equal(t, 2, srv.Calls())
	u, ok := err.Details["token_usage"].(map[string]any)
	require.True(t, ok, "the error keeps what the step spent: %v", err.Details)
	require.Equal(t, 300, u["total_tokens"])
	require.InDelta(t, (250*0.40+50*1.60)/1e6, u["cost_usd"], 1e-12)
}

// An agent's vision summaries are priced at the vision model's rate, not
// the agent model's.
func TestVisionSummaryPricedAtItsModel(t *testing.T) {
	t.Parallel()
	pool := everythingPool(t)
	agent := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{ToolCalls: []llm.ToolCall{toolCall("call_img", "everything__get-tiny-image", nil)}, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}},
		{Text: "It is the MCP logo.", Usage: llm.Usage{InputTokens: 200, OutputTokens: 10}},
	})
	vision := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{Text: "A tiny logo.", Usage: llm.Usage{InputTokens: 1000, OutputTokens: 100}},
	})
	ms := modelsOf(map[string]string{"default": "gpt-4.1-mini", "vision": "gpt-4o"},
		map[string]*llmtest.Server{"default": agent, "vision": vision}, nil)
	b := setup(t, ms, map[string]any{"prompt": "What does the tiny image show?", "tools": []any{"everything.get-tiny-image"}},
		mcp.Service.Provide(nil, pool))
	out, err := b.run(t, nodellm.AgentKind{})
	require.Nil(t, err)
	require.Equal(t, 1, vision.Calls())
	u := out["_token_usage"].(map[string]any)
	agentCost := (300*0.40 + 20*1.60) / 1e6
	visionCost := (1000*2.50 + 100*10.00) / 1e6
	require.InDelta(t, agentCost+visionCost, u["cost_usd"], 1e-12)
	require.Equal(t, true, u["priced"])
}

// A model without a known price: a warning that says how to set one, and
// cost 0; a price set in the workflow is used; under max_cost_usd the call
// is refused with the same advice (it cost $0, silently, even there).
func TestUnpricedModel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		price   *workflow.Price
		budget  *engine.Budget
		wantErr bool
		cost    float64
	}{
		{name: "no price", budget: &engine.Budget{}},
		{name: "a workflow price", price: &workflow.Price{InputPerMTok: 1, OutputPerMTok: 2}, budget: &engine.Budget{MaxCostUSD: 1}, cost: (600*1.0 + 400*2.0) / 1e6},
		{name: "no price under max_cost_usd", budget: &engine.Budget{MaxCostUSD: 1}, wantErr: true},
		{name: "no price under the parent's max_cost_usd", budget: engine.NewBudget(0, 0, &engine.Budget{MaxCostUSD: 1}, 0, 0), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
				{Text: "hi", Usage: llm.Usage{InputTokens: 600, OutputTokens: 400, TotalTokens: 1000}},
			})
			ms := modelsOf(map[string]string{"default": "model-x"}, map[string]*llmtest.Server{"default": srv},
				map[string]*workflow.Price{"default": tc.price})
			b := setup(t, ms, map[string]any{"prompt": "hello"}, node.BudgetService.Provide(nil, tc.budget))
			out, err := b.run(t, nodellm.LLMKind{})
			if tc.wantErr {
				require.NotNil(t, err)
				require.Equal(t, "budget_exceeded", err.Category)
				require.Contains(t, err.Message, "model model-x has no known price")
				require.Contains(t, err.Message, "price: {input_per_mtok")
				require.Zero(t, srv.Calls(), "the call is refused before it is made")
				return
			}
			require.Nil(t, err)
			u := out["_token_usage"].(map[string]any)
			require.InDelta(t, tc.cost, u["cost_usd"], 1e-12)
			warnings := b.events.ofKind("warning")
			if tc.price != nil {
				require.Equal(t, true, u["priced"])
				require.Empty(t, warnings)
				return
			}
			require.Equal(t, false, u["priced"])
			require.Len(t, warnings, 1)
			require.Contains(t, warnings[0]["message"], "model model-x has no known price, so its cost counts as $0")
			require.Contains(t, warnings[0]["message"], "llm: {default: {…, price: {input_per_mtok")
		})
	}
}
