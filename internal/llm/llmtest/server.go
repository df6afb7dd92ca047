package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/skeinhq/skein/internal/llm"
)

// Flavor is the API a fake server speaks.
type Flavor string

// Flavors.
const (
	OpenAI    Flavor = "openai"    // POST /v1/chat/completions
	Anthropic Flavor = "anthropic" // POST /v1/messages
)

// Turn is one scripted answer: a reply (Text, ToolCalls, Usage) or a
// failure (Status, Malformed, Hang). Replies are streamed when the request
// asks for a stream.
type Turn struct {
	Text      string
	ToolCalls []llm.ToolCall
	Usage     llm.Usage
	// StopReason is the wire value (finish_reason or stop_reason); empty:
	// the natural one for the reply (stop/end_turn, tool_calls/tool_use).
	StopReason string
	// Model answers for the request's model when set.
	Model string

	// Status, when not 0, answers with this HTTP status and an error body
	// in the flavor's format.
	Status int
	// RetryAfter is sent as the Retry-After header.
	RetryAfter string
	// Body replaces the generated body (of an error or a reply).
	Body string
	// Malformed answers 200 with a body that is not JSON, or, when
	// streaming, with a chunk that is not.
	Malformed bool
	// Hang never answers: the handler waits for the client to give up.
	Hang bool
	// IgnoreStream answers a request that asks for a stream as if it had
	// not: one JSON body (Content-Type application/json) holding the whole
	// reply, as some OpenAI-compatible servers do.
	IgnoreStream bool
	// Hold pauses a streamed reply right after its first piece of text
	// until Hold is closed (or the client gives up), so a test can see
	// that piece arrive while the reply is still open.
	Hold <-chan struct{}
}

// Script is the turns a server plays, one per request, in order. A request
// past the end gets a 400 saying so.
type Script []Turn

// Reply is a turn answering text.
func Reply(text string) Turn { return Turn{Text: text} }

// CallTools is a turn asking for tool calls.
func CallTools(calls ...llm.ToolCall) Turn { return Turn{ToolCalls: calls} }

// Fail is a turn answering an HTTP error status.
func Fail(status int) Turn { return Turn{Status: status} }

// RateLimited is a 429 turn with a Retry-After header.
func RateLimited(retryAfter string) Turn {
	return Turn{Status: http.StatusTooManyRequests, RetryAfter: retryAfter}
}

// Request is a request the server received, decoded. Messages, Tools and
// Schema are read back from the flavor's wire format into llm types, so
// tests can assert what was sent whichever the API.
type Request struct {
	Path   string
	Header http.Header
	Raw    []byte
	// Body is the JSON body decoded into plain values.
	Body        map[string]any
	Model       string
	Stream      bool
	Temperature *float64
	MaxTokens   int
	// IncludeUsage is OpenAI's stream_options.include_usage.
	IncludeUsage bool
	Messages     []llm.Message
	Tools        []llm.Tool
	// Schema is the JSON schema the reply must match: OpenAI's
	// response_format json_schema; for Anthropic output_config.format, or
	// the input schema of the tool tool_choice forces.
	Schema map[string]any
	// DecodeErr is set when the body could not be read back; such a
	// request is answered 400.
	DecodeErr error
}

// Server is a scripted fake of one API on 127.0.0.1.
type Server struct {
	flavor Flavor
	srv    *httptest.Server

	// respond, when set, answers every request instead of a script
	// (NewResponder).
	respond func(*Request) Turn

	mu       sync.Mutex
	script   Script
	next     int
	requests []*Request
}

// NewServer starts a fake server playing script; it stops when the test
// ends.
func NewServer(t testing.TB, flavor Flavor, script Script) *Server {
	t.Helper()
	if flavor != OpenAI && flavor != Anthropic {
		t.Fatalf("llmtest: unknown flavor %q", flavor)
	}
	s := &Server{flavor: flavor, script: append(Script(nil), script...)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// NewResponder starts a fake server that answers each request with the
// turn respond returns for it, in any order and from any number of
// clients: for tests whose requests come from many runs at once. It stops
// when the test ends.
func NewResponder(t testing.TB, flavor Flavor, respond func(*Request) Turn) *Server {
	t.Helper()
	s := NewServer(t, flavor, nil)
	s.respond = respond
	return s
}

// URL is the server's root.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server before the test ends: its port is closed, as a
// model that went away (a replay must not need it).
func (s *Server) Close() { s.srv.Close() }

// BaseURL is what a provider's base_url should be: the root plus /v1 for
// OpenAI (as for any OpenAI-compatible server), the root for Anthropic.
func (s *Server) BaseURL() string {
	if s.flavor == OpenAI {
		return s.srv.URL + "/v1"
	}
	return s.srv.URL
}

// Push appends turns to the script.
func (s *Server) Push(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, turns...)
}

// Calls is how many requests the server has received.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// Last returns the last request received, or nil.
func (s *Server) Last() *Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return nil
	}
	return s.requests[len(s.requests)-1]
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	rec := &Request{Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	if err == nil {
		err = json.Unmarshal(raw, &rec.Body)
	}
	if err == nil {
		switch s.flavor {
		case OpenAI:
			err = decodeOpenAI(rec)
		case Anthropic:
			err = decodeAnthropic(rec)
		}
	}
	rec.DecodeErr = err

	s.mu.Lock()
	s.requests = append(s.requests, rec)
	var turn Turn
	scripted := s.next < len(s.script) || s.respond != nil
	if s.respond != nil {
		if rec.DecodeErr == nil {
			turn = s.respond(rec)
		}
	} else if scripted {
		turn = s.script[s.next]
		s.next++
	}
	played := s.next
	s.mu.Unlock()

	wantPath := "/v1/chat/completions"
	if s.flavor == Anthropic {
		wantPath = "/v1/messages"
	}
	switch {
	case r.Method != http.MethodPost || r.URL.Path != wantPath:
		s.writeError(w, http.StatusNotFound, fmt.Sprintf("llmtest: no route %s %s (want POST %s)", r.Method, r.URL.Path, wantPath))
		return
	case rec.DecodeErr != nil:
		s.writeError(w, http.StatusBadRequest, "llmtest: cannot read the request: "+rec.DecodeErr.Error())
		return
	case !scripted:
		s.writeError(w, http.StatusBadRequest, fmt.Sprintf("llmtest: script exhausted after %d turns", played))
		return
	}
	s.play(w, r, rec, turn)
}

func (s *Server) play(w http.ResponseWriter, r *http.Request, req *Request, turn Turn) {
	if turn.Hang {
		<-r.Context().Done()
		return
	}
	if turn.RetryAfter != "" {
		w.Header().Set("Retry-After", turn.RetryAfter)
	}
	if turn.Status != 0 {
		if turn.Body != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(turn.Status)
			io.WriteString(w, turn.Body)
			return
		}
		s.writeError(w, turn.Status, fmt.Sprintf("llmtest: scripted %d", turn.Status))
		return
	}
	if turn.Model == "" {
		turn.Model = req.Model
	}
	if turn.Usage.TotalTokens == 0 {
		turn.Usage.TotalTokens = turn.Usage.InputTokens + turn.Usage.OutputTokens
	}
	if req.Stream && !turn.IgnoreStream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		sse := &sseWriter{w: w, hold: turn.Hold, done: r.Context().Done()}
		switch s.flavor {
		case OpenAI:
			streamOpenAI(sse, req, turn)
		case Anthropic:
			streamAnthropic(sse, req, turn)
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case turn.Malformed:
		io.WriteString(w, `{"id": "broken", "choices": [`)
	case turn.Body != "":
		io.WriteString(w, turn.Body)
	case s.flavor == OpenAI:
		writeJSON(w, replyOpenAI(turn))
	default:
		writeJSON(w, replyAnthropic(req, turn))
	}
}

func (s *Server) writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if s.flavor == OpenAI {
		writeJSON(w, errorOpenAI(status, msg))
		return
	}
	writeJSON(w, errorAnthropic(status, msg))
}

func writeJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the fake's own values always marshal
	}
	w.Write(b)
}

// sseWriter writes server-sent events, flushing each.
type sseWriter struct {
	w    http.ResponseWriter
	hold <-chan struct{} // Turn.Hold
	done <-chan struct{} // the request's end
}

// pause waits for the turn's Hold to be closed, if it has one.
func (s *sseWriter) pause() {
	if s.hold == nil {
		return
	}
	select {
	case <-s.hold:
	case <-s.done:
	}
}

func (s *sseWriter) event(name string, data any) {
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	switch d := data.(type) {
	case string:
		fmt.Fprintf(s.w, "data: %s\n\n", d)
	default:
		b, err := json.Marshal(d)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(s.w, "data: %s\n\n", b)
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// pieces splits s into chunks of about n bytes (on rune boundaries), at
// least one.
func pieces(s string, n int) []string {
	if s == "" {
		return nil
	}
	var out []string
	runes := []rune(s)
	for len(runes) > 0 {
		k := min(n, len(runes))
		out = append(out, string(runes[:k]))
		runes = runes[k:]
	}
	return out
}
