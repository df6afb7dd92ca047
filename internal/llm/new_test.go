package llm_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/llm"
	_ "github.com/skeinhq/skein/internal/llm/anthropic"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	_ "github.com/skeinhq/skein/internal/llm/openai"
	"github.com/skeinhq/skein/workflow"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNew builds each provider from a workflow's llm: entry and the
// environment, and talks to the fake server of its API.
func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		flavor llmtest.Flavor
		cfg    func(baseURL string) workflow.LLMConfig
		env    func(baseURL string) map[string]string
		auth   func(t *testing.T, r *llmtest.Request)
	}{
		{
			name:   "openai from the file",
			flavor: llmtest.OpenAI,
			cfg: func(u string) workflow.LLMConfig {
				return workflow.LLMConfig{Name: "default", Provider: "openai", Model: "gpt-4.1-mini", BaseURL: u, APIKey: "sk-file"}
			},
			auth: func(t *testing.T, r *llmtest.Request) {
				require.Equal(t, "Bearer sk-file", r.Header.Get("Authorization"))
			},
		},
		{
			name:   "openai-compatible from SKEIN_LLM_*",
			flavor: llmtest.OpenAI,
			cfg:    func(string) workflow.LLMConfig { return workflow.LLMConfig{Name: "default"} },
			env: func(u string) map[string]string {
				return map[string]string{llm.EnvBaseURL: u, llm.EnvModel: "llama3.2", llm.EnvAPIKey: "sk-env"}
			},
			auth: func(t *testing.T, r *llmtest.Request) {
				require.Equal(t, "Bearer sk-env", r.Header.Get("Authorization"))
				require.Equal(t, "llama3.2", r.Model)
			},
		},
		{
			name:   "anthropic with ANTHROPIC_API_KEY",
			flavor: llmtest.Anthropic,
			cfg: func(u string) workflow.LLMConfig {
				return workflow.LLMConfig{Name: "vision", Model: "claude-sonnet-4-5", BaseURL: u + "/v1"}
			},
			env:  func(string) map[string]string { return map[string]string{llm.EnvClaude: "sk-ant"} },
			auth: func(t *testing.T, r *llmtest.Request) { require.Equal(t, "sk-ant", r.Header.Get("X-Api-Key")) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, tt.flavor, llmtest.Script{llmtest.Reply("hello")})
			env := map[string]string{}
			if tt.env != nil {
				env = tt.env(srv.BaseURL())
			}
			p, err := llm.New(tt.cfg(srv.BaseURL()), func(k string) (string, bool) {
				v, ok := env[k]
				return v, ok
			})
			require.NoError(t, err)
			resp, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}})
			require.NoError(t, err)
			require.Equal(t, "hello", resp.Text)
			tt.auth(t, srv.Last())
		})
	}
}

// TestNewNeedsAModel: an entry for a server of one's own names its model;
// one for OpenAI's API with a key gets DefaultOpenAIModel.
func TestNewNeedsAModel(t *testing.T) {
	t.Parallel()
	noEnv := func(string) (string, bool) { return "", false }
	_, err := llm.New(workflow.LLMConfig{Name: "judge", Provider: "openai", APIKey: "k", BaseURL: "http://localhost:11434/v1"}, noEnv)
	require.ErrorContains(t, err, `llm "judge": no model`)
	cfg, err := llm.Resolve(workflow.LLMConfig{Name: "judge", Provider: "openai", APIKey: "k"}, noEnv)
	require.NoError(t, err)
	require.Equal(t, llm.DefaultOpenAIModel, cfg.Model)
}

func TestProvidersRegistered(t *testing.T) {
	t.Parallel()
	require.Subset(t, llm.Providers(), []string{llm.OpenAI, llm.Anthropic})
}
