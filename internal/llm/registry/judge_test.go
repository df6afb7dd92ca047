package registry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// TestJudgeValue: a guardrail's judge asks the judge model (here falling
// back to default) whether the value passes, showing it the prompt and
// the value; the verdict and reason come back with the usage, priced.
func TestJudgeValue(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{Text: `{"pass": false, "reason": "it names a person"}`, Usage: llm.Usage{InputTokens: 50, OutputTokens: 8, TotalTokens: 58}},
	})
	ms := models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI)
	pass, reason, used, err := ms.JudgeValue(context.Background(), "", "Does the summary avoid naming people?", map[string]any{"summary": "Ada wrote it"})
	require.NoError(t, err)
	require.False(t, pass)
	require.Equal(t, "it names a person", reason)
	require.Equal(t, 58, used["total_tokens"])
	require.Equal(t, true, used["priced"])
	require.Greater(t, used["cost_usd"], 0.0)
	prompt := srv.Last().Messages[0].Content
	require.Contains(t, prompt, "Does the summary avoid naming people?")
	require.Contains(t, prompt, `"summary": "Ada wrote it"`)
}
