package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/mcp/mcptest"
)

// runEvents reads the events of the one run under dir whose type is kind.
func runEvents(t *testing.T, dir, kind string) []map[string]any {
	t.Helper()
	var out []map[string]any
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if d.Name() != "events.jsonl" {
			return nil
		}
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
			if ev["type"] == kind {
				out = append(out, ev)
			}
		}
		return sc.Err()
	}))
	return out
}

// TestResolveArgument is acceptance 6 of issue 16: an mcp node's argument
// {resolve, from} lists 50 windows, the model picks one, and its id is the
// argument the tool gets. The first call fails and the node is retried:
// the listing is called and the model asked again, and the run's events
// hold both resolutions. Both picks' tokens are the run's.
func TestResolveArgument(t *testing.T) {
	t.Parallel()
	tools := mcptest.New(t)
	var mu sync.Mutex
	var listings int
	var focused []any
	windows := make([]any, 50)
	for i := range windows {
		windows[i] = map[string]any{"id": 1000 + i, "title": fmt.Sprintf("Document %d - Editor", i)}
	}
	windows[36] = map[string]any{"id": 1036, "title": "Invoice INV-2291 - Billing"}
	tools.AddDescribedTool("list_windows", "Lists the open windows.", nil, func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		listings++
		require.Equal(t, map[string]any{"app": "billing"}, args)
		b, _ := json.Marshal(windows)
		return mcptest.Text(string(b)), nil
	})
	tools.AddDescribedTool("focus_window", "Focuses a window.", nil, func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		focused = append(focused, args["id"])
		if len(focused) == 1 {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "window is busy"}}}, nil
		}
		return mcptest.Text(`{"focused": true}`), nil
	})
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{Text: `{"index": 37, "reason": "its title names an invoice"}`, Usage: llm.Usage{InputTokens: 900, OutputTokens: 20}},
		{Text: `{"index": 37, "reason": "the invoice window, again"}`, Usage: llm.Usage{InputTokens: 900, OutputTokens: 25}},
	})
	dir := t.TempDir()
	file := filepath.Join(dir, "resolve.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`version: 1
name: resolve
mcp_servers:
  desktop: {url: "`+tools.URL+`"}
`+llmSection(model)+`nodes:
  - id: focus
    type: mcp
    server: desktop
    tool: focus_window
    retries: 1
    retry_backoff: 10ms
    arguments:
      id: {resolve: "the invoice window", from: {tool: list_windows, args: {app: billing}}, field: id}
`), 0o644))

	r := skein(t, "run", "--output", "json", "--dir", dir, file)
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	res := decodeAIRun(t, r)
	require.Equal(t, "completed", string(res.Status))
	require.Equal(t, true, res.Steps[res.step(t, "focus")].Output["focused"])

	require.Equal(t, 2, listings, "the retry lists the windows again")
	require.Equal(t, []any{1036.0, 1036.0}, focused, "the picked window's id is the argument, on both attempts")
	require.Equal(t, 2, model.Calls())
	prompt := model.Requests()[0].Messages[0].Content
	require.Contains(t, prompt, "the invoice window")
	require.Contains(t, prompt, `37. {"id":1036,"title":"Invoice INV-2291 - Billing"}`)
	require.Contains(t, prompt, "50. ")

	resolved := runEvents(t, dir, "resolved")
	require.Len(t, resolved, 2, "one resolution per attempt")
	for i, reason := range []string{"its title names an invoice", "the invoice window, again"} {
		data := resolved[i]["data"].(map[string]any)
		require.Equal(t, "focus", resolved[i]["node"])
		require.Equal(t, "id", data["argument"])
		require.Equal(t, "the invoice window", data["description"])
		require.Equal(t, "list_windows", data["tool"])
		require.EqualValues(t, 50, data["items"])
		require.EqualValues(t, 37, data["index"])
		require.EqualValues(t, 1036, data["value"])
		require.Equal(t, reason, data["reason"])
		require.Equal(t, "model", data["source"], "the retry asked the model again")
	}
	require.Equal(t, 920+925, res.Tokens, "both picks are charged to the run")
}

// A pick is kept for the run: a second visit of the node uses it without
// listing or asking again, and records it as a cached resolution.
func TestResolveIsCachedForTheRun(t *testing.T) {
	t.Parallel()
	tools := mcptest.New(t)
	var mu sync.Mutex
	listings := 0
	tools.AddDescribedTool("list_apps", "Lists apps.", nil, func(context.Context, map[string]any) (*sdk.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		listings++
		return mcptest.Text("Calculator\nMail\nCalendar"), nil
	})
	tools.AddDescribedTool("open", "Opens an app.", nil, func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
		return mcptest.Text("opened " + args["app"].(string)), nil
	})
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{Text: `{"index": 2, "reason": "Mail is the email app"}`, Usage: llm.Usage{InputTokens: 50, OutputTokens: 10}},
	})
	dir := t.TempDir()
	file := filepath.Join(dir, "apps.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`version: 1
name: apps
mcp_servers:
  desktop: {url: "`+tools.URL+`"}
`+llmSection(model)+`nodes:
  - id: each
    type: foreach
    items: [1, 2]
  - id: open
    type: mcp
    server: desktop
    tool: open
    arguments:
      app: {resolve: "the email app", from: {tool: list_apps}}
  - {id: done, type: endloop, loop: each}
edges:
  - {from: each, to: open, on: body}
  - {from: open, to: done}
`), 0o644))
	r := skein(t, "run", "--output", "json", "--dir", dir, file)
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	require.Equal(t, 1, listings)
	require.Equal(t, 1, model.Calls())
	resolved := runEvents(t, dir, "resolved")
	require.Len(t, resolved, 2)
	require.Equal(t, "Mail", resolved[0]["data"].(map[string]any)["value"])
	require.Equal(t, "model", resolved[0]["data"].(map[string]any)["source"])
	require.Equal(t, "cache", resolved[1]["data"].(map[string]any)["source"])
	require.True(t, strings.Contains(r.stdout, "opened Mail"), r.stdout)
}

// skein validate reports a resolve: argument it cannot use, with its
// position and the shape to write.
func TestValidateResolveArgument(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`version: 1
name: bad
mcp_servers:
  d: {url: "http://127.0.0.1:1/mcp"}
nodes:
  - id: focus
    type: mcp
    server: d
    tool: focus
    arguments:
      id: {resolve: "the invoice window", from: {tol: list_windows}}
`), 0o644))
	r := skein(t, "validate", file)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stdout, file+`:11:7: error: argument id: "tol" is not a key of from (it takes tool, args, server); write {resolve:`)
	require.Contains(t, r.stdout, "(node focus)")
}

// Click by name through skein run: the app is found by list_apps without
// the model; an ambiguous text asks the model, whose choice a later node
// takes from the cache; a retry of the clicking node asks again.
func TestClickByName(t *testing.T) {
	t.Parallel()
	tools := mcptest.New(t)
	var mu sync.Mutex
	var finds []map[string]any
	clicks := 0
	elements := `[{"text": "5", "role": "text", "x": 10, "y": 5}, {"text": "5", "role": "button", "x": 40, "y": 80}]`
	tools.AddDescribedTool("list_apps", "Lists the running apps.", nil, func(context.Context, map[string]any) (*sdk.CallToolResult, error) {
		return mcptest.Text(`[{"name": "Calculator", "pid": 7}, {"name": "Mail", "pid": 8}]`), nil
	})
	tools.AddDescribedTool("focus_window", "Focuses an app.", nil, func(context.Context, map[string]any) (*sdk.CallToolResult, error) {
		return mcptest.Text(`{"focused": true}`), nil
	})
	tools.AddDescribedTool("find_text", "Finds text on the screen.", nil, func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		finds = append(finds, args)
		return mcptest.Text(elements), nil
	})
	tools.AddDescribedTool("click", "Clicks an element.", nil, func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		clicks++
		if clicks == 1 {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the window moved"}}}, nil
		}
		return mcptest.Text(`{"clicked": true}`), nil
	})
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{Text: `{"index": 2, "reason": "the button, not the display"}`, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}},
		{Text: `{"index": 2, "reason": "the button again"}`, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}},
	})
	dir := t.TempDir()
	file := filepath.Join(dir, "click.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`version: 1
name: click
mcp_servers:
  desktop: {url: "`+tools.URL+`"}
`+llmSection(model)+`nodes:
  - id: open
    type: mcp
    server: desktop
    tool: focus_window
    arguments:
      app_name: {resolve: "calculator", from: {tool: list_apps}, field: name}
  - id: five
    type: mcp
    server: desktop
    tool: click
    retries: 1
    retry_backoff: 10ms
    arguments:
      target: {resolve: "5", from: {tool: find_text}}
  - id: five_again
    type: mcp
    server: desktop
    tool: click
    arguments:
      target: {resolve: "5", from: {tool: find_text}}
edges:
  - {from: open, to: five}
  - {from: five, to: five_again}
`), 0o644))

	r := skein(t, "run", "--output", "json", "--dir", dir, file)
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	require.Equal(t, "completed", string(decodeAIRun(t, r).Status))
	require.Equal(t, 2, model.Calls(), "the model is asked on the first attempt and on the retry, not by the later node")

	var got [][]any
	for _, ev := range runEvents(t, dir, "resolved") {
		data := ev["data"].(map[string]any)
		got = append(got, []any{ev["node"], data["source"], data["app"], data["value"]})
	}
	button := map[string]any{"text": "5", "role": "button", "x": 40.0, "y": 80.0}
	require.Equal(t, [][]any{
		{"open", "tool", nil, "Calculator"},
		{"five", "model", "Calculator", button},
		{"five", "model", "Calculator", button},
		{"five_again", "cache", "Calculator", button},
	}, got)
	mu.Lock()
	defer mu.Unlock()
	for _, f := range finds {
		require.Equal(t, map[string]any{"text": "5", "app_name": "Calculator"}, f, "find_text looks in the focused app")
	}
}
