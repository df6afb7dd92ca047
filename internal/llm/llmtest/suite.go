package llmtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/node"
)

// Sleeps records the waits of a provider's retries instead of waiting. Put
// its Sleep in llm.RetryPolicy.
type Sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

// Sleep records d and returns at once (or ctx's error).
func (s *Sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

// All returns the recorded waits.
func (s *Sleeps) All() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// NewProvider builds the provider under test from a configuration the suite
// makes: the fake server's base URL, an API key, a model, a header, an HTTP
// client and a retry policy whose waits are recorded.
type NewProvider func(t *testing.T, cfg llm.Config) llm.Provider

// Models the suite configures.
const (
	OpenAIModel    = "gpt-4.1-mini"
	AnthropicModel = "claude-sonnet-4-5"
	// APIKey is the key the suite configures.
	APIKey = "sk-llmtest"
)

type bundle struct {
	srv    *Server
	p      llm.Provider
	sleeps *Sleeps
	model  string
}

// setup starts a fake server playing script and builds the provider
// against it.
func setup(t *testing.T, newProvider NewProvider, flavor Flavor, script ...Turn) *bundle {
	t.Helper()
	return setupWith(t, newProvider, flavor, func(*llm.Config) {}, script...)
}

// setupWith is setup with the provider's configuration changed by edit.
func setupWith(t *testing.T, newProvider NewProvider, flavor Flavor, edit func(*llm.Config), script ...Turn) *bundle {
	t.Helper()
	srv := NewServer(t, flavor, script)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	b := &bundle{srv: srv, sleeps: &Sleeps{}, model: OpenAIModel}
	if flavor == Anthropic {
		b.model = AnthropicModel
	}
	temp := 0.25
	cfg := llm.Config{
		Name:        "test",
		Provider:    string(flavor),
		Model:       b.model,
		BaseURL:     srv.BaseURL(),
		APIKey:      APIKey,
		Headers:     map[string]string{"X-Skein-Test": "conformance"},
		Temperature: &temp,
		MaxTokens:   321,
		HTTPClient:  &http.Client{Transport: tr},
		Retry:       llm.RetryPolicy{Sleep: b.sleeps.Sleep},
	}
	edit(&cfg)
	b.p = newProvider(t, cfg)
	require.NotNil(t, b.p, "newProvider returned nil")
	return b
}

// RunProviderSuite checks a provider against the fake server of its API:
// the behaviour every llm.Provider promises, whichever API it speaks.
func RunProviderSuite(t *testing.T, newProvider NewProvider, flavor Flavor) {
	t.Helper()
	ctx := context.Background()
	weather := llm.Tool{
		Name:        "get_weather",
		Description: "Current weather in a city.",
		InputSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}},
			"required":   []any{"city"},
		},
	}
	ask := func(msgs ...llm.Message) llm.Request { return llm.Request{Messages: msgs} }

	t.Run("PlainReply", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newProvider, flavor, Turn{Text: "Hello, Ada.", Usage: llm.Usage{InputTokens: 12, OutputTokens: 5}})

		resp, err := b.p.Chat(ctx, ask(llm.System("Be brief."), llm.User("Say hello to Ada.")))
		require.NoError(t, err)
		require.Equal(t, "Hello, Ada.", resp.Text)
		require.Empty(t, resp.ToolCalls)
		require.Equal(t, llm.Usage{InputTokens: 12, OutputTokens: 5, TotalTokens: 17}, resp.Usage)
		require.Equal(t, llm.StopEnd, resp.StopReason)
		require.Equal(t, b.model, resp.Model)

		require.Equal(t, 1, b.srv.Calls())
		req := b.srv.Last()
		require.NoError(t, req.DecodeErr)
		require.Equal(t, b.model, req.Model)
		require.False(t, req.Stream)
		require.Equal(t, []llm.Message{llm.System("Be brief."), llm.User("Say hello to Ada.")}, req.Messages)
		require.Empty(t, req.Tools)
		require.Nil(t, req.Schema)
	})

	t.Run("SendsConfig", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newProvider, flavor, Reply("one"), Reply("two"))

		_, err := b.p.Chat(ctx, ask(llm.User("hi")))
		require.NoError(t, err)
		req := b.srv.Last()
		require.Equal(t, "conformance", req.Header.Get("X-Skein-Test"), "configured headers are sent")
		switch flavor {
		case OpenAI:
			require.Equal(t, "Bearer "+APIKey, req.Header.Get("Authorization"))
		case Anthropic:
			require.Equal(t, APIKey, req.Header.Get("X-Api-Key"))
			require.NotEmpty(t, req.Header.Get("Anthropic-Version"))
		}
		require.NotNil(t, req.Temperature)
		require.InDelta(t, 0.25, *req.Temperature, 1e-9)
		require.Equal(t, 321, req.MaxTokens)

		// The request's own settings win over the configuration.
		temp := 0.0
		_, err = b.p.Chat(ctx, llm.Request{Model: "other-model", Messages: []llm.Message{llm.User("hi")}, Temperature: &temp, MaxTokens: 77})
		require.NoError(t, err)
		req = b.srv.Last()
		require.Equal(t, "other-model", req.Model)
		require.NotNil(t, req.Temperature)
		require.Zero(t, *req.Temperature)
		require.Equal(t, 77, req.MaxTokens)
	})

	t.Run("ToolRoundTrip", func(t *testing.T) {
		t.Parallel()
		call := llm.ToolCall{ID: "call_weather_1", Name: "get_weather", Arguments: map[string]any{"city": "Paris"}}
		b := setup(t, newProvider, flavor,
			Turn{ToolCalls: []llm.ToolCall{call}, Usage: llm.Usage{InputTokens: 30, OutputTokens: 8}},
			Turn{Text: "It is sunny in Paris.", Usage: llm.Usage{InputTokens: 50, OutputTokens: 7}},
		)
		msgs := []llm.Message{llm.User("Weather in Paris?")}

		resp, err := b.p.Chat(ctx, llm.Request{Messages: msgs, Tools: []llm.Tool{weather}})
		require.NoError(t, err)
		require.Equal(t, llm.StopToolCalls, resp.StopReason)
		require.Len(t, resp.ToolCalls, 1)
		got := resp.ToolCalls[0]
		require.Equal(t, "call_weather_1", got.ID)
		require.Equal(t, "get_weather", got.Name)
		require.Equal(t, map[string]any{"city": "Paris"}, got.Arguments)
		require.JSONEq(t, `{"city":"Paris"}`, got.RawArguments)

		sent := b.srv.Last()
		require.Len(t, sent.Tools, 1)
		require.Equal(t, "get_weather", sent.Tools[0].Name)
		require.Equal(t, "Current weather in a city.", sent.Tools[0].Description)
		requireSameJSON(t, weather.InputSchema, sent.Tools[0].InputSchema)

		msgs = append(msgs, llm.Assistant(resp), llm.ToolResult(got.ID, `{"sky":"sunny"}`))
		resp, err = b.p.Chat(ctx, llm.Request{Messages: msgs, Tools: []llm.Tool{weather}})
		require.NoError(t, err)
		require.Equal(t, "It is sunny in Paris.", resp.Text)
		require.Equal(t, llm.StopEnd, resp.StopReason)

		sent = b.srv.Last()
		require.Len(t, sent.Messages, 3)
		require.Equal(t, llm.RoleAssistant, sent.Messages[1].Role)
		require.Len(t, sent.Messages[1].ToolCalls, 1)
		require.Equal(t, "call_weather_1", sent.Messages[1].ToolCalls[0].ID)
		require.Equal(t, "get_weather", sent.Messages[1].ToolCalls[0].Name)
		require.Equal(t, map[string]any{"city": "Paris"}, sent.Messages[1].ToolCalls[0].Arguments)
		require.Equal(t, llm.Message{Role: llm.RoleTool, ToolCallID: "call_weather_1", Content: `{"sky":"sunny"}`}, sent.Messages[2])
	})

	t.Run("ParallelToolCalls", func(t *testing.T) {
		t.Parallel()
		for _, stream := range []bool{false, true} {
			name := "Complete"
			if stream {
				name = "Stream"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				b := setup(t, newProvider, flavor,
					Turn{ToolCalls: []llm.ToolCall{
						{ID: "call_a", Name: "get_weather", Arguments: map[string]any{"city": "Paris"}},
						{ID: "call_b", Name: "get_time", Arguments: map[string]any{"zone": "Europe/Berlin", "format": "24h"}},
					}, Usage: llm.Usage{InputTokens: 40, OutputTokens: 20}},
					Reply("Sunny, and it is noon."),
				)
				msgs := []llm.Message{llm.User("Weather in Paris and time in Berlin?")}
				resp, err := b.p.Chat(ctx, llm.Request{Messages: msgs, Tools: []llm.Tool{weather, {Name: "get_time"}}, Stream: stream})
				require.NoError(t, err)
				require.Len(t, resp.ToolCalls, 2, "two calls, collected separately")
				require.Equal(t, "call_a", resp.ToolCalls[0].ID)
				require.Equal(t, "get_weather", resp.ToolCalls[0].Name)
				require.Equal(t, map[string]any{"city": "Paris"}, resp.ToolCalls[0].Arguments)
				require.Equal(t, "call_b", resp.ToolCalls[1].ID)
				require.Equal(t, "get_time", resp.ToolCalls[1].Name)
				require.Equal(t, map[string]any{"zone": "Europe/Berlin", "format": "24h"}, resp.ToolCalls[1].Arguments)
				require.Equal(t, llm.Usage{InputTokens: 40, OutputTokens: 20, TotalTokens: 60}, resp.Usage)

				// Both results go back; the server sees both, in order.
				msgs = append(msgs, llm.Assistant(resp),
					llm.ToolResult("call_a", "sunny"), llm.ToolResult("call_b", "12:00"))
				resp, err = b.p.Chat(ctx, llm.Request{Messages: msgs, Tools: []llm.Tool{weather, {Name: "get_time"}}, Stream: stream})
				require.NoError(t, err)
				require.Equal(t, "Sunny, and it is noon.", resp.Text)
				sent := b.srv.Last().Messages
				require.Len(t, sent, 4)
				require.Len(t, sent[1].ToolCalls, 2)
				require.Equal(t, llm.Message{Role: llm.RoleTool, ToolCallID: "call_a", Content: "sunny"}, sent[2])
				require.Equal(t, llm.Message{Role: llm.RoleTool, ToolCallID: "call_b", Content: "12:00"}, sent[3])
			})
		}
	})

	t.Run("StreamingWithUsage", func(t *testing.T) {
		t.Parallel()
		text := "The quick brown fox jumps over the lazy dog."
		b := setup(t, newProvider, flavor, Turn{Text: text, Usage: llm.Usage{InputTokens: 21, OutputTokens: 11}})

		var got []string
		resp, err := b.p.Chat(ctx, llm.Request{Messages: []llm.Message{llm.User("Pangram, please.")}, Stream: true,
			OnText: func(piece string) { got = append(got, piece) }})
		require.NoError(t, err)
		require.Equal(t, text, resp.Text)
		require.Greater(t, len(got), 1, "the text came in pieces")
		require.Equal(t, text, strings.Join(got, ""), "the pieces make the whole reply")
		require.Equal(t, llm.Usage{InputTokens: 21, OutputTokens: 11, TotalTokens: 32}, resp.Usage, "usage from the final chunk")
		require.Equal(t, llm.StopEnd, resp.StopReason)
		require.Equal(t, b.model, resp.Model)
		require.True(t, b.srv.Last().Stream, "the request asked for a stream")
	})

	t.Run("StreamIgnoredByTheServer", func(t *testing.T) {
		t.Parallel()
		call := llm.ToolCall{ID: "call_w", Name: "get_weather", Arguments: map[string]any{"city": "Paris"}}
		b := setup(t, newProvider, flavor,
			Turn{Text: "Checking the weather.", ToolCalls: []llm.ToolCall{call}, Usage: llm.Usage{InputTokens: 30, OutputTokens: 9}, IgnoreStream: true},
			Turn{Text: "Sunny in Paris.", Usage: llm.Usage{InputTokens: 40, OutputTokens: 4}, IgnoreStream: true})

		var got []string
		req := llm.Request{Messages: []llm.Message{llm.User("Weather in Paris?")}, Tools: []llm.Tool{weather}, Stream: true,
			OnText: func(piece string) { got = append(got, piece) }}
		resp, err := b.p.Chat(ctx, req)
		require.NoError(t, err, "a JSON answer to a streamed request is read as the whole reply")
		require.True(t, b.srv.Last().Stream, "the request asked for a stream")
		require.True(t, resp.Unstreamed)
		require.Equal(t, "Checking the weather.", resp.Text)
		require.Equal(t, []string{"Checking the weather."}, got, "the text arrives in one piece")
		require.Len(t, resp.ToolCalls, 1)
		require.Equal(t, "call_w", resp.ToolCalls[0].ID)
		require.Equal(t, "get_weather", resp.ToolCalls[0].Name)
		require.Equal(t, map[string]any{"city": "Paris"}, resp.ToolCalls[0].Arguments)
		require.Equal(t, llm.StopToolCalls, resp.StopReason)
		require.Equal(t, llm.Usage{InputTokens: 30, OutputTokens: 9, TotalTokens: 39}, resp.Usage)
		require.Equal(t, b.model, resp.Model)

		req.Messages = append(req.Messages, llm.Assistant(resp), llm.ToolResult("call_w", "sunny"))
		resp, err = b.p.Chat(ctx, req)
		require.NoError(t, err)
		require.Equal(t, "Sunny in Paris.", resp.Text)
		require.Equal(t, llm.StopEnd, resp.StopReason)
		require.Equal(t, llm.Usage{InputTokens: 40, OutputTokens: 4, TotalTokens: 44}, resp.Usage)
	})

	t.Run("NoStreamConfig", func(t *testing.T) {
		t.Parallel()
		b := setupWith(t, newProvider, flavor, func(c *llm.Config) { c.NoStream = true }, Reply("Whole."))
		var got []string
		resp, err := b.p.Chat(ctx, llm.Request{Messages: []llm.Message{llm.User("hi")}, Stream: true,
			OnText: func(piece string) { got = append(got, piece) }})
		require.NoError(t, err)
		require.Equal(t, "Whole.", resp.Text)
		require.False(t, b.srv.Last().Stream, "a model configured stream: false is never asked for a stream")
		require.Empty(t, got)
		require.False(t, resp.Unstreamed)
	})

	t.Run("StreamedReplyIsNotUnstreamed", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newProvider, flavor, Reply("streamed"))
		resp, err := b.p.Chat(ctx, llm.Request{Messages: []llm.Message{llm.User("hi")}, Stream: true})
		require.NoError(t, err)
		require.Equal(t, "streamed", resp.Text)
		require.False(t, resp.Unstreamed)
	})

	t.Run("StreamingTextArrivesBeforeTheReplyEnds", func(t *testing.T) {
		t.Parallel()
		hold := make(chan struct{})
		b := setup(t, newProvider, flavor, Turn{Text: "First words, then the rest.", Hold: hold})
		first := make(chan string, 1)
		done := make(chan error, 1)
		var resp *llm.Response
		go func() {
			var err error
			resp, err = b.p.Chat(ctx, llm.Request{Messages: []llm.Message{llm.User("hi")}, Stream: true,
				OnText: func(piece string) {
					select {
					case first <- piece:
					default:
					}
				}})
			done <- err
		}()
		// The server holds the stream open after its first piece until
		// the test saw that piece.
		require.Equal(t, "First", <-first)
		close(hold)
		require.NoError(t, <-done)
		require.Equal(t, "First words, then the rest.", resp.Text)
	})

	t.Run("ImageInput", func(t *testing.T) {
		t.Parallel()
		png := []byte("\x89PNG\r\n\x1a\nnot-really-a-png")
		b := setup(t, newProvider, flavor, Reply("A tiny image."))

		resp, err := b.p.Chat(ctx, ask(llm.User("What is in this picture?", llm.Image{MIME: "image/png", Data: png})))
		require.NoError(t, err)
		require.Equal(t, "A tiny image.", resp.Text)

		req := b.srv.Last()
		require.Len(t, req.Messages, 1)
		require.Equal(t, "What is in this picture?", req.Messages[0].Content)
		require.Equal(t, []llm.Image{{MIME: "image/png", Data: png}}, req.Messages[0].Images)

		// And in the API's own format.
		enc := base64.StdEncoding.EncodeToString(png)
		parts := req.Body["messages"].([]any)[0].(map[string]any)["content"].([]any)
		var found bool
		for _, x := range parts {
			part := x.(map[string]any)
			switch flavor {
			case OpenAI:
				if part["type"] == "image_url" {
					found = true
					require.Equal(t, "data:image/png;base64,"+enc, part["image_url"].(map[string]any)["url"])
				}
			case Anthropic:
				if part["type"] == "image" {
					found = true
					require.Equal(t, map[string]any{"type": "base64", "media_type": "image/png", "data": enc}, part["source"])
				}
			}
		}
		require.True(t, found, "an image part in %s", req.Raw)
	})

	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"city": map[string]any{"type": "string"},
			"days": map[string]any{"type": "integer", "minimum": 1},
		},
		"required":             []any{"city", "days"},
		"additionalProperties": false,
	}

	t.Run("JSONSchemaReask", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newProvider, flavor,
			Turn{Text: `{"city": 42, "days": 3}`, Usage: llm.Usage{InputTokens: 10, OutputTokens: 4}},
			Turn{Text: `{"city": "Paris", "days": 3}`, Usage: llm.Usage{InputTokens: 30, OutputTokens: 6}},
		)
		v, resp, err := llm.ChatJSON(ctx, b.p, ask(llm.User("Forecast request for Paris, 3 days, as JSON.")), schema)
		require.NoError(t, err)
		require.Equal(t, map[string]any{"city": "Paris", "days": float64(3)}, v)
		require.Equal(t, llm.Usage{InputTokens: 40, OutputTokens: 10, TotalTokens: 50}, resp.Usage, "usage of both calls")
		require.Equal(t, 2, b.srv.Calls(), "one re-ask")

		reqs := b.srv.Requests()
		for _, r := range reqs {
			requireSameJSON(t, schema, r.Schema)
		}
		msgs := reqs[1].Messages
		require.Len(t, msgs, 3)
		require.Equal(t, llm.RoleAssistant, msgs[1].Role)
		require.JSONEq(t, `{"city": 42, "days": 3}`, msgs[1].Content, "the invalid reply is shown")
		require.Equal(t, llm.RoleUser, msgs[2].Role)
		require.Contains(t, msgs[2].Content, "/city", "the re-ask names the invalid field")
		require.Contains(t, msgs[2].Content, "string", "and what was wanted")
	})

	t.Run("JSONSchemaFailsAfterReask", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newProvider, flavor, Reply(`{"city": "Paris"}`), Reply(`{"city": "Paris", "days": 0}`))
		_, _, err := llm.ChatJSON(ctx, b.p, ask(llm.User("Forecast request, as JSON.")), schema)
		e := requireCategory(t, err, llm.CategoryMalformed)
		require.Contains(t, e.Message, "at '/days': must be >= 1, is 0")
		require.Equal(t, 2, b.srv.Calls(), "exactly one re-ask")
	})

	t.Run("RateLimitHonoursRetryAfter", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newProvider, flavor, RateLimited("1"), Reply("made it"))
		resp, err := b.p.Chat(ctx, ask(llm.User("hi")))
		require.NoError(t, err)
		require.Equal(t, "made it", resp.Text)
		require.Equal(t, 2, b.srv.Calls())
		require.Equal(t, []time.Duration{time.Second}, b.sleeps.All(), "waited what Retry-After said")
	})

	t.Run("ServerErrorBacksOff", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newProvider, flavor, Fail(http.StatusInternalServerError), Fail(http.StatusBadGateway), Reply("made it"))
		resp, err := b.p.Chat(ctx, ask(llm.User("hi")))
		require.NoError(t, err)
		require.Equal(t, "made it", resp.Text)
		require.Equal(t, 3, b.srv.Calls())
		waits := b.sleeps.All()
		require.Len(t, waits, 2)
		require.Less(t, waits[0], waits[1], "backoff grows")
		for _, w := range waits {
			require.Positive(t, w)
		}
	})

	t.Run("RetriesAreBounded", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newProvider, flavor, RateLimited("2"), RateLimited("2"), RateLimited("2"), RateLimited("2"), Reply("never"))
		_, err := b.p.Chat(ctx, ask(llm.User("hi")))
		e := requireCategory(t, err, llm.CategoryRateLimit)
		require.Equal(t, 1+llm.DefaultMaxRetries, b.srv.Calls(), "one call and three retries")
		require.Equal(t, http.StatusTooManyRequests, e.Details["status"])
		require.Contains(t, e.Details["body"], "scripted 429")
		require.Equal(t, 2*time.Second, e.RetryAfter, "the engine learns the wait too")
	})

	t.Run("MalformedReply", func(t *testing.T) {
		t.Parallel()
		for _, stream := range []bool{false, true} {
			name := "Complete"
			if stream {
				name = "Stream"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				b := setup(t, newProvider, flavor, Turn{Malformed: true}, Reply("never"))
				_, err := b.p.Chat(ctx, llm.Request{Messages: []llm.Message{llm.User("hi")}, Stream: stream})
				e := requireCategory(t, err, llm.CategoryMalformed)
				require.Contains(t, e.Message, string(flavor))
				require.Contains(t, e.Message, "malformed")
				require.Equal(t, 1, b.srv.Calls(), "a malformed reply is not retried")
			})
		}
	})

	t.Run("AuthenticationNotRetried", func(t *testing.T) {
		t.Parallel()
		for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
			t.Run(http.StatusText(status), func(t *testing.T) {
				t.Parallel()
				b := setup(t, newProvider, flavor, Fail(status), Reply("never"))
				_, err := b.p.Chat(ctx, ask(llm.User("hi")))
				e := requireCategory(t, err, llm.CategoryAuthentication)
				require.True(t, e.Permanent)
				require.Equal(t, status, e.Details["status"])
				require.Contains(t, e.Details["body"], "scripted")
				require.Equal(t, 1, b.srv.Calls(), "exactly one call")
				require.Empty(t, b.sleeps.All())
			})
		}
	})

	t.Run("ClientErrorNotRetried", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newProvider, flavor, Turn{Status: http.StatusBadRequest, Body: `{"error": {"message": "max_tokens is too large"}}`}, Reply("never"))
		_, err := b.p.Chat(ctx, ask(llm.User("hi")))
		e := requireCategory(t, err, llm.CategoryHTTP)
		require.Contains(t, e.Message, "max_tokens is too large")
		require.Equal(t, 1, b.srv.Calls())
	})

	t.Run("Timeout", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newProvider, flavor, Turn{Hang: true})
		ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := b.p.Chat(ctx, ask(llm.User("hi")))
		requireCategory(t, err, llm.CategoryTimeout)
	})
}

func requireCategory(t *testing.T, err error, category string) *node.Error {
	t.Helper()
	require.Error(t, err)
	e, ok := err.(*node.Error)
	require.True(t, ok, "want a *node.Error, got %T: %v", err, err)
	require.Equal(t, category, e.Category, "error: %v", err)
	return e
}

func requireSameJSON(t *testing.T, want, got any) {
	t.Helper()
	w, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(w), string(g))
}
