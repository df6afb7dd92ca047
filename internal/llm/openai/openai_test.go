package openai_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/llm/openai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConformance runs the provider suite against the fake OpenAI server.
func TestConformance(t *testing.T) {
	t.Parallel()
	llmtest.RunProviderSuite(t, func(t *testing.T, cfg llm.Config) llm.Provider {
		p, err := openai.New(cfg)
		require.NoError(t, err)
		return p
	}, llmtest.OpenAI)
}

// redirect sends every request to the fake server, whatever its host.
type redirect struct{ to *url.URL }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.to.Scheme, r.to.Host
	return http.DefaultTransport.RoundTrip(req)
}

// TestMaxTokensField checks that OpenAI itself gets max_completion_tokens
// and every other server the max_tokens they understand.
func TestMaxTokensField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, baseURL, field string
	}{
		{"OpenAI", "https://api.openai.com/v1", "max_completion_tokens"},
		{"default URL", "", "max_completion_tokens"},
		{"self-hosted", "http://gpu-box:8000/v1", "max_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply("ok")})
			to, err := url.Parse(srv.URL())
			require.NoError(t, err)
			tr := redirect{to: to}
			t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
			p, err := openai.New(llm.Config{BaseURL: tt.baseURL, APIKey: "k", Model: "gpt-4.1", MaxTokens: 50,
				HTTPClient: &http.Client{Transport: tr}})
			require.NoError(t, err)
			_, err = p.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi")}})
			require.NoError(t, err)
			body := srv.Last().Body
			require.Equal(t, float64(50), body[tt.field])
			require.Len(t, body, 3, "model, messages and %s only: %v", tt.field, body)
		})
	}
}

// TestToolImages checks that images a tool returned reach the model in a
// user message after all the tool results.
func TestToolImages(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply("a cat")})
	p, err := openai.New(llm.Config{BaseURL: srv.BaseURL(), Model: "gpt-4o"})
	require.NoError(t, err)
	shot := llm.Image{MIME: "image/jpeg", Data: []byte("jpeg-bytes")}
	_, err = p.Chat(context.Background(), llm.Request{Messages: []llm.Message{
		llm.User("Take a screenshot and check the time."),
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "screenshot"}, {ID: "c2", Name: "clock"}}},
		llm.ToolResult("c1", "saved", shot),
		llm.ToolResult("c2", "12:00"),
	}})
	require.NoError(t, err)
	got := srv.Last().Messages
	require.Len(t, got, 5)
	require.Equal(t, llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: "saved"}, got[2])
	require.Equal(t, llm.Message{Role: llm.RoleTool, ToolCallID: "c2", Content: "12:00"}, got[3])
	require.Equal(t, llm.RoleUser, got[4].Role)
	require.Contains(t, got[4].Content, "c1")
	require.Equal(t, []llm.Image{shot}, got[4].Images)
}
