package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestStartFormTakesListsAndMaps: the start form gives a list or a map
// input a JSON field (the API's input types are list and map), shows its
// default as JSON, and starts the run with the value typed.
func TestStartFormTakesListsAndMaps(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"types.yaml": `version: 1
name: types
inputs:
  tags: {type: list, default: [a, b]}
  opts: {type: map, default: {k: 1}}
nodes:
  - {id: echo, type: set, values: {tags: "{{ inputs.tags }}", opts: "{{ inputs.opts }}"}}
`})
	ctx := browser(t)
	s.signIn(ctx)
	do(t, ctx, chromedp.Navigate(s.url+"/#/workflows/types"))
	until(t, ctx, `!!document.querySelector("#in-opts")`)
	require.Equal(t, "TEXTAREA", eval[string](t, ctx, `document.querySelector("#in-tags").tagName`))
	require.Equal(t, `["a","b"]`, eval[string](t, ctx, `document.querySelector("#in-tags").value`))
	require.Equal(t, `{"k":1}`, eval[string](t, ctx, `document.querySelector("#in-opts").value`))
	fill(t, ctx, "#in-opts", `{"k": 2, "on": true}`)
	do(t, ctx, chromedp.Click(`form.start button[type=submit]`))
	until(t, ctx, `location.hash.startsWith("#/runs/") && !!document.querySelector('section.run[data-status="completed"]')`)
	id := eval[string](t, ctx, `document.querySelector("section.run").dataset.run`)
	doc := s.api("GET", "/api/runs/"+id, nil)
	require.Equal(t, map[string]any{"tags": []any{"a", "b"}, "opts": map[string]any{"k": float64(2), "on": true}}, doc["inputs"])
}

// TestCheckVerdictsNameTheirCheck: a node's panel lists its checks by
// name, with what the verdict says (its reasoning).
func TestCheckVerdictsNameTheirCheck(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"checked.yaml": `version: 1
name: checked
nodes:
  - id: order
    type: set
    values: {total: 10}
    checks:
      - {name: big enough, type: expr, expr: "order.total >= 50", on_fail: warn}
`})
	ctx := browser(t)
	s.signIn(ctx)
	id := s.start("checked")
	do(t, ctx, chromedp.Navigate(s.url+"/#/runs/"+id))
	until(t, ctx, `!!document.querySelector('section.run[data-status="completed"]') && !!document.querySelector('g.node[data-node="order"]')`)
	do(t, ctx, chromedp.Click(`g.node[data-node="order"]`))
	until(t, ctx, `!!document.querySelector("ul.checks li")`)
	text := eval[string](t, ctx, `document.querySelector("ul.checks li").textContent`)
	require.Contains(t, text, "big enough")
	require.Contains(t, text, "order.total >= 50", "the reasoning: what the check found")
}

// TestEditorFollowsTheRoute: going from one workflow's editor to
// another's (the hash alone changes) shows the other's text and graph,
// not the first one's graph under the other's name; renaming a node to a
// name expressions read the run by is refused on the page.
func TestEditorFollowsTheRoute(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"other.yaml": `version: 1
name: other
nodes:
  - {id: lonely, type: set, values: {x: 1}}
`})
	ctx := browser(t)
	s.signIn(ctx)
	do(t, ctx, chromedp.Navigate(s.url+"/#/workflows/hello/edit"))
	until(t, ctx, `!!document.querySelector('section.editor g.node[data-node="greet"]')`)
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#/workflows/other/edit"`))
	until(t, ctx, `!!document.querySelector('section.editor g.node[data-node="lonely"]')`)
	require.False(t, eval[bool](t, ctx, `!!document.querySelector('section.editor g.node[data-node="greet"]')`), "hello's graph is gone")

	do(t, ctx, chromedp.Click(`section.editor g.node[data-node="lonely"]`))
	until(t, ctx, `!!document.querySelector("button.rename")`)
	do(t, ctx, chromedp.Click(`button.rename`))
	until(t, ctx, `!!document.querySelector("#rename-to")`)
	fill(t, ctx, "#rename-to", "inputs")
	do(t, ctx, chromedp.Click(`form.rename button[type="submit"]`))
	until(t, ctx, `!!document.querySelector("form.rename [role=alert]")`)
	require.Contains(t, eval[string](t, ctx, `document.querySelector("form.rename [role=alert]").textContent`), "inputs is what expressions read the run by")
}
