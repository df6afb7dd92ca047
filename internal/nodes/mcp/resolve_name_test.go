package mcp_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	mcpclient "github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/internal/mcp/mcptest"
	mcpkind "github.com/skeinhq/skein/internal/nodes/mcp"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// namePicker is a fake model that picks the item whose text or name is
// want, and counts its calls.
type namePicker struct {
	mu    sync.Mutex
	want  string
	calls int
	shown [][]any
}

func (p *namePicker) Priced(name string) (string, string, bool) { return name, "fake-model", true }

func (p *namePicker) PickItem(_ context.Context, _, _ string, items []any) (int, string, string, map[string]any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	p.shown = append(p.shown, items)
	n := 0
	for i, it := range items {
		if it == p.want {
			n = i + 1
		}
		if m, ok := it.(map[string]any); ok && (m["text"] == p.want || m["name"] == p.want || m["title"] == p.want || m["role"] == p.want) {
			n = i + 1
		}
	}
	return n, "it fits", "fake-model", map[string]any{"input_tokens": 5, "output_tokens": 1, "total_tokens": 6, "cost_usd": 0.0, "priced": true}, nil
}

func (p *namePicker) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// desktop is a fake desktop MCP server: find_text finds the elements of
// the focused app (or of the screen) by text, list_apps lists the apps,
// focus_window focuses one, click records what it was given.
type desktop struct {
	mu       sync.Mutex
	elements map[string][]any // app ("" for the screen) → elements {text, role, x, y}
	apps     []any
	finds    []map[string]any // find_text's arguments, in order
	lists    int
	clicked  []any
}

func newDesktop(t *testing.T) (*desktop, *mcpclient.Pool) {
	t.Helper()
	d := &desktop{elements: map[string][]any{}}
	srv := mcptest.New(t)
	srv.AddTool("find_text", nil, func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.finds = append(d.finds, args)
		app, _ := args["app_name"].(string)
		var matches []any
		var names []any
		for _, e := range d.elements[app] {
			text := e.(map[string]any)["text"]
			names = append(names, text)
			if text == args["text"] {
				matches = append(matches, e)
			}
		}
		b, _ := json.Marshal(matches)
		if matches == nil {
			b = []byte("[]")
		}
		if len(matches) > 0 || len(names) == 0 {
			return mcptest.Text(string(b)), nil
		}
		avail, _ := json.Marshal(map[string]any{"available_elements": names})
		// As the desktop servers answer: the matches, then the names seen.
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}, &sdk.TextContent{Text: string(avail)}}}, nil
	})
	srv.AddTool("list_apps", nil, func(context.Context, map[string]any) (*sdk.CallToolResult, error) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.lists++
		b, _ := json.Marshal(d.apps)
		return mcptest.Text(string(b)), nil
	})
	srv.AddTool("focus_window", nil, func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, a := range d.apps {
			if a.(map[string]any)["name"] == args["app_name"] {
				return mcptest.Text(`{"focused": true}`), nil
			}
		}
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "no such app"}}}, nil
	})
	srv.AddTool("click", nil, func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.clicked = append(d.clicked, args["target"])
		return mcptest.Text(`{"clicked": true}`), nil
	})
	pool := mcpclient.NewPool([]*workflow.MCPServer{{Name: "test", URL: srv.URL}}, nil)
	t.Cleanup(func() { require.NoError(t, pool.Close()) })
	return d, pool
}

// texts are the text arguments find_text was called with.
func (d *desktop) texts() []any {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []any
	for _, a := range d.finds {
		out = append(out, a["text"])
	}
	return out
}

// nameRun runs node id (attempt) once on the desktop: tool with args,
// sharing the run's caches.
func nameRun(t *testing.T, pool *mcpclient.Pool, cache *mcpkind.Resolutions, p *namePicker, id string, attempt int, tool string, args map[string]any) result {
	t.Helper()
	var r result
	services := mcpclient.Service.Provide(nil, pool)
	services = mcpkind.PickerService.Provide(services, p)
	services = mcpkind.ResolutionsService.Provide(services, cache)
	services = node.BudgetService.Provide(services, &engine.Budget{})
	call := &node.Call{
		RunID: "r", NodeID: id, Attempt: attempt, Params: map[string]any{"server": "test", "tool": tool, "arguments": args},
		Emit:   func(kind string, data map[string]any) { r.events = append(r.events, event{kind, data}) },
		Redact: engine.Redactor(nil), Now: time.Now, Services: services,
	}
	out, err := (&mcpkind.MCP{}).Run(context.Background(), call)
	r.out, r.err = out, node.AsError(err)
	return r
}

func click(target string) map[string]any {
	return map[string]any{"target": map[string]any{"resolve": target, "from": map[string]any{"tool": "find_text"}}}
}

func element(text, role string, x int) map[string]any {
	return map[string]any{"text": text, "role": role, "x": x, "y": 10}
}

// Click by name as the desktop servers do it: find_text first, the model
// only when the tool gives no single match, its decisions cached per
// (target, app) and evicted before the node's retry.
func TestResolveByName(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, want string) (*desktop, *mcpclient.Pool, *mcpkind.Resolutions, *namePicker) {
		d, pool := newDesktop(t)
		d.elements[""] = []any{element("Multiply", "button", 1), element("Divide", "button", 2)}
		d.elements["Calculator"] = []any{element("5", "text", 3), element("5", "button", 4), element("Multiply", "button", 5)}
		d.apps = []any{map[string]any{"name": "Calculator", "pid": 11.0}, map[string]any{"name": "Mail", "pid": 12.0}}
		return d, pool, mcpkind.NewResolutions(), &namePicker{want: want}
	}

	t.Run("a direct match does not call the model", func(t *testing.T) {
		t.Parallel()
		d, pool, cache, p := setup(t, "")
		for range 2 {
			r := nameRun(t, pool, cache, p, "press", 1, "click", click("Multiply"))
			require.Nil(t, r.err)
			ev := r.event(t, "resolved")
			require.Equal(t, "tool", ev["source"])
			require.Equal(t, element("Multiply", "button", 1), ev["value"])
		}
		require.Equal(t, 0, p.count(), "no model call")
		require.Equal(t, []any{"Multiply", "Multiply"}, d.texts())
		clicked := map[string]any{"text": "Multiply", "role": "button", "x": 1.0, "y": 10.0}
		require.Equal(t, []any{clicked, clicked}, d.clicked, "the tool got the element found")
	})

	t.Run("no match: the model names the target from the available elements, once", func(t *testing.T) {
		t.Parallel()
		d, pool, cache, p := setup(t, "Multiply")
		r := nameRun(t, pool, cache, p, "times", 1, "click", click("×"))
		require.Nil(t, r.err)
		ev := r.event(t, "resolved")
		require.Equal(t, "model", ev["source"])
		require.Equal(t, "Multiply", ev["name"])
		require.Equal(t, element("Multiply", "button", 1), ev["value"])
		require.Equal(t, [][]any{{"Multiply", "Divide"}}, p.shown, "the model chose among the names find_text saw")
		require.Equal(t, []any{"×", "Multiply"}, d.texts(), "find_text again with the name the model gave")

		r = nameRun(t, pool, cache, p, "times_again", 1, "click", click("×"))
		require.Nil(t, r.err)
		ev = r.event(t, "resolved")
		require.Equal(t, "cache", ev["source"])
		require.Equal(t, element("Multiply", "button", 1), ev["value"])
		require.Equal(t, 1, p.count(), "the second resolution is the cache's")
		require.Equal(t, []any{"×", "Multiply", "Multiply"}, d.texts(), "the cached name is looked up, not the target")
	})

	t.Run("ambiguity calls the model, and its choice is kept for the app", func(t *testing.T) {
		t.Parallel()
		d, pool, cache, p := setup(t, "button")
		r := nameRun(t, pool, cache, p, "focus", 1, "focus_window", map[string]any{"app_name": "Calculator"})
		require.Nil(t, r.err)

		r = nameRun(t, pool, cache, p, "five", 1, "click", click("5"))
		require.Nil(t, r.err)
		ev := r.event(t, "resolved")
		require.Equal(t, "model", ev["source"])
		require.Equal(t, "Calculator", ev["app"], "scoped to the focused app")
		require.EqualValues(t, 2, ev["items"])
		require.Equal(t, element("5", "button", 4), ev["value"])
		require.Equal(t, "Calculator", d.finds[0]["app_name"], "find_text looks in the focused app")

		r = nameRun(t, pool, cache, p, "five_again", 1, "click", click("5"))
		require.Nil(t, r.err)
		ev = r.event(t, "resolved")
		require.Equal(t, "cache", ev["source"])
		require.Equal(t, element("5", "button", 4), ev["value"])
		require.Equal(t, 1, p.count())

		// Another app is another scope: the choice made in Calculator
		// is not used there.
		r = nameRun(t, pool, cache, p, "focus_mail", 1, "focus_window", map[string]any{"app_name": "Mail"})
		require.Nil(t, r.err)
		d.mu.Lock()
		d.elements["Mail"] = []any{element("5", "text", 6), element("5", "button", 7)}
		d.mu.Unlock()
		r = nameRun(t, pool, cache, p, "five_in_mail", 1, "click", click("5"))
		require.Nil(t, r.err)
		ev = r.event(t, "resolved")
		require.Equal(t, "model", ev["source"])
		require.Equal(t, "Mail", ev["app"])
		require.Equal(t, element("5", "button", 7), ev["value"])
		require.Equal(t, 2, p.count())
	})

	t.Run("a retry evicts the node's resolutions", func(t *testing.T) {
		t.Parallel()
		_, pool, cache, p := setup(t, "button")
		nameRun(t, pool, cache, p, "focus", 1, "focus_window", map[string]any{"app_name": "Calculator"})
		r := nameRun(t, pool, cache, p, "five", 1, "click", click("5"))
		require.Equal(t, "model", r.event(t, "resolved")["source"])
		r = nameRun(t, pool, cache, p, "five", 2, "click", click("5"))
		require.Nil(t, r.err)
		require.Equal(t, "model", r.event(t, "resolved")["source"], "the retry asks again")
		require.Equal(t, 2, p.count())
	})

	t.Run("a retried focus_window forgets the focused app", func(t *testing.T) {
		t.Parallel()
		d, pool, cache, p := setup(t, "")
		nameRun(t, pool, cache, p, "focus", 1, "focus_window", map[string]any{"app_name": "Calculator"})
		r := nameRun(t, pool, cache, p, "focus", 2, "focus_window", map[string]any{"app_name": "Gone"})
		require.Equal(t, "mcp_error", r.err.Code)
		r = nameRun(t, pool, cache, p, "times", 1, "click", click("Multiply"))
		require.Nil(t, r.err)
		require.Nil(t, r.event(t, "resolved")["app"])
		require.Equal(t, element("Multiply", "button", 1), r.event(t, "resolved")["value"], "found on the screen")
		require.Nil(t, d.finds[0]["app_name"])
	})

	t.Run("no candidates at all", func(t *testing.T) {
		t.Parallel()
		d, pool, cache, p := setup(t, "")
		d.elements[""] = nil
		r := nameRun(t, pool, cache, p, "press", 1, "click", click("Multiply"))
		require.NotNil(t, r.err)
		require.Equal(t, "resolve_no_items", r.err.Code)
		require.Equal(t, `argument target: tool "find_text" of MCP server "test" found no element "Multiply" and listed none to pick from`, r.err.Message)
		require.Equal(t, 0, p.count())
	})

	t.Run("app names: a direct match, else the model, cached by name", func(t *testing.T) {
		t.Parallel()
		d, pool, cache, p := setup(t, "Mail")
		app := func(name string) map[string]any {
			return map[string]any{"app_name": map[string]any{"resolve": name, "from": map[string]any{"tool": "list_apps"}, "field": "name"}}
		}
		r := nameRun(t, pool, cache, p, "calc", 1, "focus_window", app("calculator"))
		require.Nil(t, r.err)
		require.Equal(t, "tool", r.event(t, "resolved")["source"])
		require.Equal(t, "Calculator", r.event(t, "resolved")["value"])
		require.Equal(t, 0, p.count())

		for _, want := range []string{"model", "cache"} {
			r = nameRun(t, pool, cache, p, "mail", 1, "focus_window", app("the email app"))
			require.Nil(t, r.err)
			require.Equal(t, want, r.event(t, "resolved")["source"])
			require.Equal(t, "Mail", r.event(t, "resolved")["value"])
		}
		require.Equal(t, 1, p.count())
		d.mu.Lock()
		require.Equal(t, 2, d.lists, "the cached app is not listed again")
		d.mu.Unlock()
		require.True(t, slices.ContainsFunc(r.events, func(e event) bool { return e.kind == "tool_call" && e.data["tool"] == "focus_window" }))
	})
}

// find_text's own app_name scopes the resolution; another listing's pick
// is kept by its arguments and target, and the tool is not called again.
func TestResolveScopesAndListings(t *testing.T) {
	t.Parallel()
	d, pool := newDesktop(t)
	d.elements["Calculator"] = []any{element("5", "text", 3), element("5", "button", 4)}
	cache, p := mcpkind.NewResolutions(), &namePicker{want: "button"}
	arg := map[string]any{"target": map[string]any{"resolve": "5", "from": map[string]any{"tool": "find_text", "args": map[string]any{"app_name": "Calculator"}}}}
	r := nameRun(t, pool, cache, p, "five", 1, "click", arg)
	require.Nil(t, r.err)
	require.Equal(t, "Calculator", r.event(t, "resolved")["app"])
	require.Equal(t, element("5", "button", 4), r.event(t, "resolved")["value"])

	var mu sync.Mutex
	listings := 0
	srv := mcptest.New(t)
	srv.AddTool("list_windows", nil, func(context.Context, map[string]any) (*sdk.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		listings++
		return mcptest.Text(`[{"id": 1, "title": "Inbox"}, {"id": 2, "title": "Invoice INV-7"}]`), nil
	})
	srv.AddTool("focus", nil, returns(mcptest.Text("ok")))
	wins := mcpclient.NewPool([]*workflow.MCPServer{{Name: "test", URL: srv.URL}}, nil)
	t.Cleanup(func() { require.NoError(t, wins.Close()) })
	p.mu.Lock()
	p.want = "Invoice INV-7"
	p.mu.Unlock()
	win := map[string]any{"id": map[string]any{"resolve": "the invoice", "from": map[string]any{"tool": "list_windows", "args": map[string]any{"app": "billing"}}, "field": "id"}}
	for _, want := range []string{"model", "cache"} {
		r = nameRun(t, wins, cache, p, "win", 1, "focus", win)
		require.Nil(t, r.err)
		require.Equal(t, want, r.event(t, "resolved")["source"])
		require.Equal(t, 2, r.event(t, "resolved")["value"])
	}
	mu.Lock()
	require.Equal(t, 1, listings, "a cached pick is not listed again")
	mu.Unlock()
	require.Equal(t, 2, p.count())
}
