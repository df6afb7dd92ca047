package llmtest

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/llm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type rawBundle struct {
	srv    *Server
	client *http.Client
}

func setupServer(t *testing.T, flavor Flavor, script ...Turn) *rawBundle {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &rawBundle{srv: NewServer(t, flavor, script), client: &http.Client{Transport: tr}}
}

func (b *rawBundle) post(t *testing.T, path, body string) (*http.Response, string) {
	t.Helper()
	res, err := b.client.Post(b.srv.URL()+path, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(raw)
}

// events reads an SSE body into "event|data" lines (event may be empty).
func events(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	var event string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			out = append(out, event+"|"+strings.TrimPrefix(line, "data: "))
			event = ""
		}
	}
	return out
}

func TestScriptAndRecording(t *testing.T) {
	t.Parallel()
	b := setupServer(t, OpenAI, Reply("one"))
	b.srv.Push(Reply("two"))

	_, body := b.post(t, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"a"}]}`)
	require.Contains(t, body, `"content":"one"`)
	_, body = b.post(t, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"b"}]}`)
	require.Contains(t, body, `"content":"two"`)
	res, body := b.post(t, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"c"}]}`)
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Contains(t, body, "script exhausted after 2 turns")

	require.Equal(t, 3, b.srv.Calls())
	reqs := b.srv.Requests()
	require.Equal(t, []llm.Message{llm.User("a")}, reqs[0].Messages)
	require.Equal(t, []llm.Message{llm.User("c")}, b.srv.Last().Messages)
}

func TestWrongRoute(t *testing.T) {
	t.Parallel()
	b := setupServer(t, Anthropic, Reply("never"))
	res, body := b.post(t, "/v1/chat/completions", `{"model":"m","max_tokens":5,"messages":[]}`)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Contains(t, body, "want POST /v1/messages")
	require.Contains(t, body, `"type":"not_found_error"`)
}

func TestUnreadableRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		flavor Flavor
		path   string
		body   string
		want   string
	}{
		{"not JSON", OpenAI, "/v1/chat/completions", `{`, "cannot read the request"},
		{"OpenAI image not a data URL", OpenAI, "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`, "not a data: URL"},
		{"Anthropic without max_tokens", Anthropic, "/v1/messages", `{"model":"m","messages":[]}`, "max_tokens is required"},
		{"Anthropic empty text block", Anthropic, "/v1/messages",
			`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, "must be non-empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupServer(t, tt.flavor, Reply("never"))
			res, body := b.post(t, tt.path, tt.body)
			require.Equal(t, http.StatusBadRequest, res.StatusCode)
			require.Contains(t, body, tt.want)
			require.Error(t, b.srv.Last().DecodeErr)
		})
	}
}

func TestOpenAIStreamFormat(t *testing.T) {
	t.Parallel()
	b := setupServer(t, OpenAI, Turn{
		Text:      "Hi there",
		ToolCalls: []llm.ToolCall{{ID: "c1", Name: "f", RawArguments: `{"a":1}`}, {ID: "c2", Name: "g", RawArguments: `{"b":2}`}},
		Usage:     llm.Usage{InputTokens: 3, OutputTokens: 4},
	})
	res, body := b.post(t, "/v1/chat/completions",
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	ev := events(t, body)
	require.Equal(t, "|[DONE]", ev[len(ev)-1])
	require.Contains(t, ev[len(ev)-2], `"choices":[]`)
	require.Contains(t, ev[len(ev)-2], `"usage":{"completion_tokens":4,"prompt_tokens":3,"total_tokens":7}`)
	require.Contains(t, ev[len(ev)-3], `"finish_reason":"tool_calls"`)
	var argIndexes []int
	for _, e := range ev[:len(ev)-1] {
		var chunk struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Index    int `json:"index"`
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(e, "|")), &chunk))
		require.Equal(t, "chat.completion.chunk", chunk.Object)
		for _, ch := range chunk.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Function.Arguments != "" {
					argIndexes = append(argIndexes, tc.Index)
				}
			}
		}
	}
	require.Equal(t, []int{0, 1, 0, 1, 0, 1}, argIndexes, "argument fragments interleave across calls")
}

func TestAnthropicStreamFormat(t *testing.T) {
	t.Parallel()
	b := setupServer(t, Anthropic, Turn{
		Text:      "Hi",
		ToolCalls: []llm.ToolCall{{ID: "t1", Name: "f", Arguments: map[string]any{"a": 1}}},
		Usage:     llm.Usage{InputTokens: 3, OutputTokens: 4},
	})
	_, body := b.post(t, "/v1/messages", `{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"x"}]}`)
	var names []string
	for _, e := range events(t, body) {
		name, data, _ := strings.Cut(e, "|")
		require.Contains(t, data, `"type":"`+name+`"`, "each event's data names its type")
		if len(names) == 0 || names[len(names)-1] != name {
			names = append(names, name)
		}
	}
	require.Equal(t, []string{
		"message_start", "ping",
		"content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop",
	}, names)
	require.Contains(t, body, `"input_json_delta"`)
	require.Contains(t, body, `"usage":{"output_tokens":4}`)
	require.Contains(t, body, `"usage":{"input_tokens":3,"output_tokens":1}`)
}

func TestAnthropicDecodesStringForms(t *testing.T) {
	t.Parallel()
	b := setupServer(t, Anthropic, Reply("ok"))
	b.post(t, "/v1/messages", `{"model":"m","max_tokens":9,"system":"be nice",`+
		`"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},`+
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"},{"type":"text","text":"and?"}]}]}`)
	require.NoError(t, b.srv.Last().DecodeErr)
	require.Equal(t, []llm.Message{
		llm.System("be nice"), llm.User("hi"), {Role: llm.RoleAssistant, Content: "yo"},
		llm.ToolResult("t", "r"), llm.User("and?"),
	}, b.srv.Last().Messages)
}

// TestResponder: a responder answers every request from what it asked,
// in any order, streamed or not, and still records the requests.
func TestResponder(t *testing.T) {
	t.Parallel()
	for _, flavor := range []Flavor{OpenAI, Anthropic} {
		t.Run(string(flavor), func(t *testing.T) {
			t.Parallel()
			srv := NewResponder(t, flavor, func(r *Request) Turn {
				return Reply("echo " + r.Messages[len(r.Messages)-1].Content)
			})
			b := &rawBundle{srv: srv, client: &http.Client{Transport: &http.Transport{}}}
			path, body := "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"%s"}]}`
			if flavor == Anthropic {
				path, body = "/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"%s"}]}`
			}
			for _, word := range []string{"two", "one", "three"} {
				res, raw := b.post(t, path, strings.Replace(body, "%s", word, 1))
				require.Equal(t, http.StatusOK, res.StatusCode, raw)
				require.Contains(t, raw, "echo "+word)
			}
			require.Equal(t, 3, srv.Calls())
			b.client.CloseIdleConnections()
		})
	}
}
