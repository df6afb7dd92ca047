package web_test

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	pngenc "image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestLiveRun follows a run of testdata/flows/live.yaml (a signal wait,
// an if, a loop and a slow shell step) on its page: the approval is given
// from the page, each node's badge goes pending → running → success in
// that order, the branch taken is marked, a node's output, error with
// stderr, artifacts and events are shown, the run's secret appears nowhere, and a
// the run can be started again (TestCancelAndRerun re-runs with pins).
func TestLiveRun(t *testing.T) {
	t.Parallel()
	s := serve(t, nil)
	ctx := browser(t)
	id := s.start("live")
	s.signIn(ctx)
	do(t, ctx, chromedp.Navigate(s.url+"/#/runs/"+id))
	until(t, ctx, `document.querySelector('g.node[data-node="approve"][data-status="waiting"]')`)
	// The run's document says approve waits; the stream's signal_awaited
	// adds "Waiting for a signal: approve" above the graph, which moves
	// it down: a click aimed before that would miss the node.
	until(t, ctx, `[...document.querySelectorAll("p.hint button")].some(b => b.textContent === "approve")`)
	require.Equal(t, "pending", eval[string](t, ctx, `document.querySelector('g.node[data-node="slow"]').dataset.status`))

	// Every badge's changes from here on, in order.
	eval[chromedp.Void](t, ctx, `(() => {
		window.seen = {};
		for (const g of document.querySelectorAll("g.node")) window.seen[g.dataset.node] = [g.dataset.status];
		new MutationObserver((ms) => {
			for (const m of ms) {
				const g = m.target, s = g.dataset.status, l = window.seen[g.dataset.node];
				if (l[l.length - 1] !== s) l.push(s);
			}
		}).observe(document.querySelector("svg.graph"), {attributes: true, attributeFilter: ["data-status"], subtree: true});
	})()`)

	// Approve from the page: select the waiting node, send the form.
	do(t, ctx,
		chromedp.Click(`g.node[data-node="approve"]`),
		chromedp.WaitVisible(`form.approve textarea`),
		chromedp.Click(`form.approve button[type="submit"]`),
	)
	until(t, ctx, `document.querySelector('section.run[data-status="completed"]')`)
	until(t, ctx, `document.querySelector('g.node[data-node="probe"][data-status="failed"]')`)

	seen := eval[map[string][]string](t, ctx, `window.seen`)
	require.Equal(t, []string{"pending", "running", "success"}, seen["slow"], "the slow node's badge, in order")
	for _, n := range []string{"decide", "tick", "call"} {
		// Quick nodes may start and end between two frames: their badges
		// never go back, but for a loop's body, whose badge starts over
		// with each pass (tick runs twice).
		require.Subset(t, []string{"pending", "running", "success"}, seen[n], n)
		require.Equal(t, "success", seen[n][len(seen[n])-1], n)
		if n != "tick" {
			require.True(t, sortedBy(seen[n], []string{"pending", "running", "success"}), "%s went %v", n, seen[n])
		}
	}
	// The signal resumed the parked run: approve's step carries on from the
	// recorded one.
	require.Contains(t, []string{"success", "cached"}, seen["approve"][len(seen["approve"])-1])
	require.Equal(t, []string{"pending", "skipped"}, seen["rejected"], "the branch not taken is skipped")

	// The branch taken is marked on the edges; the loop's back edge is drawn.
	require.Equal(t, "true", eval[string](t, ctx, `document.querySelector('g.edge[data-from="decide"][data-on="true"]').dataset.taken`))
	require.Equal(t, "false", eval[string](t, ctx, `document.querySelector('g.edge[data-from="decide"][data-on="false"]').dataset.taken`))
	require.True(t, eval[bool](t, ctx, `!!document.querySelector('g.edge.back[data-from="next"][data-to="again"]')`))
	require.Equal(t, "true", eval[string](t, ctx, `document.querySelector('g.edge[data-from="again"][data-on="body"]').dataset.taken`))
	require.Equal(t, "true", eval[string](t, ctx, `document.querySelector('g.edge[data-from="again"][data-on="done"]').dataset.taken`))
	require.Contains(t, eval[string](t, ctx, `document.querySelector('g.node[data-node="tick"]').getAttribute("aria-label")`), "×2",
		"the loop body's badge counts its visits")

	// Files the node saved in its artifacts folder: a screenshot, a report.
	dir := filepath.Join(s.r.Dir(), s.api("GET", "/api/runs/"+id, nil)["dir"].(string), "probe", "artifacts")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	img := image.NewRGBA(image.Rect(0, 0, 40, 20))
	draw.Draw(img, img.Bounds(), &image.Uniform{color.RGBA{200, 30, 30, 255}}, image.Point{}, draw.Src)
	var png bytes.Buffer
	require.NoError(t, pngenc.Encode(&png, img))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shot.png"), png.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report.txt"), []byte("all disks full\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "disk #2 at 100%?.txt"), []byte("sdz\n"), 0o644))

	// A node's output, error with stderr, artifacts and events.
	do(t, ctx, chromedp.Click(`g.node[data-node="probe"]`), chromedp.WaitVisible(`section.panel[data-panel-node="probe"]`))
	until(t, ctx, `(() => { const i = document.querySelector('.artifacts img[alt="artifact shot.png of probe"]'); return i && i.complete && i.naturalWidth === 40; })()`)
	require.Equal(t, "all disks full\n", eval[string](t, ctx, `fetch(document.querySelector('.artifacts a[download="report.txt"]').href).then(r => r.text())`))
	require.Equal(t, "attachment; filename=report.txt", eval[string](t, ctx, `fetch(document.querySelector('.artifacts a[download="report.txt"]').href).then(r => r.headers.get("content-disposition"))`))
	require.Equal(t, "sdz\n", eval[string](t, ctx, `fetch(document.querySelector('.artifacts a[download="disk #2 at 100%?.txt"]').href).then(r => r.text())`),
		"a file name with '#', '?', '%' and spaces downloads from its link")
	for _, name := range []string{"%2e%2e", "..%2f..%2frun.json", "%2e"} {
		require.Contains(t, []int{400, 404}, eval[int](t, ctx, `fetch("/api/runs/`+id+`/artifacts/probe/`+name+`").then(r => r.status)`),
			"no name leads out of the artifacts folder: %s", name)
	}
	panel := eval[string](t, ctx, `document.querySelector('section.panel').innerText`)
	require.Contains(t, eval[string](t, ctx, `document.querySelector('section.panel .json[aria-label="output"]').innerText`),
		`command \"sh\" exited with status 3`, "the output")
	require.Contains(t, panel, "disk full on /dev/sdz", "the stderr of the error")
	require.True(t, eval[bool](t, ctx, `!!document.querySelector('section.panel pre.stderr')`))
	require.Equal(t, "probe output\n", eval[string](t, ctx, `document.querySelector('section.panel .err pre.stdout').textContent`),
		"the end of the failed command's stdout, as text")
	require.NotContains(t, eval[string](t, ctx, `document.querySelector('section.panel .err').innerText`), `"stdout"`,
		"stdout is not repeated in the error's details")
	require.Contains(t, panel, "node_started")
	require.Contains(t, panel, "node_finished")
	require.Regexp(t, `Ran on \S+ \(pid \d+\)`, panel, "where the step ran")
	require.Regexp(t, `#\d+ Visit 1`, panel, "the step's step_order")

	// A skipped step says why: the branch not taken, and the handle taken.
	do(t, ctx, chromedp.Click(`g.node[data-node="rejected"]`), chromedp.WaitVisible(`section.panel[data-panel-node="rejected"] .skip-reason`))
	require.Equal(t, "Skipped: its branch took true", eval[string](t, ctx, `document.querySelector('section.panel .skip-reason').innerText`))
	require.NotContains(t, eval[string](t, ctx, `document.querySelector('section.panel').innerText`), "Ran on", "a skipped step ran nowhere")
	// A window wide enough for the whole graph beside the panel.
	do(t, ctx, chromedp.EmulateViewport(2700, 900))
	eval[chromedp.Void](t, ctx, `document.querySelector(".graph-wrap").scrollLeft = 0`)
	screenshot(t, ctx, "run")
	do(t, ctx, chromedp.ResetViewport())

	// The secret is nowhere: not in the DOM of the node that used it, nor
	// in any answer the page got.
	do(t, ctx, chromedp.Click(`g.node[data-node="call"]`), chromedp.WaitVisible(`section.panel[data-panel-node="call"]`))
	require.Contains(t, eval[string](t, ctx, `document.querySelector('section.panel .json[aria-label="output"]').innerText`), "calling with key")
	require.NotContains(t, eval[string](t, ctx, `document.documentElement.outerHTML`), theSecret)
	bodies := eval[[]string](t, ctx, `Promise.all(performance.getEntriesByType("resource").map(e => e.name)
		.filter(u => u.includes("/api/")).map(u => fetch(u, {signal: AbortSignal.timeout(5000)}).then(r => r.text()).then(b => u + "\n" + b, e => u + "\nFAILED " + e)))`)
	require.NotEmpty(t, bodies)
	for _, b := range bodies {
		require.NotContains(t, b, theSecret, "an answer the page read: %s", strings.SplitN(b, "\n", 2)[0])
	}
}

// TestCancelAndRerun: a running run is cancelled from its page and
// resumed from it; a completed run is re-run with pins chosen by
// clicking nodes, and the new run reuses their outputs.
func TestCancelAndRerun(t *testing.T) {
	t.Parallel()
	s := serve(t, nil)
	ctx := browser(t)
	id := s.start("hold")
	s.signIn(ctx)
	do(t, ctx, chromedp.Navigate(s.url+"/#/runs/"+id))
	until(t, ctx, `document.querySelector('g.node[data-node="nap"][data-status="running"]')`)
	do(t, ctx, chromedp.Click(`//button[text()="Cancel run"]`))
	until(t, ctx, `document.querySelector('section.run[data-status="cancelled"]')`)
	require.Equal(t, "cancelled", s.api("GET", "/api/runs/"+id, nil)["status"])
	require.NotEqual(t, "success", eval[string](t, ctx, `document.querySelector('g.node[data-node="after"]').dataset.status`))

	do(t, ctx, chromedp.Click(`//button[text()="Resume"]`))
	until(t, ctx, `document.querySelector('section.run[data-status="running"]')`)
	until(t, ctx, `document.querySelector('g.node[data-node="nap"][data-status="running"]')`)
	do(t, ctx, chromedp.Click(`//button[text()="Cancel run"]`))
	until(t, ctx, `document.querySelector('section.run[data-status="cancelled"]')`)

	// Re-run with a pin chosen on the graph: fetch is not run again.
	first := s.start("pins")
	do(t, ctx, chromedp.Navigate(s.url+"/#/runs/"+first))
	until(t, ctx, `document.querySelector('section.run[data-status="completed"]')`)
	do(t, ctx,
		chromedp.Click(`//button[text()="Choose pins"]`),
		chromedp.Click(`g.node[data-node="fetch"]`),
		chromedp.Click(`//button[text()="Done choosing pins"]`),
		chromedp.Click(`//button[normalize-space(.)="Re-run with 1 pinned"]`),
	)
	until(t, ctx, `(() => { const s = document.querySelector('section.run[data-status="completed"]'); return s && s.dataset.run !== "`+first+`"; })()`)
	until(t, ctx, `document.querySelector('g.node[data-node="report"][data-status="success"]')`)
	require.Equal(t, "pinned", eval[string](t, ctx, `document.querySelector('g.node[data-node="fetch"]').dataset.status`))
	second := eval[string](t, ctx, `document.querySelector("section.run").dataset.run`)
	require.Equal(t, s.api("GET", "/api/runs/"+first, nil)["outputs"], s.api("GET", "/api/runs/"+second, nil)["outputs"],
		"the re-run reports the pinned clock reading")
}

// sortedBy tells whether list keeps the order of order.
func sortedBy(list, order []string) bool {
	at := -1
	for _, x := range list {
		i := slices.Index(order, x)
		if i <= at {
			return false
		}
		at = i
	}
	return true

}
