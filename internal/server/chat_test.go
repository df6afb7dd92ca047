package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChatWithHistory: two messages of one conversation; the second run
// gets the first message and its reply as trigger.history, and another
// conversation starts empty.
func TestChatWithHistory(t *testing.T) {
	t.Parallel()
	s := serveHooks(t)

	first := s.admin("POST", "/api/chat/chat", map[string]any{"message": "hello"}, http.StatusOK)
	conv := first["conversation"].(string)
	require.True(t, strings.HasPrefix(conv, "conv_"), "a conversation id is made: %v", first)
	require.Equal(t, "completed", first["status"])
	require.Equal(t, float64(1), first["turn"])
	require.Equal(t, "you said hello; before: ", first["reply"])
	id1 := first["execution_id"].(string)

	second := s.admin("POST", "/api/chat/chat", map[string]any{"message": "and you?", "conversation": conv}, http.StatusOK)
	require.Equal(t, float64(2), second["turn"])
	require.Equal(t, "you said and you?; before: hello | you said hello; before: ", second["reply"])
	doc := s.admin("GET", "/api/runs/"+second["execution_id"].(string), nil, http.StatusOK)
	out := outputs(doc)
	require.Equal(t, conv, out["session"])
	require.Equal(t, []any{
		map[string]any{"role": "user", "content": "hello", "execution_id": id1},
		map[string]any{"role": "assistant", "content": "you said hello; before: ", "execution_id": id1},
	}, out["history"])
	require.Equal(t, "chat", doc["trigger"])
	require.Equal(t, "chat", doc["source"], "a run a chat message started")

	other := s.admin("POST", "/api/chat/chat", map[string]any{"message": "hi", "conversation": "mine"}, http.StatusOK)
	require.Equal(t, "mine", other["conversation"])
	require.Equal(t, float64(1), other["turn"])
	require.Equal(t, "you said hi; before: ", other["reply"], "another conversation has its own history")
}

// TestChatFollowOnEvents: with ?wait=0s the answer is 202 with the run,
// and the reply arrives at the end of the run's event stream.
func TestChatFollowOnEvents(t *testing.T) {
	t.Parallel()
	s := serveHooks(t)
	a := s.do("POST", "/api/chat/chat?wait=0s", s.token, map[string]any{"message": "later", "conversation": "c-1"})
	require.Contains(t, []int{http.StatusAccepted, http.StatusOK}, a.status, string(a.body))
	ans := a.json(t)
	id := ans["execution_id"].(string)
	require.Equal(t, "/api/runs/"+id, a.header.Get("Location"))

	evs := s.readEvents(t, id, "", func(sse) bool { return false })
	end := evs[len(evs)-1]
	require.Equal(t, "end", end.event)
	var data map[string]any
	require.NoError(t, json.Unmarshal([]byte(end.data), &data))
	require.Equal(t, "completed", data["status"])
	require.Equal(t, "you said later; before: ", data["outputs"].(map[string]any)["reply"])

	for _, tc := range []struct {
		name, path string
		body       any
		token      string
		status     int
		code       string
	}{
		{"no message", "/api/chat/chat", map[string]any{"conversation": "c"}, s.token, 400, "bad_request"},
		{"unknown field", "/api/chat/chat", map[string]any{"text": "x"}, s.token, 400, "bad_request"},
		{"no chat trigger", "/api/chat/hooked", map[string]any{"message": "x"}, s.token, 400, "bad_request"},
		{"unknown workflow", "/api/chat/nope", map[string]any{"message": "x"}, s.token, 404, "not_found"},
		{"bad wait", "/api/chat/chat?wait=forever", map[string]any{"message": "x"}, s.token, 400, "bad_request"},
		{"no token", "/api/chat/chat", map[string]any{"message": "x"}, "", 401, "unauthorized"},
		{"read token", "/api/chat/chat", map[string]any{"message": "x"}, tokenCreate(t, s.dir, "read"), 403, "forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := s.do("POST", tc.path, tc.token, tc.body)
			require.Equal(t, tc.status, a.status, string(a.body))
			require.Equal(t, tc.code, a.json(t)["code"])
		})
	}
}
