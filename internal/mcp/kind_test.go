package mcp_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// The everything server through the engine: text, sums, an image, structured
// content and an embedded resource, each as a node's output.
func TestEverythingThroughEngine(t *testing.T) {
	t.Parallel()
	p := servers(t)
	marker := newMarker(t)
	src := fmt.Sprintf(`
version: 1
name: everything
inputs:
  who: {type: string, default: world}
secrets: [TOKEN]
mcp_servers:
  everything:
    command: %s
    args: [stdio]
    env: {%s: %s}
nodes:
  - {id: echo, type: mcp, server: everything, tool: echo, arguments: {message: "hello {{ inputs.who }} {{ secrets.TOKEN }}"}}
  - {id: total, type: mcp, server: everything, tool: get-sum, arguments: {a: 2, b: 3.5}}
  - {id: image, type: mcp, server: everything, tool: get-tiny-image}
  - {id: weather, type: mcp, server: everything, tool: get-structured-content, arguments: {location: Chicago}}
  - id: gz
    type: mcp
    server: everything
    tool: gzip-file-as-resource
    arguments: {name: hello.txt.gz, data: "data:text/plain;base64,aGVsbG8gZ3ppcA==", outputType: resource}
  - id: rainy
    type: if
    condition: 'weather.conditions contains "rain"'
edges:
  - {from: echo, to: total}
  - {from: total, to: image}
  - {from: image, to: weather}
  - {from: weather, to: gz}
  - {from: gz, to: rainy}
outputs:
  echoed: "{{ echo.text }}"
  sum: "{{ total.text }}"
  humidity: "{{ weather.humidity }}"
`, q(p.everything), markerVar, q(marker))
	r := runWorkflow(t, src, nil, map[string]string{"TOKEN": "s3cr3t-token"}, marker)
	require.Equal(t, engine.RunCompleted, r.res.Status, "%+v", r.res.Error)

	require.Equal(t, "Echo: hello world ***", r.res.Outputs["echoed"], "the secret is redacted from outputs")
	require.Equal(t, "The sum of 2 and 3.5 is 5.5.", r.res.Outputs["sum"])
	require.Equal(t, 82, r.res.Outputs["humidity"], "structured content, whole numbers as int")
	require.Equal(t, "Light rain / drizzle", r.step(t, "weather").Output["conditions"])
	require.Equal(t, "true", r.step(t, "rainy").Directives["_route"], "if routes on a tool's result")

	img := r.step(t, "image").Output
	images, ok := img["images"].([]any)
	require.True(t, ok, "image output lists images: %v", img)
	require.Len(t, images, 1)
	first := images[0].(map[string]any)
	require.Equal(t, "image/png", first["mime"])
	path := first["path"].(string)
	require.Equal(t, filepath.Join(r.artifacts, "image", "artifacts", "get-tiny-image-1.png"), path)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")), "the artifact is the PNG the tool returned")
	require.Contains(t, img["text"], "Here's the image you requested:")

	res := r.step(t, "gz").Output["resources"].([]any)[0].(map[string]any)
	require.Equal(t, "application/gzip", res["mime"])
	require.True(t, strings.HasSuffix(res["path"].(string), "gzip-file-as-resource-1.gz"), res["path"])
	require.NotEmpty(t, res["uri"])
	f, err := os.Open(res["path"].(string))
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Equal(t, "hello gzip", string(plain))

	calls := r.rec.ofType("tool_call")
	results := r.rec.ofType("tool_result")
	require.Len(t, calls, 5)
	require.Len(t, results, 5)
	require.Equal(t, "echo", calls[0].Node)
	require.Equal(t, map[string]any{"message": "hello world ***"}, calls[0].Data["arguments"], "arguments are redacted")
	for _, ev := range results {
		require.Contains(t, ev.Data, "duration_ms")
		require.Equal(t, false, ev.Data["is_error"])
	}
	require.Equal(t, 1, results[2].Data["images"])
}

func TestFilesystem(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("no"), 0o644))
	b := setup(t, func(p paths, m string) []*workflow.MCPServer {
		return []*workflow.MCPServer{p.filesystemServer(m, root)}
	})
	ctx := context.Background()
	file := filepath.Join(root, "notes", "a.txt")

	c := callKind(ctx, t, b.pool, "fs", "create_directory", map[string]any{"path": filepath.Join(root, "notes")}, 1)
	require.Nil(t, c.err)
	c = callKind(ctx, t, b.pool, "fs", "write_file", map[string]any{"path": file, "content": "line one\nline two\n"}, 1)
	require.Nil(t, c.err)
	require.Contains(t, c.out["content"], "Successfully wrote")
	onDisk, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, "line one\nline two\n", string(onDisk))

	c = callKind(ctx, t, b.pool, "fs", "read_text_file", map[string]any{"path": file}, 1)
	require.Nil(t, c.err)
	require.Equal(t, "line one\nline two\n", c.out["content"], "structuredContent is preferred")

	c = callKind(ctx, t, b.pool, "fs", "list_directory", map[string]any{"path": filepath.Join(root, "notes")}, 1)
	require.Nil(t, c.err)
	require.Equal(t, "[FILE] a.txt", c.out["content"])

	c = callKind(ctx, t, b.pool, "fs", "read_text_file", map[string]any{"path": filepath.Join(outside, "secret.txt")}, 1)
	require.NotNil(t, c.err, "a path outside the allowed root fails")
	require.Equal(t, mcp.CategoryToolError, c.err.Category)
	require.Equal(t, "mcp_error", c.err.Code)
	require.Contains(t, c.err.Message, `tool "read_text_file" of MCP server "fs" failed`)
	require.Contains(t, c.err.Message, "Access denied - path outside allowed directories")
	require.Contains(t, c.err.Details["text"], "Access denied")
	last := c.events[len(c.events)-1]
	require.Equal(t, "tool_result", last.kind)
	require.Equal(t, true, last.data["is_error"])
}

// Arguments are checked against the tool's input schema before the call.
func TestArgumentsAgainstSchema(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p paths, m string) []*workflow.MCPServer { return []*workflow.MCPServer{p.everythingServer(m)} })
	cases := []struct {
		name   string
		tool   string
		args   map[string]any
		fields []string
		parts  []string
	}{
		{"wrong type", "get-sum", map[string]any{"a": "two", "b": 3}, []string{"a"}, []string{`tool "get-sum"`, "a: got string, want number"}},
		{"missing", "get-sum", map[string]any{"a": 1}, []string{"b"}, []string{"b: is required"}},
		{"two at once", "get-sum", map[string]any{}, []string{"a", "b"}, []string{"a: is required", "b: is required"}},
		{"not in enum", "get-structured-content", map[string]any{"location": "Paris"}, []string{"location"}, []string{"location: value must be one of"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := callKind(context.Background(), t, b.pool, "everything", tc.tool, tc.args, 1)
			require.NotNil(t, c.err)
			require.Equal(t, node.CategoryValidation, c.err.Category)
			require.Equal(t, "invalid_arguments", c.err.Code)
			require.True(t, c.err.Permanent)
			require.Contains(t, c.err.Message, `MCP server "everything"`)
			for _, p := range tc.parts {
				require.Contains(t, c.err.Message, p)
			}
			var fields []string
			for _, fe := range c.err.Details["errors"].([]any) {
				fields = append(fields, fe.(map[string]any)["field"].(string))
			}
			require.ElementsMatch(t, tc.fields, fields)
			require.Empty(t, c.events, "nothing was called")
		})
	}
}
