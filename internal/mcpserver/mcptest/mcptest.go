// Package mcptest connects tests to Skein's MCP server over Streamable
// HTTP with the official SDK's client: the tests of the server itself and
// those of `skein mcp` share it.
package mcptest

import (
	"context"
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// Connect opens a client session on the server at url, with the bearer
// token when it is not empty; the session closes when the test ends.
func Connect(t *testing.T, url, token string) *sdk.ClientSession {
	t.Helper()
	cs, err := Dial(url, token)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// Dial opens a client session on the server at url, with the bearer token
// when it is not empty; the caller closes it.
func Dial(url, token string) (*sdk.ClientSession, error) {
	hc := &http.Client{}
	if token != "" {
		hc.Transport = bearer{token}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "skein-test", Version: "1"}, nil)
	return client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
}

// CallTool calls the tool name with args; a failed call (not a tool
// error, which the result holds) fails the test.
func CallTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	return res
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
