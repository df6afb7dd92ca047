package registry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// PickItem, in both API flavors: the model is shown the numbered items
// and the description, and its number and reason come back with the
// usage; a reply that is not the asked JSON is re-asked once.
func TestPickItem(t *testing.T) {
	t.Parallel()
	for _, flavor := range []llmtest.Flavor{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(string(flavor), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, flavor, llmtest.Script{
				{Text: "the second one", Usage: llm.Usage{InputTokens: 40, OutputTokens: 4}},
				{Text: `{"index": 2, "reason": "Mail sends email"}`, Usage: llm.Usage{InputTokens: 60, OutputTokens: 9}},
			})
			ms := models(map[string]*llmtest.Server{"default": srv}, flavor)
			n, reason, model, used, err := ms.PickItem(context.Background(), "", "the email app", []any{"Calculator", "Mail", map[string]any{"name": "Calendar"}})
			require.NoError(t, err)
			require.Equal(t, 2, n)
			require.Equal(t, "Mail sends email", reason)
			require.NotEmpty(t, model)
			require.Equal(t, 113, used["total_tokens"])
			prompt := srv.Requests()[0].Messages[0].Content
			require.Contains(t, prompt, "the email app")
			require.Contains(t, prompt, "1. \"Calculator\"\n2. \"Mail\"\n3. {\"name\":\"Calendar\"}\n")
		})
	}
}
