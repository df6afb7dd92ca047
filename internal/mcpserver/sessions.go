package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxSessions is how many HTTP sessions a server keeps at once when
// HTTPConfig.MaxSessions is 0.
const DefaultMaxSessions = 64

// sessionsRetryAfter is how long a client refused a session is told to
// wait before it tries again.
const sessionsRetryAfter = 5 * time.Second

// codeTooManySessions is the JSON-RPC error code of that refusal (the
// range -32000 to -32099 is the implementation's).
const codeTooManySessions = -32000

// sessionIDHeader names a request's session in streamable HTTP.
const sessionIDHeader = "Mcp-Session-Id"

// sessionCap keeps at most max sessions of the SDK's streamable HTTP
// handler (next) open. A new session's initialize takes a free place or
// closes the least recently used idle session, one with no request being
// answered and no call in progress; when every session is busy it is
// answered 503 Service Unavailable with Retry-After.
//
// Sessions the SDK closes on its own (idle too long, deleted by their
// client) are forgotten when the cap is reached: the SDK's list of
// sessions is the truth, this table only adds the order of use.
type sessionCap struct {
	max    int
	next   http.Handler
	mcp    *sdk.Server
	inCall func(sessionID string) bool

	mu       sync.Mutex
	sessions map[string]*sessionUse // by session ID
	opening  int                    // initializes being answered: places taken by sessions without an ID yet
	clock    uint64                 // counts requests; a session's last use is a reading of it
}

type sessionUse struct {
	posts   int    // POSTs naming the session being answered (calls, notifications)
	used    uint64 // the clock at the session's last request
	closing bool   // chosen to make room: requests naming it are answered 404
}

func (s *Server) capSessions(max int, next http.Handler) *sessionCap {
	if max <= 0 {
		max = DefaultMaxSessions
	}
	return &sessionCap{max: max, next: next, mcp: s.mcp, inCall: s.sessionCalls.busy, sessions: make(map[string]*sessionUse)}
}

func (c *sessionCap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get(sessionIDHeader); id != "" {
		leave, ok := c.use(id, r.Method == http.MethodPost)
		if !ok {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		defer leave()
		c.next.ServeHTTP(w, r)
		return
	}
	reqID, ok := peekInitialize(r)
	if !ok {
		// Not a new session: the SDK answers it (and closes the session it
		// makes for a request that is not an initialize when it ends).
		c.next.ServeHTTP(w, r)
		return
	}
	if !c.open() {
		c.refuse(w, reqID)
		return
	}
	defer func() { c.opened(w.Header().Get(sessionIDHeader)) }()
	c.next.ServeHTTP(w, r)
}

// use notes a request naming the session id and returns the function to
// call when it has been answered; false if the session is being closed to
// make room. A session the table does not know (closed, or never opened)
// is left to the SDK, which answers 404.
func (c *sessionCap) use(id string, post bool) (leave func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.sessions[id]
	if u == nil {
		return func() {}, true
	}
	if u.closing {
		return nil, false
	}
	c.clock++
	u.used = c.clock
	if !post {
		// A GET is the session's event stream, open for as long as the
		// client listens: a use, but no work in progress.
		return func() {}, true
	}
	u.posts++
	return func() {
		c.mu.Lock()
		u.posts--
		c.mu.Unlock()
	}, true
}

// open takes a place for a new session, closing the least recently used
// idle one when there is none; false if every session is busy. When it
// returns true, opened must follow.
func (c *sessionCap) open() bool {
	c.mu.Lock()
	if len(c.sessions)+c.opening >= c.max {
		c.forgetClosed()
	}
	var victim string
	if len(c.sessions)+c.opening >= c.max {
		victim = c.leastRecentlyUsedIdle()
		if victim == "" {
			c.mu.Unlock()
			return false
		}
		c.sessions[victim].closing = true
	}
	c.opening++
	c.mu.Unlock()
	if victim != "" {
		c.close(victim)
	}
	return true
}

// opened ends an initialize: the session it made, if any, is id.
func (c *sessionCap) opened(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opening--
	if id != "" {
		c.clock++
		c.sessions[id] = &sessionUse{used: c.clock}
	}
}

// forgetClosed drops the sessions the SDK no longer has. c.mu is held.
func (c *sessionCap) forgetClosed() {
	live := make(map[string]bool, len(c.sessions))
	for ss := range c.mcp.Sessions() {
		live[ss.ID()] = true
	}
	for id, u := range c.sessions {
		if !live[id] && !u.closing {
			delete(c.sessions, id)
		}
	}
}

// leastRecentlyUsedIdle is the idle session used longest ago, or "". A
// scan: the table holds at most max sessions. c.mu is held.
func (c *sessionCap) leastRecentlyUsedIdle() string {
	var victim string
	var oldest uint64
	for id, u := range c.sessions {
		if u.closing || u.posts > 0 || c.inCall(id) {
			continue
		}
		if victim == "" || u.used < oldest {
			victim, oldest = id, u.used
		}
	}
	return victim
}

// close closes the session id, ending its event stream; a request naming
// it is then answered 404 Not Found, and its client starts a new session.
func (c *sessionCap) close(id string) {
	for ss := range c.mcp.Sessions() {
		if ss.ID() == id {
			_ = ss.Close()
		}
	}
	c.mu.Lock()
	delete(c.sessions, id)
	c.mu.Unlock()
}

// refuse answers an initialize for which there is no place: 503 with
// Retry-After, and a JSON-RPC error saying what to do.
func (c *sessionCap) refuse(w http.ResponseWriter, id jsonrpc.ID) {
	wait := int(sessionsRetryAfter / time.Second)
	data, _ := json.Marshal(map[string]any{"code": "too_many_sessions", "max_sessions": c.max, "retry_after_seconds": wait})
	body, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code: codeTooManySessions,
		Message: fmt.Sprintf("skein mcp has its most sessions (%d), each with a call in progress; "+
			"retry in %d s, end a session you no longer use (DELETE with its %s), or serve more with --max-sessions", c.max, wait, sessionIDHeader),
		Data: data,
	}})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", strconv.Itoa(wait))
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(body)
}

// peekInitialize reports whether r is a POST that opens a session, an
// initialize request, and returns its ID. The body is read (up to the
// SDK's limit, which it reads anyway) and put back for the SDK.
func peekInitialize(r *http.Request) (jsonrpc.ID, bool) {
	if r.Method != http.MethodPost || r.Body == nil {
		return jsonrpc.ID{}, false
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, sdk.DefaultMaxRequestBodyBytes+1))
	r.Body = readCloser{io.MultiReader(bytes.NewReader(data), r.Body), r.Body}
	if err != nil || len(data) > sdk.DefaultMaxRequestBodyBytes {
		return jsonrpc.ID{}, false
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return jsonrpc.ID{}, false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "initialize" {
		return jsonrpc.ID{}, false
	}
	return req.ID, true
}

type readCloser struct {
	io.Reader
	io.Closer
}

// sessionCalls counts the calls in progress on each session: a session
// with one is never closed to make room.
type sessionCalls struct {
	mu sync.Mutex
	n  map[string]int // by session ID
}

// enter notes a call on the session id and returns the function to call
// when it ends.
func (c *sessionCalls) enter(id string) (leave func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = make(map[string]int)
	}
	c.n[id]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.n[id]--; c.n[id] == 0 {
			delete(c.n, id)
		}
	}
}

func (c *sessionCalls) busy(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id] > 0
}
