package llm

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	temp := 0.2
	tests := []struct {
		name string
		cfg  workflow.LLMConfig
		env  map[string]string
		want Config
	}{
		{
			name: "everything in the file",
			cfg: workflow.LLMConfig{Name: "default", Provider: "openai", Model: "gpt-4.1-mini", BaseURL: "https://gw.example.com/v1",
				APIKey: "sk-file", Headers: map[string]string{"X-A": "1"}, Temperature: &temp, MaxTokens: 99},
			env: map[string]string{EnvModel: "ignored", EnvAPIKey: "ignored", EnvOpenAI: "ignored"},
			want: Config{Name: "default", Provider: "openai", Model: "gpt-4.1-mini", BaseURL: "https://gw.example.com/v1",
				APIKey: "sk-file", Headers: map[string]string{"X-A": "1"}, Temperature: &temp, MaxTokens: 99},
		},
		{
			name: "all from SKEIN_LLM_*",
			cfg:  workflow.LLMConfig{Name: "default"},
			env:  map[string]string{EnvProvider: "anthropic", EnvModel: "claude-haiku-4-5", EnvBaseURL: "https://proxy.example.com", EnvAPIKey: "sk-skein"},
			want: Config{Name: "default", Provider: "anthropic", Model: "claude-haiku-4-5", BaseURL: "https://proxy.example.com", APIKey: "sk-skein"},
		},
		{
			name: "vendor key by provider",
			cfg:  workflow.LLMConfig{Name: "vision", Provider: "anthropic", Model: "claude-sonnet-4-5"},
			env:  map[string]string{EnvOpenAI: "sk-openai", EnvClaude: "sk-ant"},
			want: Config{Name: "vision", Provider: "anthropic", Model: "claude-sonnet-4-5", APIKey: "sk-ant"},
		},
		{
			name: "provider guessed from a claude model",
			cfg:  workflow.LLMConfig{Name: "judge", Model: "claude-opus-4-1"},
			env:  map[string]string{EnvClaude: "sk-ant"},
			want: Config{Name: "judge", Provider: "anthropic", Model: "claude-opus-4-1", APIKey: "sk-ant"},
		},
		{
			name: "OPENAI_API_KEY alone calls OpenAI's default model",
			cfg:  workflow.LLMConfig{},
			env:  map[string]string{EnvOpenAI: "sk-openai"},
			want: Config{Name: "default", Provider: "openai", Model: DefaultOpenAIModel, APIKey: "sk-openai"},
		},
		{
			name: "openai by default",
			cfg:  workflow.LLMConfig{Model: "gpt-4o"},
			env:  map[string]string{EnvOpenAI: "sk-openai"},
			want: Config{Name: "default", Provider: "openai", Model: "gpt-4o", APIKey: "sk-openai"},
		},
		{
			name: "SKEIN_LLM_* skip an entry of another provider",
			cfg:  workflow.LLMConfig{Name: "vision", Provider: "anthropic", Model: "claude-sonnet-4-5"},
			env: map[string]string{EnvProvider: "openai", EnvBaseURL: "http://localhost:11434/v1", EnvAPIKey: "ollama",
				EnvClaude: "sk-ant"},
			want: Config{Name: "vision", Provider: "anthropic", Model: "claude-sonnet-4-5", APIKey: "sk-ant"},
		},
		{
			name: "stream: false never asks for a stream",
			cfg:  workflow.LLMConfig{Provider: "openai", Model: "llama3.2", BaseURL: "http://localhost:11434/v1", Stream: new(false)},
			want: Config{Name: "default", Provider: "openai", Model: "llama3.2", BaseURL: "http://localhost:11434/v1", NoStream: true},
		},
		{
			name: "a local endpoint needs no key",
			cfg:  workflow.LLMConfig{Provider: "openai", Model: "llama3.2", BaseURL: "http://localhost:11434/v1"},
			want: Config{Name: "default", Provider: "openai", Model: "llama3.2", BaseURL: "http://localhost:11434/v1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Resolve(tt.cfg, envMap(tt.env))
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  workflow.LLMConfig
		env  map[string]string
		want []string
	}{
		{"no model for a server of one's own", workflow.LLMConfig{Name: "default", Provider: "openai"},
			map[string]string{EnvOpenAI: "k", EnvBaseURL: "http://localhost:11434/v1"},
			[]string{`llm "default"`, "no model", EnvModel}},
		{"no model and no key for OpenAI", workflow.LLMConfig{Name: "default"}, nil,
			[]string{`llm "default"`, "no model", EnvModel, EnvOpenAI + " alone for OpenAI's gpt-4.1-mini"}},
		{"no model for anthropic", workflow.LLMConfig{Name: "default", Provider: "anthropic"}, map[string]string{EnvClaude: "k"},
			[]string{"no model", EnvModel}},
		{"no key for openai", workflow.LLMConfig{Model: "gpt-4o"}, nil,
			[]string{"no API key for openai", EnvOpenAI, EnvAPIKey}},
		{"no key for anthropic", workflow.LLMConfig{Name: "vision", Model: "claude-sonnet-4-5"}, nil,
			[]string{`llm "vision"`, "no API key for anthropic", EnvClaude}},
		{"no key for the vendor's URL", workflow.LLMConfig{Model: "gpt-4o", BaseURL: "https://api.openai.com/v1"}, nil,
			[]string{"no API key"}},
		{"bad base URL", workflow.LLMConfig{Model: "m", BaseURL: "localhost:11434"}, nil,
			[]string{"not an http(s) URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Resolve(tt.cfg, envMap(tt.env))
			require.Error(t, err)
			var e *node.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, node.CategoryValidation, e.Category)
			require.True(t, e.Permanent)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	r := &registry{m: map[string]Factory{}}
	f := func(Config) (Provider, error) { return nil, nil }
	require.NoError(t, r.register("fake", f))
	require.ErrorContains(t, r.register("fake", f), "registered twice")
	require.Error(t, r.register("", f))
	require.Error(t, r.register("nil", nil))
	require.Equal(t, []string{"fake"}, r.names())

	_, err := r.open(Config{Name: "x", Provider: "fake"})
	require.NoError(t, err)
	_, err = r.open(Config{Name: "x", Provider: "no-such-provider"})
	require.ErrorContains(t, err, `unknown provider "no-such-provider" (registered: fake;`)
	require.ErrorContains(t, err, "import internal/llm/openai")
}

func TestMustRegisterPanicsOnDuplicate(t *testing.T) {
	t.Parallel()
	// The providers' own packages are not imported here, so register a
	// name of this test's own, once per process.
	mustRegisterOnce.Do(func() { MustRegister("test-must-register", func(Config) (Provider, error) { return nil, nil }) })
	require.Panics(t, func() { MustRegister("test-must-register", func(Config) (Provider, error) { return nil, nil }) })
}

var mustRegisterOnce sync.Once
