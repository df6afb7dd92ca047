// Package mcptest runs an MCP server inside a test process, reachable over
// streamable HTTP on loopback, so tests of MCP clients need neither Node.js
// nor a network.
package mcptest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is an in-process MCP server. Add tools before or while clients
// use it.
type Server struct {
	// MCP is the SDK server, for what Server does not wrap.
	MCP *sdk.Server
	// URL is the endpoint to give a client (mcp_servers: {url: …}).
	URL string

	mu      sync.Mutex
	headers http.Header // of the last request
	handler http.Handler
}

// Handler answers a tool call with the arguments decoded from JSON.
type Handler func(ctx context.Context, args map[string]any) (*sdk.CallToolResult, error)

// New starts a server; the test's cleanup stops it.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{MCP: sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, nil)}
	s.handler = s.newHandler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.headers = r.Header.Clone()
		h := s.handler
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		// A session the client did not end (its cancel or close lost
		// with the test) keeps a goroutine reading for it until the
		// server closes it.
		s.closeSessions()
		hs.Close()
	})
	s.URL = hs.URL
	return s
}

func (s *Server) newHandler() http.Handler {
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.MCP }, nil)
}

// ForgetSessions drops every session, as a server that restarted does:
// a request in an old session is answered 404 Not Found.
func (s *Server) ForgetSessions() {
	s.mu.Lock()
	s.handler = s.newHandler()
	s.mu.Unlock()
	s.closeSessions()
}

func (s *Server) closeSessions() {
	for ss := range s.MCP.Sessions() {
		_ = ss.Close()
	}
}

// AddTool adds (or replaces) a tool with the given input schema; nil means
// any object. Its description is "test tool <name>".
func (s *Server) AddTool(name string, schema map[string]any, h Handler) {
	s.AddDescribedTool(name, "test tool "+name, schema, h)
}

// AddDescribedTool adds (or replaces) a tool with the given description
// and input schema; nil means any object.
func (s *Server) AddDescribedTool(name, description string, schema map[string]any, h Handler) {
	if schema == nil {
		schema = map[string]any{"type": "object"}
	}
	s.MCP.AddTool(&sdk.Tool{Name: name, Description: description, InputSchema: schema},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			args := map[string]any{}
			if len(req.Params.Arguments) > 0 {
				if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
					return nil, err
				}
			}
			return h(ctx, args)
		})
}

// Header returns a header of the last request the server received.
func (s *Server) Header(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers.Get(key)
}

// Text is a result with one text part.
func Text(text string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}
