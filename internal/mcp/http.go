package mcp

import (
	"context"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/workflow"
)

// headerTransport adds a server's headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// httpClient returns the client for a streamable HTTP server, with its
// headers rendered in scope. Each server has its own transport, so closing
// its idle connections touches no one else's.
func httpClient(s *workflow.MCPServer, scope *expr.Scope) (*http.Client, error) {
	headers := make(map[string]string, len(s.Headers))
	for k, raw := range s.Headers {
		v, err := renderString(raw, scope)
		if err != nil {
			return nil, startError(s.Name, "template", true, "", "header %s: %v", k, err)
		}
		headers[k] = v
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	return &http.Client{Transport: &headerTransport{base: base, headers: headers}}, nil
}

// connectHTTP opens a session with a streamable HTTP server.
func connectHTTP(ctx context.Context, client *sdk.Client, s *workflow.MCPServer, hc *http.Client) (*sdk.ClientSession, error) {
	t := &sdk.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, DisableStandaloneSSE: true}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		hc.CloseIdleConnections()
		if ctx.Err() != nil {
			return nil, startError(s.Name, "handshake_timeout", false, "", "%s did not complete the MCP handshake: %v", s.URL, context.Cause(ctx))
		}
		return nil, startError(s.Name, "connect", false, "", "connecting to %s: %v", s.URL, err)
	}
	return cs, nil
}
