package server_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// TestChatStreamsTheReply: a chat message sent with Accept:
// text/event-stream is answered as the model writes: the first piece of
// the llm node's reply arrives while the model is still answering (the
// fake holds its stream open until the test saw it), then the rest, then
// the end with the whole reply.
func TestChatStreamsTheReply(t *testing.T) {
	t.Parallel()
	reply := "Hi, there, streaming friend."
	hold := make(chan struct{})
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{Text: reply, Usage: llm.Usage{InputTokens: 12, OutputTokens: 6}, Hold: hold},
	})
	release := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(release)
	flows := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(flows, "talk.yaml"), []byte(`version: 1
name: talk
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "`+model.BaseURL()+`", api_key: test}
nodes:
  - {id: chat, type: trigger.chat}
  - {id: answer, type: llm, prompt: "{{ chat.message }}"}
edges:
  - {from: chat, to: answer}
outputs:
  reply: "{{ answer.text }}"
`), 0o644))
	s := serve(t, serveOpts{flows: flows})

	req, err := http.NewRequestWithContext(t.Context(), "POST", s.url+"/api/chat/talk",
		strings.NewReader(`{"message": "hi", "conversation": "c-1"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

	sc := bufio.NewScanner(resp.Body)
	next := func() (string, map[string]any) {
		t.Helper()
		var event string
		for sc.Scan() {
			line := sc.Text()
			if e, ok := strings.CutPrefix(line, "event: "); ok {
				event = e
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				var data map[string]any
				require.NoError(t, json.Unmarshal([]byte(d), &data))
				return event, data
			}
		}
		t.Fatalf("the stream ended: %v", sc.Err())
		return "", nil
	}

	event, data := next()
	require.Equal(t, "run", event)
	require.Equal(t, "running", data["status"])
	require.Equal(t, "c-1", data["conversation"])

	event, data = next()
	require.Equal(t, "delta", event)
	require.Equal(t, map[string]any{"node": "answer", "text": "Hi, "}, data, "the first words while the model still answers")
	release()

	text := data["text"].(string)
	for {
		event, data = next()
		if event != "delta" {
			break
		}
		text += data["text"].(string)
	}
	require.Equal(t, "end", event)
	require.Equal(t, "completed", data["status"])
	require.Equal(t, reply, data["reply"])
	require.Equal(t, reply, text, "the deltas add up to the reply")
}
