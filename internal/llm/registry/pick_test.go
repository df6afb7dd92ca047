package registry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/workflow"
)

// Every goroutine a test starts (fake model servers and the providers'
// connections to them) ends with the test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// noEnv hides the process environment from model resolution: SKEIN_LLM_*
// set on the machine must not redirect a test's calls.
func noEnv(string) (string, bool) { return "", false }

// models resolves the named model configs, each pointing at a fake server.
func models(servers map[string]*llmtest.Server, flavor llmtest.Flavor) *registry.Models {
	w := &workflow.Workflow{Name: "t"}
	for _, name := range []string{"default", "vision", "judge"} {
		srv, ok := servers[name]
		if !ok {
			continue
		}
		model := "gpt-4.1-mini"
		if flavor == llmtest.Anthropic {
			model = "claude-haiku-4-5"
		}
		w.LLM = append(w.LLM, &workflow.LLMConfig{
			Name: name, Provider: string(flavor), Model: model, BaseURL: srv.BaseURL(), APIKey: "test-key",
		})
	}
	return registry.New(w, noEnv)
}

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
