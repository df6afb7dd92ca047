package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
)

// TestHTTPTakesOnlyTheFolderItServes: over HTTP, the tools that take a
// workflow file refuse one outside the folder skein mcp was started in
// (a caller over the network runs and reads no other file of the
// machine's), by an absolute path and by .. (symlinks are resolved by
// confine.Resolve, tested there); over stdio, the caller being the
// machine's own user, the same file is taken.
func TestHTTPTakesOnlyTheFolderItServes(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "away.yaml")
	ok, err := os.ReadFile("testdata/ok.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(outside, ok, 0o644))
	wd, err := os.Getwd()
	require.NoError(t, err)
	up, err := filepath.Rel(wd, outside)
	require.NoError(t, err)

	call := func(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (bool, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		require.NoError(t, err)
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				text += tc.Text
			}
		}
		return res.IsError, text
	}
	for _, http := range []bool{true, false} {
		srv := New(t.Context(), Config{Runner: runner.Config{Dir: t.TempDir()}, Options: runner.Options{Concurrency: 1}, Log: io.Discard})
		t.Cleanup(srv.Close) // before its folder is removed
		cs := connect(t, srv, http)
		for _, file := range []string{outside, up} {
			for _, tool := range []string{"validate_workflow", "run_workflow"} {
				args := map[string]any{"file": file}
				if tool == "run_workflow" {
					args["inputs"] = map[string]any{"city": "Oslo"}
				}
				failed, text := call(t, cs, tool, args)
				if !http {
					require.False(t, failed, "stdio %s %s: %s", tool, file, text)
					continue
				}
				require.True(t, failed, "http %s %s: %s", tool, file, text)
				var e struct{ Code, Message string }
				require.NoError(t, json.Unmarshal([]byte(text), &e), text)
				require.Equal(t, "invalid_arguments", e.Code)
				require.Contains(t, e.Message, "is outside the working folder: this server runs and validates only the workflow files in it (skein mcp --workflows names another folder)")
				require.NotContains(t, e.Message, wd, "the server's own paths are not told")
			}
		}
		failed, text := call(t, cs, "validate_workflow", map[string]any{"file": "testdata/ok.yaml"})
		require.False(t, failed, "a file in the folder is taken: %s", text)
	}
}

// connect starts a client session with srv over HTTP or stdio.
func connect(t *testing.T, srv *Server, http bool) *sdk.ClientSession {
	t.Helper()
	var tr sdk.Transport
	if http {
		hs := httptest.NewServer(srv.Handler(HTTPConfig{}))
		t.Cleanup(hs.Close)
		tr = &sdk.StreamableClientTransport{Endpoint: hs.URL + Path}
	} else {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = srv.ServeStdio(context.Background(), inR, outW)
			outW.Close()
		}()
		t.Cleanup(func() {
			inW.Close()
			go func() { _, _ = io.Copy(io.Discard, outR) }()
			<-done
		})
		tr = &sdk.IOTransport{Reader: outR, Writer: inW}
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "skein-test", Version: "1"}, nil).Connect(t.Context(), tr, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestPlainArguments: the SDK's check of a call's arguments is said in
// the tool's terms; a failure of another form is left as it is.
func TestPlainArguments(t *testing.T) {
	t.Parallel()
	const at = `validating "arguments": validating root: `
	for msg, want := range map[string]string{
		at + `validating /properties/limit: minimum: -1/1 is less than 0.000000`:                                                   "limit must be at least 0, not -1",
		at + `validating /properties/file: type: 5 has type "integer", want "string"`:                                              "file must be a string, not an integer",
		at + `validating /properties/let_finish: type: yes has type "string", want "boolean"`:                                      "let_finish must be a boolean, not a string",
		at + `type: [1] has type "array", want "object"`:                                                                           "the arguments must be an object, not an array",
		at + `validating /properties/status: enum: nope does not equal any of: [pending running done]`:                             `status must be one of pending, running, done, not "nope"`,
		at + `unexpected additional properties ["extra"]`:                                                                          `unknown argument "extra"; the tool's input schema lists the ones it takes`,
		at + `required: missing properties: ["id"]`:                                                                                `missing required argument "id"`,
		at + `anyOf: did not validate against any`:                                                                                 at + `anyOf: did not validate against any`,
		`validating "arguments": unmarshaling arguments: json: cannot unmarshal "3" into Go value of type map[string]interface {}`: "the arguments must be an object: a map of the argument names to their values",
		"something else": "something else",
	} {
		require.Equal(t, want, plainArguments(msg), msg)
	}
}
