package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/nodes/trigger"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/node"
)

// ChatBody is the body of POST /api/chat/{workflow}.
type ChatBody struct {
	// Message is what the user says; required.
	Message string `json:"message"`
	// Conversation names the conversation the message belongs to; a new
	// one is made when it is empty.
	Conversation string `json:"conversation"`
	// Trigger is the trigger.chat node to start from; default the first.
	Trigger string `json:"trigger"`
}

// ChatAnswer is the answer to a chat message: the run that answers it and,
// once that run has ended, its reply (the run's output reply).
type ChatAnswer struct {
	ExecutionID  string `json:"execution_id"`
	Conversation string `json:"conversation"`
	// Turn numbers the message in its conversation, from 1.
	Turn   int         `json:"turn"`
	Status string      `json:"status"`
	Reply  any         `json:"reply,omitempty"`
	Error  *node.Error `json:"error,omitempty"`
}

// Chat limits.
const (
	// defaultChatWait is how long a chat request waits for the reply
	// unless ?wait= says otherwise; maxChatWait bounds ?wait=.
	defaultChatWait = 30 * time.Second
	maxChatWait     = 5 * time.Minute
	// maxConversation bounds a conversation id.
	maxConversation = 255
)

// chat runs a workflow from its trigger.chat node with a message: the run
// gets trigger.message, trigger.conversation (the conversation id, also
// trigger.session, its older name) and
// trigger.history (the conversation's earlier messages and replies, from
// the store). The answer carries the run's output reply when the run ends
// within ?wait= (default 30 s), else it is 202 with the run id: follow
// the run's events, whose end event carries the outputs.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entry(r.PathValue("workflow"))
	if err != nil {
		return err
	}
	wait := defaultChatWait
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > maxChatWait {
			return problemf(http.StatusBadRequest, CodeBadRequest, "wait must be a duration from 0s to %s, like 30s", maxChatWait)
		}
		wait = d
	}
	var body ChatBody
	if err := decodeBody(w, r, &body); err != nil {
		return err
	}
	if body.Message == "" {
		return problemf(http.StatusBadRequest, CodeBadRequest, `send {"message": "…", "conversation": "…"}; message is required`)
	}
	if len(body.Conversation) > maxConversation {
		return problemf(http.StatusBadRequest, CodeBadRequest, "the conversation id is longer than %d bytes", maxConversation)
	}
	if body.Conversation == "" {
		body.Conversation = newConversationID()
	}
	node, err := chatTrigger(e, body.Trigger)
	if err != nil {
		return err
	}
	inputs, err := e.W.ResolveInputs(map[string]any{})
	if err != nil {
		return problemf(http.StatusUnprocessableEntity, CodeInvalidInputs, "workflow %s cannot answer chat messages: %v (a chat message gives no inputs; give them defaults)", e.Name, err)
	}

	// One message of a conversation at a time, so each sees the ones
	// before it in its history.
	unlock := s.keys.lock("chat\x00" + e.Name + "\x00" + body.Conversation)
	history, err := s.cfg.Runner.ChatHistory(r.Context(), e.Name, body.Conversation)
	if err != nil {
		unlock()
		return err
	}
	hist := make([]any, len(history))
	for i, m := range history {
		hist[i] = map[string]any{"role": m.Role, "content": m.Content, "execution_id": m.ExecutionID}
	}
	payload := map[string]any{"message": body.Message, "conversation": body.Conversation, "session": body.Conversation, "history": hist}
	run, err := s.launch(withSource(r.Context(), SourceChat), "run started by chat", func(ctx context.Context, o runner.Options) (*runner.Result, error) {
		return s.cfg.Runner.Start(ctx, runner.StartRequest{Workflow: e.W, Inputs: inputs, Trigger: node, Payload: payload, Options: o})
	})
	if err != nil {
		unlock()
		return err
	}
	turn, err := s.cfg.Runner.AddChatMessage(r.Context(), e.Name, body.Conversation, run.ID, body.Message)
	unlock()
	if err != nil {
		return err
	}

	w.Header().Set("Location", "/api/runs/"+run.ID)
	ans := ChatAnswer{ExecutionID: run.ID, Conversation: body.Conversation, Turn: turn, Status: "running"}
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		s.chatStream(w, r, ans, wait)
		return nil
	}
	if done := s.waitEnd(r.Context(), run.ID, wait); done != nil {
		ans.Status, ans.Reply, ans.Error = string(done.Status), s.reply(done.ID, done.Outputs), done.Error
		writeJSON(w, http.StatusOK, ans)
		return nil
	}
	writeJSON(w, http.StatusAccepted, ans)
	return nil
}

// reply is the output reply of run id as a chat answer gives it: a reply
// over 64 KiB is loaded from its blob (the run's document refers to it).
// A blob that cannot be read is logged and answered as its reference.
func (s *Server) reply(id string, outputs map[string]any) any {
	v := outputs["reply"]
	whole, err := blob.Resolve(v)
	if err != nil {
		s.log.Warn("reading the chat reply", "run", id, "err", err)
		return v
	}
	return whole
}

// chatTrigger is the trigger.chat node a message starts from: the one
// named, else the workflow's first.
func chatTrigger(e *Entry, name string) (string, error) {
	for _, n := range e.W.Nodes {
		if n.Type == trigger.Chat && !n.Disabled && (name == "" || n.ID == name) {
			return n.ID, nil
		}
	}
	if name != "" {
		return "", problemf(http.StatusBadRequest, CodeBadRequest, "workflow %s has no trigger.chat node %q", e.Name, name)
	}
	return "", problemf(http.StatusBadRequest, CodeBadRequest, "workflow %s has no trigger.chat node, so it takes no chat messages", e.Name)
}

func newConversationID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "conv_" + hex.EncodeToString(b)
}

// chatStream answers a chat message as Server-Sent Events: `run` with the
// answer so far (the run's id, the conversation, the turn), a `delta`
// ({node, text}) for each piece of a model's reply as the run's llm and
// agent nodes stream it, and `end` with the answer once the run has ended
// (or, if it has not within wait, with status running: follow the run's
// events then).
func (s *Server) chatStream(w http.ResponseWriter, r *http.Request, ans ChatAnswer, wait time.Duration) {
	ctx := r.Context()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(event string, v any) bool {
		data, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("run", ans) {
		return
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	poll := time.NewTicker(s.cfg.EventPoll)
	defer poll.Stop()
	id := ans.ExecutionID
	wake := s.hub.wait(id)
	defer func() { s.hub.forget(id, wake) }()
	var after int64
	for {
		evs, run, err := s.cfg.Runner.Events(ctx, id, after, eventBatch)
		if err != nil {
			s.log.Warn("reading events", "run", id, "err", err)
			return // the answer has begun: end the stream
		}
		for _, ev := range evs {
			after = ev.Seq
			if ev.Type == "llm_delta" && !send("delta", map[string]any{"node": ev.Node, "text": ev.Data["text"]}) {
				return // the client left
			}
		}
		switch {
		case len(evs) == eventBatch:
			continue // more may be waiting
		case !live(run.Status):
			// The run's last events commit with its final status, so
			// none can follow what was just read.
			ans.Status, ans.Reply, ans.Error = string(run.Status), s.reply(run.ID, run.Outputs), run.Error
			send("end", ans)
			return
		}
		select {
		case <-wake:
			wake = s.hub.wait(id)
		case <-poll.C:
		case <-deadline.C:
			send("end", ans)
			return
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		}
	}
}
