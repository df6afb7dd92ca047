package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// TestChatAgentRemembers: two chat messages in one conversation to an
// agent with memory: {thread: "{{ trigger.conversation }}"}; the model's
// second request holds the first exchange before the new message.
func TestChatAgentRemembers(t *testing.T) {
	t.Parallel()
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		llmtest.Reply("Nice to meet you, Ada."),
		llmtest.Reply("You are Ada."),
	})
	flows := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(flows, "friend.yaml"), []byte(`version: 1
name: friend
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "`+model.BaseURL()+`", api_key: test}
nodes:
  - {id: chat, type: trigger.chat}
  - id: answer
    type: agent
    prompt: "{{ chat.message }}"
    memory: {thread: "{{ trigger.conversation }}", max_messages: 20}
edges:
  - {from: chat, to: answer}
outputs:
  reply: "{{ answer.text }}"
`), 0o644))
	s := serve(t, serveOpts{flows: flows})

	first := s.admin("POST", "/api/chat/friend", map[string]any{"message": "I am Ada.", "conversation": "c-7"}, http.StatusOK)
	require.Equal(t, "Nice to meet you, Ada.", first["reply"])
	second := s.admin("POST", "/api/chat/friend", map[string]any{"message": "Who am I?", "conversation": "c-7"}, http.StatusOK)
	require.Equal(t, "You are Ada.", second["reply"])

	require.Equal(t, 2, model.Calls())
	require.Equal(t, []llm.Message{{Role: llm.RoleUser, Content: "I am Ada."}}, model.Requests()[0].Messages)
	require.Equal(t, []llm.Message{
		{Role: llm.RoleUser, Content: "I am Ada."},
		{Role: llm.RoleAssistant, Content: "Nice to meet you, Ada."},
		{Role: llm.RoleUser, Content: "Who am I?"},
	}, model.Requests()[1].Messages, "the second request holds the first exchange")
}
