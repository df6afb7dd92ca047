package mcp_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/engine"
	mcpclient "github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/internal/mcp/mcptest"
	mcpkind "github.com/skeinhq/skein/internal/nodes/mcp"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/node/nodetest"
	"github.com/skeinhq/skein/workflow"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// bundle is an in-process MCP server and a pool connected to it.
type bundle struct {
	srv  *mcptest.Server
	pool *mcpclient.Pool
	dir  string // the node's artifact folder
}

func setup(t *testing.T) *bundle {
	t.Helper()
	srv := mcptest.New(t)
	pool := mcpclient.NewPool([]*workflow.MCPServer{{Name: "test", URL: srv.URL}}, nil)
	t.Cleanup(func() { require.NoError(t, pool.Close()) })
	return &bundle{srv: srv, pool: pool, dir: t.TempDir()}
}

type event struct {
	kind string
	data map[string]any
}

type result struct {
	out    map[string]any
	err    *node.Error
	events []event
}

// run runs the kind once on the bundle's server.
func (b *bundle) run(t *testing.T, tool string, args any, attempt int) result {
	t.Helper()
	var mu sync.Mutex
	var r result
	params := map[string]any{"server": "test", "tool": tool}
	if args != nil {
		params["arguments"] = args
	}
	call := &node.Call{
		RunID: "r", NodeID: "n", Visit: 1, Attempt: attempt, IdempotencyKey: "r/n/1", Params: params,
		Emit: func(kind string, data map[string]any) {
			mu.Lock()
			defer mu.Unlock()
			r.events = append(r.events, event{kind, data})
		},
		Redact:      engine.Redactor(map[string]string{"KEY": "hunter22"}),
		ArtifactDir: b.dir,
		Eval:        func(string) (any, error) { return nil, nil },
		Now:         time.Now,
		Services:    mcpclient.Service.Provide(nil, b.pool),
	}
	out, err := (&mcpkind.MCP{}).Run(context.Background(), call)
	r.out, r.err = out, node.AsError(err)
	return r
}

func (r result) event(t *testing.T, kind string) map[string]any {
	t.Helper()
	for _, ev := range r.events {
		if ev.kind == kind {
			return ev.data
		}
	}
	t.Fatalf("no %s event in %v", kind, r.events)
	return nil
}

func returns(res *sdk.CallToolResult) mcptest.Handler {
	return func(context.Context, map[string]any) (*sdk.CallToolResult, error) { return res, nil }
}

func TestOutput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		res  *sdk.CallToolResult
		want map[string]any
	}{
		{"plain text", mcptest.Text("hello"), map[string]any{"text": "hello"}},
		{"empty", &sdk.CallToolResult{}, map[string]any{"text": ""}},
		{"JSON object", mcptest.Text(`{"a": 1, "b": [true, 2.5], "c": {"d": null}}`),
			map[string]any{"a": 1, "b": []any{true, 2.5}, "c": map[string]any{"d": nil}}},
		{"directives stay at the top", mcptest.Text(`{"_route": "b", "_state_patch": {"x": 1}, "n": 2}`),
			map[string]any{"_route": "b", "_state_patch": map[string]any{"x": 1}, "n": 2}},
		{"JSON array", mcptest.Text(`[{"id": 7, "_secret": 1}, {"id": 8}]`),
			map[string]any{"items": []any{map[string]any{"id": 7, "_secret": 1}, map[string]any{"id": 8}}, "found": true, "count": 2, "id": 7}},
		{"empty array", mcptest.Text(`[]`), map[string]any{"items": []any{}, "found": false, "count": 0}},
		{"JSON scalar", mcptest.Text(`42`), map[string]any{"value": 42}},
		{"text parts are joined", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "one"}, &sdk.TextContent{Text: "two"}}},
			map[string]any{"text": "one\ntwo"}},
		{"structured content wins", &sdk.CallToolResult{
			Content:           []sdk.Content{&sdk.TextContent{Text: "It is 21 degrees"}},
			StructuredContent: map[string]any{"temperature": 21, "unit": "C", "_route": "warm"},
		}, map[string]any{"temperature": 21, "unit": "C", "_route": "warm"}},
		{"text resource", &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://a", MIMEType: "text/plain", Text: "inline"}},
		}}, map[string]any{"text": "", "resources": []any{map[string]any{"uri": "mem://a", "mime": "text/plain", "text": "inline"}}}},
	}
	b := setup(t)
	for i, tc := range cases {
		name := "tool" + string(rune('a'+i))
		b.srv.AddTool(name, nil, returns(tc.res))
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := b.run(t, "tool"+string(rune('a'+i)), nil, 1)
			require.Nil(t, r.err)
			require.Equal(t, tc.want, r.out)
		})
	}
}

func TestToolError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.AddTool("broken", nil, returns(&sdk.CallToolResult{IsError: true,
		Content: []sdk.Content{&sdk.TextContent{Text: "disk full\nwhile writing /x"}}}))
	r := b.run(t, "broken", nil, 1)
	require.NotNil(t, r.err)
	require.Equal(t, mcpclient.CategoryToolError, r.err.Category)
	require.Equal(t, "mcp_error", r.err.Code)
	require.Equal(t, `tool "broken" of MCP server "test" failed: disk full`+"\n"+`while writing /x`, r.err.Message)
	require.Equal(t, "disk full\nwhile writing /x", r.err.Details["text"])
	ev := r.event(t, "tool_result")
	require.Equal(t, true, ev["is_error"])
	require.Equal(t, "disk full\nwhile writing /x", ev["text"])
}

// Images, audio and binary resources become files under the artifact
// folder; a later call never overwrites them.
func TestArtifacts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	png := []byte("\x89PNG\r\n\x1a\nfake")
	b.srv.AddTool("shoot/screen", nil, returns(&sdk.CallToolResult{Content: []sdk.Content{
		&sdk.TextContent{Text: "two shots"},
		&sdk.ImageContent{Data: png, MIMEType: "image/png"},
		&sdk.ImageContent{Data: []byte("jpeg"), MIMEType: "image/jpeg"},
		&sdk.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"},
		&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://r.bin", MIMEType: "application/x-skein-test", Blob: []byte{1, 2, 3}}},
	}}))

	r := b.run(t, "shoot/screen", nil, 1)
	require.Nil(t, r.err)
	path := func(n int, ext string) string {
		return filepath.Join(b.dir, "shoot_screen-"+string(rune('0'+n))+"."+ext)
	}
	require.Equal(t, []any{
		map[string]any{"path": path(1, "png"), "mime": "image/png"},
		map[string]any{"path": path(2, "jpg"), "mime": "image/jpeg"},
	}, r.out["images"])
	require.Equal(t, []any{map[string]any{"path": path(3, "wav"), "mime": "audio/wav"}}, r.out["audio"])
	require.Equal(t, []any{map[string]any{"path": path(4, "bin"), "mime": "application/x-skein-test", "uri": "mem://r.bin"}}, r.out["resources"])
	require.Equal(t, "two shots", r.out["text"])
	data, err := os.ReadFile(path(1, "png"))
	require.NoError(t, err)
	require.Equal(t, png, data)
	require.Equal(t, 2, r.event(t, "tool_result")["images"])

	again := b.run(t, "shoot/screen", nil, 1)
	require.Nil(t, again.err)
	require.Equal(t, path(5, "png"), again.out["images"].([]any)[0].(map[string]any)["path"], "a second call does not overwrite the first's files")
}

func TestEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := strings.Repeat("é", 2000) // 4000 bytes
	b.srv.AddTool("say", nil, func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
		return mcptest.Text(args["prefix"].(string) + long), nil
	})
	r := b.run(t, "say", map[string]any{"prefix": "key=hunter22 ", "nested": map[string]any{"list": []any{"hunter22", 3}}}, 1)
	require.Nil(t, r.err)

	call := r.event(t, "tool_call")
	require.Equal(t, "test", call["server"])
	require.Equal(t, "say", call["tool"])
	require.Equal(t, map[string]any{"prefix": "key=*** ", "nested": map[string]any{"list": []any{"***", 3}}}, call["arguments"],
		"every string of the arguments is redacted")

	res := r.event(t, "tool_result")
	text := res["text"].(string)
	require.LessOrEqual(t, len(text), 2048)
	require.Greater(t, len(text), 2040)
	require.True(t, strings.HasPrefix(text, "key=*** é"), "redacted and clipped at a character boundary")
	require.Equal(t, true, res["text_truncated"])
	require.Equal(t, false, res["is_error"])
	require.Equal(t, 0, res["images"])
	require.Contains(t, res, "duration_ms")
}

func TestBadParameters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		name     string
		params   map[string]any
		services *node.Services
		code     string
	}{
		{"no server", map[string]any{"tool": "x"}, mcpclient.Service.Provide(nil, b.pool), "invalid_params"},
		{"no tool", map[string]any{"server": "test"}, mcpclient.Service.Provide(nil, b.pool), "invalid_params"},
		{"arguments not a map, refused by coercion", map[string]any{"server": "test", "tool": "x", "arguments": []any{1}}, mcpclient.Service.Provide(nil, b.pool), "param_type"},
		{"no pool", map[string]any{"server": "test", "tool": "x"}, &node.Services{}, "service_unavailable"},
		{"unknown server", map[string]any{"server": "other", "tool": "x"}, mcpclient.Service.Provide(nil, b.pool), "unknown_server"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The kind gets its parameters coerced, as the engine gives them.
			params, err := nodetest.Params(&mcpkind.Spec, tc.params)
			if err == nil {
				call := &node.Call{NodeID: "n", Attempt: 1, Params: params, Services: tc.services,
					Emit: func(string, map[string]any) {}, Redact: func(s string) string { return s }, Now: time.Now}
				_, err = (&mcpkind.MCP{}).Run(context.Background(), call)
			}
			e := node.AsError(err)
			require.NotNil(t, e)
			require.Equal(t, tc.code, e.Code)
			require.True(t, e.Permanent)
		})
	}
}

func TestNestedArgumentErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.AddTool("order", map[string]any{
		"type": "object",
		"properties": map[string]any{
			"items": map[string]any{"type": "array", "items": map[string]any{
				"type": "object", "properties": map[string]any{"qty": map[string]any{"type": "integer", "minimum": 1}},
				"required": []any{"qty"},
			}},
		},
		"additionalProperties": false,
	}, returns(mcptest.Text("ok")))
	r := b.run(t, "order", map[string]any{"items": []any{map[string]any{"qty": 1}, map[string]any{"qty": 0}, map[string]any{}}, "rush": true}, 1)
	require.NotNil(t, r.err)
	require.Equal(t, "invalid_arguments", r.err.Code)
	require.Contains(t, r.err.Message, `tool "order" (MCP server "test")`)
	require.Contains(t, r.err.Message, "items[1].qty: must be >= 1, is 0")
	require.Contains(t, r.err.Message, "items[2].qty: is required")
	require.Contains(t, r.err.Message, "rush: is not a parameter of this tool")
	require.Empty(t, r.events)

	ok := b.run(t, "order", map[string]any{"items": []any{map[string]any{"qty": 3}}}, 1)
	require.Nil(t, ok.err)
}

// A retry lists the tools again: a schema the server changed in between is
// seen on the next attempt, not before.
func TestRetryEvictsTools(t *testing.T) {
	t.Parallel()
	b := setup(t)
	schema := func(field string) map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{field: map[string]any{"type": "string"}}, "required": []any{field}}
	}
	b.srv.AddTool("v", schema("old"), returns(mcptest.Text("ok")))
	r := b.run(t, "v", map[string]any{"old": "x"}, 1)
	require.Nil(t, r.err)

	b.srv.AddTool("v", schema("new"), returns(mcptest.Text("ok")))
	r = b.run(t, "v", map[string]any{"new": "x"}, 1)
	require.NotNil(t, r.err, "the first attempt checks against the cached schema")
	require.Contains(t, r.err.Message, "old: is required")

	r = b.run(t, "v", map[string]any{"new": "x"}, 2)
	require.Nil(t, r.err, "a retry evicts the cache first")
}

// Progress notifications a server sends during a call are tool_progress
// events as they come, secrets masked; links to resources the tool
// answers with are in the output as resource_links (both were dropped).
func TestProgressAndResourceLinks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	size := int64(2048)
	seen := make(chan map[string]any, 2)
	b.srv.MCP.AddTool(&sdk.Tool{Name: "export", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			token := req.Params.GetProgressToken()
			if token == nil {
				return nil, errors.New("no progress token in the request")
			}
			for i, msg := range []string{"reading the ledger", "writing with key hunter22"} {
				if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(i + 1), Total: 2, Message: msg}); err != nil {
					return nil, err
				}
				select { // the node records it while the call goes on
				case <-seen:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "exported"},
				&sdk.ResourceLink{URI: "file:///exports/ledger.csv", Name: "ledger.csv", MIMEType: "text/csv", Size: &size},
			}}, nil
		})
	var mu sync.Mutex
	var progress []map[string]any
	var result map[string]any
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := (&mcpkind.MCP{}).Run(ctx, &node.Call{
		RunID: "r", NodeID: "n", Visit: 1, Attempt: 1, IdempotencyKey: "r/n/1", Params: map[string]any{"server": "test", "tool": "export"},
		Emit: func(kind string, data map[string]any) {
			mu.Lock()
			defer mu.Unlock()
			switch kind {
			case "tool_progress":
				progress = append(progress, data)
				seen <- data
			case "tool_result":
				result = data
			}
		},
		Redact: engine.Redactor(map[string]string{"KEY": "hunter22"}), ArtifactDir: b.dir,
		Eval: func(string) (any, error) { return nil, nil }, Now: time.Now, Services: mcpclient.Service.Provide(nil, b.pool),
	})
	require.NoError(t, err)
	require.Equal(t, []any{map[string]any{"uri": "file:///exports/ledger.csv", "name": "ledger.csv", "mime": "text/csv", "size": size}},
		out["resource_links"])
	require.Equal(t, "exported", out["text"])
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, result["resource_links"])
	require.Equal(t, []map[string]any{
		{"server": "test", "tool": "export", "progress": 1.0, "total": 2.0, "message": "reading the ledger"},
		{"server": "test", "tool": "export", "progress": 2.0, "total": 2.0, "message": "writing with key ***"},
	}, progress)
}
