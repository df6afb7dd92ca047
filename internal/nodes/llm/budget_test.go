package llm_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/mcp"
	nodellm "github.com/skeinhq/skein/internal/nodes/llm"
	"github.com/skeinhq/skein/node"
)

// An agent that crosses max_tokens between two turns stops there, and the
// error keeps what it spent so the run counts it.
func TestAgentStopsAtBudgetMidLoop(t *testing.T) {
	t.Parallel()
	pool := everythingPool(t)
	turn := llmtest.CallTools(llm.ToolCall{ID: "c1", Name: "everything__echo", Arguments: map[string]any{"message": "hi"}})
	turn.Usage = llm.Usage{InputTokens: 50, OutputTokens: 20, TotalTokens: 70}
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{turn, llmtest.Reply("never reached")})
	budget := &engine.Budget{MaxTokens: 60}
	b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI),
		map[string]any{"prompt": "echo hi", "tools": []any{"everything.echo"}},
		mcp.Service.Provide(node.BudgetService.Provide(nil, budget), pool))
	out, err := b.run(t, nodellm.AgentKind{})
	require.Nil(t, out)
	require.NotNil(t, err)
	require.Equal(t, "budget_exceeded", err.Code, err.Message)
	require.Equal(t, 1, srv.Calls(), "the second turn is never asked")
	u, ok := err.Details["token_usage"].(map[string]any)
	require.True(t, ok, "the error keeps the usage: %v", err.Details)
	require.Equal(t, 70, u["total_tokens"])
}
