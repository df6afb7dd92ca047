package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestPages: without a token the page is only a sign-in form and the API
// answers 401; signed in, the workflows page starts a run from a form
// made of the workflow's inputs and opens it; the runs list follows new
// runs live, filters and pages. Each page has no serious or critical
// accessibility violation (axe-core), and the keyboard reaches every
// link, control and graph node.
func TestPages(t *testing.T) {
	t.Parallel()
	s := serve(t, nil)
	ctx := browser(t)

	// Signed out: the sign-in form, nothing else; the API is closed.
	do(t, ctx, chromedp.Navigate(s.url+"/#/workflows"), chromedp.WaitVisible("#token"))
	require.False(t, eval[bool](t, ctx, `!!document.querySelector("header.top, table")`))
	require.Equal(t, 401, eval[int](t, ctx, `fetch("/api/runs").then(r => r.status)`))
	axe(t, ctx, "sign-in page")
	do(t, ctx, chromedp.SendKeys("#token", "skn_000000000000_wrong"), chromedp.Click(`form button[type="submit"]`))
	until(t, ctx, `(document.querySelector('[role="alert"]') || {}).textContent === "That token is not valid."`)
	do(t, ctx, chromedp.Navigate(s.url+"/"))
	s.signIn(ctx)
	require.NotContains(t, eval[string](t, ctx, `document.cookie`), s.token, "the session cookie is HttpOnly")

	// Workflows: the list, one workflow's graph and its inputs form.
	do(t, ctx, chromedp.Navigate(s.url+"/#/workflows"), chromedp.WaitVisible(`tr[data-workflow="hello"]`))
	require.Equal(t, 5, eval[int](t, ctx, `document.querySelectorAll("tr[data-workflow]").length`))
	axe(t, ctx, "workflows page")
	screenshot(t, ctx, "workflows")
	do(t, ctx,
		chromedp.Click(`tr[data-workflow="hello"] a`),
		chromedp.WaitVisible(`#in-who`),
	)
	require.Equal(t, "World", eval[string](t, ctx, `document.querySelector("#in-who").value`), "the input's default")
	require.True(t, eval[bool](t, ctx, `!!document.querySelector('g.node[data-node="greet"]')`), "the workflow's graph")
	axe(t, ctx, "workflow page")
	fill(t, ctx, "#in-who", "Ada")
	fill(t, ctx, "#in-times", "3")
	do(t, ctx, chromedp.Click(`form.start button[type="submit"]`))
	until(t, ctx, `document.querySelector('section.run[data-status="completed"]')`)
	runID := eval[string](t, ctx, `document.querySelector("section.run").dataset.run`)
	require.Equal(t, map[string]any{"greeting": "Hello, Ada ×3!"}, s.api("GET", "/api/runs/"+runID, nil)["outputs"])

	// A chat: each message a run, its reply shown; the conversation goes on.
	do(t, ctx, chromedp.Navigate(s.url+"/#/workflows/chat"), chromedp.Click(`//a[normalize-space(.)="Chat with chat"]`), chromedp.WaitVisible("#chat-msg"))
	fill(t, ctx, "#chat-msg", "hello")
	do(t, ctx, chromedp.Click(`section.chat button[type="submit"]`))
	until(t, ctx, `[...document.querySelectorAll(".msg.assistant")].some(m => m.textContent.includes("you said hello; before: "))`)
	fill(t, ctx, "#chat-msg", "and you?")
	do(t, ctx, chromedp.Click(`section.chat button[type="submit"]`))
	until(t, ctx, `[...document.querySelectorAll(".msg.assistant")].some(m => m.textContent.includes("you said and you?; before: hello | you said hello"))`)
	axe(t, ctx, "chat page")

	// The runs list, live: a run started elsewhere shows up by itself.
	for range 3 {
		s.start("pins")
	}
	do(t, ctx, chromedp.Navigate(s.url+"/#/"), chromedp.WaitVisible(`tr[data-run="`+runID+`"]`))
	live := s.start("hold")
	until(t, ctx, `document.querySelector('tr[data-run="`+live+`"][data-status="running"]')`)
	axe(t, ctx, "runs list")
	screenshot(t, ctx, "runs")

	// Filters: by workflow, by status.
	fill(t, ctx, `select[name="workflow"]`, "hello")
	until(t, ctx, `document.querySelectorAll("tr[data-run]").length === 1 && !!document.querySelector('tr[data-run="`+runID+`"]')`)
	fill(t, ctx, `select[name="workflow"]`, "")
	fill(t, ctx, `select[name="status"]`, "running")
	until(t, ctx, `[...document.querySelectorAll("tr[data-run]")].every(r => r.dataset.status === "running") && !!document.querySelector('tr[data-run="`+live+`"]')`)
	s.api("POST", "/api/runs/"+live+"/cancel?wait=10s", nil)
	until(t, ctx, `!document.querySelector('tr[data-run="`+live+`"]')`)

	// The keyboard reaches the navigation, the filters, the runs and the
	// pager, in order.
	fill(t, ctx, `select[name="status"]`, "")
	until(t, ctx, `document.querySelectorAll("tr[data-run]").length === 7`)
	stops := strings.Join(tabStops(t, ctx, 14), "|")
	for _, want := range []string{"a:Runs", "a:Workflows", "button:Sign out", "select:", "a:" + runID} {
		require.Contains(t, stops, want, "Tab reaches %s", want)
	}

	// On a run page, Tab reaches every node and Enter opens it.
	do(t, ctx, chromedp.Navigate(s.url+"/#/runs/"+runID), chromedp.WaitVisible(`g.node[data-node="greet"]`))
	stops = strings.Join(tabStops(t, ctx, 12), "|")
	require.Contains(t, stops, "node:start")
	require.Contains(t, stops, "node:greet")
	do(t, ctx, chromedp.Focus(`g.node[data-node="greet"]`), pressEnter(), chromedp.WaitVisible(`section.panel[data-panel-node="greet"]`))
	require.Contains(t, eval[string](t, ctx, `document.querySelector("section.panel").innerText`), "Hello, Ada ×3!")
	axe(t, ctx, "run page")

	// Paging: 25 runs a page.
	for i := range 25 {
		s.api("POST", "/api/workflows/hello/runs", map[string]any{"inputs": map[string]any{"who": fmt.Sprint("p", i)}})
	}
	do(t, ctx, chromedp.Navigate(s.url+"/#/"))
	until(t, ctx, `document.querySelectorAll("tr[data-run]").length === 25`)
	do(t, ctx, chromedp.Click(`//button[text()="Older"]`))
	until(t, ctx, `document.querySelectorAll("tr[data-run]").length === 7 && !!document.querySelector('tr[data-run="`+runID+`"]')`)
	do(t, ctx, chromedp.Click(`//button[text()="Newer"]`))
	until(t, ctx, `document.querySelectorAll("tr[data-run]").length === 25`)
}
