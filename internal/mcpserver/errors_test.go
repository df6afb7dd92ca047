package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/mcpserver"
)

// mcpTransport reaches the MCP server served over one transport.
type mcpTransport struct {
	name string
	// connect returns an initialised SDK client session.
	connect func(t *testing.T) *sdk.ClientSession
	// raw returns an initialised session that sends JSON-RPC as written,
	// for what the SDK client will not send.
	raw func(t *testing.T) *rawSession
}

// mcpTransports serves the MCP server over stdio (one server per client, as
// a client would start it) and over streamable HTTP (one server for the
// test), each with a temporary folder.
func mcpTransports(t *testing.T) []mcpTransport {
	t.Helper()
	url, _ := serveMCP(t, t.TempDir(), mcpserver.HTTPConfig{})
	return []mcpTransport{
		{
			name: "stdio",
			connect: func(t *testing.T) *sdk.ClientSession {
				t.Helper()
				r, w := serveMCPStdio(t)
				client := sdk.NewClient(&sdk.Implementation{Name: "skein-test", Version: "1"}, nil)
				cs, err := client.Connect(context.Background(), &sdk.IOTransport{Reader: r, Writer: w}, nil)
				require.NoError(t, err)
				t.Cleanup(func() { _ = cs.Close() })
				return cs
			},
			raw: func(t *testing.T) *rawSession {
				t.Helper()
				r, w := serveMCPStdio(t)
				rs := &rawSession{stdin: w, stdout: bufio.NewReader(r)}
				rs.initialize(t)
				return rs
			},
		},
		{
			name:    "http",
			connect: func(t *testing.T) *sdk.ClientSession { return connectMCP(t, url, "") },
			raw: func(t *testing.T) *rawSession {
				rs := &rawSession{url: url}
				rs.initialize(t)
				return rs
			},
		},
	}
}

// serveMCPStdio serves the MCP server on pipes, with a temporary folder,
// until the test ends, when its stdin is closed and it must return
// without an error. It returns the server's stdout and stdin.
func serveMCPStdio(t *testing.T) (stdout io.ReadCloser, stdin io.WriteCloser) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	srv := mcpserver.New(ctx, config(t.TempDir()))
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStdio(ctx, inR, outW)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		select {
		case err := <-done:
			require.NoError(t, err, "the server ends without an error when its stdin ends")
		case <-time.After(60 * time.Second):
			t.Errorf("the server did not end after its stdin ended")
		}
		cancel()
		srv.Close()
	})
	return outR, inW
}

// rawSession speaks JSON-RPC to the MCP server as written: over stdio (stdin,
// stdout) or streamable HTTP (url).
type rawSession struct {
	stdin  io.Writer
	stdout *bufio.Reader

	url, sessionID string

	nextID int
}

// rawReply is the answer to one request.
type rawReply struct {
	HTTPStatus int // 0 over stdio
	Body       string
	Result     json.RawMessage `json:"result"`
	Error      *jsonrpc.Error  `json:"error"`
}

func (rs *rawSession) initialize(t testing.TB) {
	t.Helper()
	rep := rs.call(t, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	if rs.url != "" {
		require.Equal(t, http.StatusOK, rep.HTTPStatus, rep.Body)
	}
	require.Nil(t, rep.Error, rep.Body)
	rs.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// call sends a request with method and params (JSON, or "" for none) and
// returns its answer.
func (rs *rawSession) call(t testing.TB, method, params string) rawReply {
	t.Helper()
	rs.nextID++
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q`, rs.nextID, method)
	if params != "" {
		msg += `,"params":` + params
	}
	msg += "}"
	resp, body := rs.send(t, msg)
	rep := rawReply{Body: body}
	if resp != nil {
		rep.HTTPStatus = resp.StatusCode
		if resp.StatusCode != http.StatusOK {
			return rep
		}
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			rs.sessionID = id
		}
	}
	// The answer is the message with our id; skip notifications.
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "data: ")
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && string(m.ID) == fmt.Sprint(rs.nextID) {
			require.NoError(t, json.Unmarshal([]byte(line), &rep), line)
			rep.Body = line
			return rep
		}
	}
	t.Fatalf("no answer to %s in %q", msg, body)
	return rep
}

// send writes one message. Over HTTP it returns the response and its
// body; over stdio, for a request, the line that answers it.
func (rs *rawSession) send(t testing.TB, msg string) (*http.Response, string) {
	t.Helper()
	if rs.url == "" {
		_, err := io.WriteString(rs.stdin, msg+"\n")
		require.NoError(t, err)
		if !strings.Contains(msg, `"id"`) {
			return nil, ""
		}
		for {
			line, err := rs.stdout.ReadString('\n')
			require.NoError(t, err, "the server answers %s", msg)
			if strings.Contains(line, fmt.Sprintf(`"id":%d,`, rs.nextID)) {
				return nil, line
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rs.url, strings.NewReader(msg))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if rs.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", rs.sessionID)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// rpcCode is the JSON-RPC error code err carries, or 0.
func rpcCode(err error) int64 {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return werr.Code
	}
	return 0
}

// mcpToolArgs are valid arguments of each tool, and how each parameter
// can be given a value of the wrong JSON type.
var mcpToolArgs = []struct {
	tool     string
	valid    map[string]any
	required []string
	wrong    map[string][]any // parameter → values of a wrong type
}{
	{
		tool:  "validate_workflow",
		valid: map[string]any{"file": "testdata/ok.yaml"},
		wrong: map[string][]any{"file": notString, "yaml": notString},
	},
	{
		tool:     "run_workflow",
		valid:    map[string]any{"file": "testdata/ok.yaml", "inputs": map[string]any{"city": "Paris"}},
		required: []string{"file"},
		wrong:    map[string][]any{"file": notString, "inputs": {"Paris", 3, []any{"Paris"}}, "trigger": notString},
	},
	{
		tool:  "list_runs",
		valid: map[string]any{"limit": 5},
		wrong: map[string][]any{"workflow": notString, "status": append([]any{"done"}, notString...), "limit": {"ten", 1.5, true, -1}},
	},
	{
		tool:     "get_run",
		valid:    map[string]any{"id": "nosuchrun"},
		required: []string{"id"},
		wrong:    map[string][]any{"id": notString},
	},
	{
		tool:     "resume_run",
		valid:    map[string]any{"id": "nosuchrun"},
		required: []string{"id"},
		wrong:    map[string][]any{"id": notString, "workflow": notString},
	},
	{
		tool:     "cancel_run",
		valid:    map[string]any{"id": "nosuchrun"},
		required: []string{"id"},
		wrong:    map[string][]any{"id": notString},
	},
}

// notString are JSON values that are not strings.
var notString = []any{3, true, []any{"a"}, map[string]any{"a": "b"}, nil}

// TestMCPBadCalls calls every tool the wrong way over stdio and HTTP:
// each call is answered with an error, and the server answers the next
// call.
func TestMCPBadCalls(t *testing.T) {
	t.Parallel()
	for _, tr := range mcpTransports(t) {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			cs := tr.connect(t)
			alive := func(t *testing.T) {
				t.Helper()
				out := toolResult[map[string]any](t, callTool(t, cs, "validate_workflow", map[string]any{"file": "testdata/ok.yaml"}))
				require.Equal(t, true, out["valid"], "the server still answers")
			}

			for _, tc := range mcpToolArgs {
				t.Run(tc.tool, func(t *testing.T) {
					// The calls share one session, in order.
					for _, name := range []string{tc.tool + "_x", strings.ToUpper(tc.tool), " " + tc.tool, "", "skein." + tc.tool} {
						_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: tc.valid})
						require.Error(t, err, "tool name %q", name)
						require.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcCode(err), "tool name %q: %v", name, err)
						alive(t)
					}

					badArgs := func(what string, args any, mention string) {
						t.Helper()
						res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tc.tool, Arguments: args})
						require.NoError(t, err, what)
						terr := toolError(t, res)
						require.Equal(t, "invalid_arguments", terr.Code, "%s: %s", what, terr.Message)
						require.Equal(t, "validation", terr.Category, what)
						require.Contains(t, terr.Message, mention, what)
						require.NotContains(t, terr.Message, "validating", "%s: said in the tool's terms, not its schema checker's", what)
						alive(t)
					}
					for param, values := range tc.wrong {
						for _, v := range values {
							args := clone(tc.valid)
							args[param] = v
							badArgs(fmt.Sprintf("%s=%s", param, mustJSON(t, v)), args, param)
						}
					}
					for _, param := range tc.required {
						args := clone(tc.valid)
						delete(args, param)
						badArgs("without "+param, args, param)
					}
					badArgs("an unknown parameter", with(tc.valid, "nosuch", 1), "nosuch")
					for _, args := range []any{3, "file", []any{tc.valid}} {
						badArgs("arguments "+mustJSON(t, args), args, "arguments")
					}
				})
			}

			t.Run("validate_workflow without file or yaml", func(t *testing.T) {
				res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "validate_workflow", Arguments: map[string]any{}})
				require.NoError(t, err)
				terr := toolError(t, res)
				require.Equal(t, "invalid_arguments", terr.Code)
				require.Contains(t, terr.Message, "either file or yaml")
				alive(t)
			})
		})
	}
}

// TestMCPMalformedCalls sends tools/call requests the SDK client would not
// send: each gets a JSON-RPC error (or, over HTTP, a request without
// params a 400), and the server answers the next call.
func TestMCPMalformedCalls(t *testing.T) {
	t.Parallel()
	for _, tr := range mcpTransports(t) {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			rs := tr.raw(t)
			alive := func(t *testing.T) {
				t.Helper()
				rep := rs.call(t, "tools/call", `{"name":"validate_workflow","arguments":{"file":"testdata/ok.yaml"}}`)
				require.Nil(t, rep.Error, rep.Body)
				var res struct {
					IsError           bool           `json:"isError"`
					StructuredContent map[string]any `json:"structuredContent"`
				}
				require.NoError(t, json.Unmarshal(rep.Result, &res), rep.Body)
				require.False(t, res.IsError, rep.Body)
				require.Equal(t, true, res.StructuredContent["valid"], "the server still answers: %s", rep.Body)
			}

			for _, tc := range mcpToolArgs {
				args := mustJSON(t, tc.valid)
				for _, params := range []string{
					`{"arguments":` + args + `}`,
					`{"name":"","arguments":` + args + `}`,
					`{"name":null,"arguments":` + args + `}`,
					`{"name":3,"arguments":` + args + `}`,
					`{"name":["` + tc.tool + `"],"arguments":` + args + `}`,
					`{"tool":"` + tc.tool + `","arguments":` + args + `}`,
				} {
					rep := rs.call(t, "tools/call", params)
					require.NotNil(t, rep.Error, "params %s: want an error, got %s", params, rep.Body)
					require.Equal(t, int64(jsonrpc.CodeInvalidParams), rep.Error.Code, "params %s: %s", params, rep.Body)
					alive(t)
				}
			}

			for _, params := range []string{`[]`, `"validate_workflow"`, `3`} {
				rep := rs.call(t, "tools/call", params)
				require.NotNil(t, rep.Error, "params %s: want an error, got %s", params, rep.Body)
				require.Equal(t, int64(jsonrpc.CodeInvalidParams), rep.Error.Code, "params %s: %s", params, rep.Body)
				alive(t)
			}

			// Without params the SDK rejects the request before Skein sees
			// it: over stdio as an invalid request, over HTTP with a 400.
			for _, params := range []string{"", "null"} {
				rep := rs.call(t, "tools/call", params)
				if rep.HTTPStatus == http.StatusBadRequest {
					require.Contains(t, rep.Body, "params")
				} else {
					require.NotNil(t, rep.Error, "params %q: want an error, got %s", params, rep.Body)
					require.Equal(t, int64(jsonrpc.CodeInvalidRequest), rep.Error.Code, "params %q: %s", params, rep.Body)
				}
				alive(t)
			}
		})
	}
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func with(m map[string]any, k string, v any) map[string]any {
	out := clone(m)
	out[k] = v
	return out
}

// TestMCPErrorsNamePathsOverHTTPOnly: a tool error over HTTP names no path
// of the machine's outside the working folder (a remote caller learns
// nothing of its layout), and a path in it relative to it; over stdio the
// caller is the machine's user and is told the whole path.
func TestMCPErrorsNamePathsOverHTTPOnly(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "private", "missing.yaml")
	wd, err := os.Getwd()
	require.NoError(t, err)
	inside := filepath.Join(wd, "testdata", "missing-here.yaml")
	for _, tr := range mcpTransports(t) {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			cs := tr.connect(t)
			call := func(file string) string {
				res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_workflow", Arguments: map[string]any{"file": file}})
				require.NoError(t, err)
				terr := toolError(t, res)
				require.Equal(t, "invalid_workflow", terr.Code, terr.Message)
				return terr.Message
			}
			out, in := call(outside), call(inside)
			if tr.name == "stdio" {
				require.Contains(t, out, outside)
				require.Contains(t, in, inside)
				return
			}
			require.NotContains(t, out, filepath.Dir(outside))
			require.Contains(t, out, "…"+string(filepath.Separator)+"missing.yaml")
			require.NotContains(t, in, wd)
			require.Contains(t, in, filepath.Join("testdata", "missing-here.yaml"))
		})
	}
}

// TestMCPAnswersNamePathsOverHTTPOnly: over HTTP, what succeeds names no
// path of the server's either — a diagnostic's file and message, a run's
// file and folder; over stdio they are the machine's own paths.
func TestMCPAnswersNamePathsOverHTTPOnly(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	require.NoError(t, err)
	for _, tr := range mcpTransports(t) {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			cs := tr.connect(t)
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "validate_workflow", Arguments: map[string]any{"file": "nope/x.yaml"}})
			require.NoError(t, err)
			validated, err := json.Marshal(res.StructuredContent)
			require.NoError(t, err)
			res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_workflow",
				Arguments: map[string]any{"file": "testdata/ok.yaml", "inputs": map[string]any{"city": "Oslo"}}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%v", res.Content)
			var doc struct{ File, Dir string }
			raw, err := json.Marshal(res.StructuredContent)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &doc))
			// A big output's reference names its file.
			res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_workflow", Arguments: map[string]any{"file": "testdata/bigout.yaml"}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%v", res.Content)
			var big struct {
				Steps []struct {
					Output struct {
						Stdout map[string]map[string]any `json:"stdout"`
					} `json:"output"`
				} `json:"steps"`
			}
			raw, err = json.Marshal(res.StructuredContent)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &big))
			require.Len(t, big.Steps, 1)
			blobPath, _ := big.Steps[0].Output.Stdout["$skein.blob"]["path"].(string)
			require.NotEmpty(t, blobPath, "%s", raw)
			if tr.name == "stdio" {
				require.Contains(t, string(validated), wd)
				require.Equal(t, filepath.Join(wd, "testdata", "ok.yaml"), doc.File)
				require.True(t, filepath.IsAbs(blobPath), blobPath)
				return
			}
			require.NotContains(t, string(validated), wd)
			require.Contains(t, string(validated), "the working folder")
			require.Equal(t, filepath.Join("testdata", "ok.yaml"), doc.File)
			require.False(t, filepath.IsAbs(doc.Dir), doc.Dir)
			require.False(t, filepath.IsAbs(blobPath), "a big value's file is named relative to the data folder: %s", blobPath)
			require.True(t, strings.HasPrefix(blobPath, "runs/bigout/"), blobPath)
		})
	}
}
