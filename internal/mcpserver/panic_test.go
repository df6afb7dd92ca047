package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
)

// TestMCPHandlerPanics serves Skein's MCP server with one more tool whose
// handler panics, over stdio and HTTP: the call is answered with an
// internal error, the stack is logged, and the server keeps answering.
func TestMCPHandlerPanics(t *testing.T) {
	t.Parallel()
	transports := []struct {
		name  string
		serve func(t *testing.T, srv *Server) sdk.Transport
	}{
		{"stdio", func(t *testing.T, srv *Server) sdk.Transport {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- srv.ServeStdio(context.Background(), inR, outW)
				outW.Close()
			}()
			t.Cleanup(func() {
				inW.Close()
				select {
				case err := <-done:
					require.NoError(t, err)
				case <-time.After(60 * time.Second):
					t.Error("the server did not stop when its stdin ended")
				}
			})
			return &sdk.IOTransport{Reader: outR, Writer: inW}
		}},
		{"http", func(t *testing.T, srv *Server) sdk.Transport {
			hs := httptest.NewServer(srv.Handler(HTTPConfig{}))
			t.Cleanup(hs.Close)
			return &sdk.StreamableClientTransport{Endpoint: hs.URL + Path}
		}},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var log syncBuffer
			srv := New(ctx, Config{Runner: runner.Config{Dir: t.TempDir()}, Options: runner.Options{Concurrency: 1}, Log: &log})
			AddTool(srv.MCP(), &sdk.Tool{Name: "explode", Description: "panics"}, func(context.Context, struct{}) (struct{}, *node.Error) {
				panic("boom")
			})
			client := sdk.NewClient(&sdk.Implementation{Name: "skein-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, tr.serve(t, srv), nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = cs.Close() })

			for range 2 {
				_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "explode", Arguments: map[string]any{}})
				var werr *jsonrpc.Error
				require.True(t, errors.As(err, &werr), "want a JSON-RPC error, got %v", err)
				require.Equal(t, int64(jsonrpc.CodeInternalError), werr.Code)
				require.Contains(t, werr.Message, "boom")

				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "validate_workflow", Arguments: map[string]any{"file": "testdata/ok.yaml"}})
				require.NoError(t, err, "the server still answers")
				require.False(t, res.IsError)
			}
			require.Contains(t, log.String(), "answering tools/call: panic: boom")
			require.Contains(t, log.String(), "panic_test.go", "the log has the stack")
		})
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
