package web_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// wide is a workflow of n nodes: a trigger and n-1 set nodes in 25
// chains.
func wide(name string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nname: %s\nnodes:\n  - {id: start, type: trigger.manual}\n", name)
	for i := range n - 1 {
		fmt.Fprintf(&b, "  - {id: n%d, type: set, values: {i: %d}}\n", i, i)
	}
	b.WriteString("edges:\n")
	for i := range n - 1 {
		from := "start"
		if i >= 25 {
			from = fmt.Sprintf("n%d", i-25)
		}
		fmt.Fprintf(&b, "  - {from: %s, to: n%d}\n", from, i)
	}
	return b.String()
}

// chains is a workflow of k chains of n wait nodes, each waiting d, that
// start when the node gate gets a signal: a run whose events come at a
// steady rate, k times that of one chain, when the test says.
func chains(name string, k, n int, d time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nname: %s\nnodes:\n  - {id: start, type: trigger.manual}\n  - {id: gate, type: wait, until: signal}\n", name)
	for c := range k {
		for i := range n {
			fmt.Fprintf(&b, "  - {id: c%d_%d, type: wait, duration: %s}\n", c, i, d)
		}
	}
	b.WriteString("edges:\n  - {from: start, to: gate}\n")
	for c := range k {
		fmt.Fprintf(&b, "  - {from: gate, to: c%d_0}\n", c)
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, "  - {from: c%d_%d, to: c%d_%d}\n", c, i-1, c, i)
		}
	}
	return b.String()
}

// ended waits for a run to end and returns it.
func (s *site) ended(id string) map[string]any {
	s.t.Helper()
	var run map[string]any
	require.Eventually(s.t, func() bool {
		run = s.api("GET", "/api/runs/"+id, nil)
		st := run["status"]
		return st != "running" && st != "pending"
	}, time.Minute, 20*time.Millisecond)
	return run
}

// finishes reads a run's events from its stream: node → the time of its
// last node_finished; and how many events the nodes named c… had, from
// the first to the last.
func (s *site) finishes(id string) (map[string]time.Time, int, time.Duration) {
	s.t.Helper()
	req, err := http.NewRequest("GET", s.url+"/api/runs/"+id+"/events", nil)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+s.token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer res.Body.Close()
	out := map[string]time.Time{}
	count := 0
	var first, last time.Time
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type string    `json:"type"`
			Node string    `json:"node"`
			Time time.Time `json:"time"`
			Seq  int64     `json:"seq"`
		}
		require.NoError(s.t, json.Unmarshal([]byte(data), &ev))
		if ev.Seq == 0 {
			continue // the end event
		}
		if ev.Type == "node_finished" {
			out[ev.Node] = ev.Time
		}
		if strings.HasPrefix(ev.Node, "c") {
			count++
			if first.IsZero() {
				first = ev.Time
			}
			last = ev.Time
		}
	}
	return out, count, last.Sub(first)
}

// TestLargeRun: the page of a run of 500 nodes renders completely (every
// badge drawn with its status) in headless Chromium and stays responsive;
// a run whose events come quickly is followed live. Its times (render
// ≤ 2 s, a panel < 500 ms after a click, events at 100/s or more followed
// with a p95 lag under 2 s) are targets checked with SKEIN_WEB_BENCH=1
// on a quiet machine, where BENCHMARKS.md's figures come from (go test -v
// prints them): a test run on a loaded machine asserts what the page
// shows, not how fast.
func TestLargeRun(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"wide.yaml": wide("wide", 500), "stream.yaml": chains("stream", 4, 50, 10*time.Millisecond)})
	ctx := browser(t)
	id := s.start("wide")
	require.Equal(t, "completed", s.ended(id)["status"])
	s.signIn(ctx)

	// Time to first complete render: from the navigation's start to the
	// frame in which all 500 badges show success, in a page loaded afresh
	// (a new query: not a hash change of the page signed in). The best of
	// three loads: the machine is shared with other tests.
	var renders []float64
	for i := range 3 {
		do(t, ctx, chromedp.Navigate(fmt.Sprintf("%s/?load=%d#/runs/%s", s.url, i, id)))
		ms, err := chromedp.Run(ctx, chromedp.Poll[float64](
			`document.querySelectorAll('g.node[data-status="success"]').length === 500 && performance.now()`,
			chromedp.WithPollingTimeout(30*time.Second)))
		require.NoError(t, err)
		renders = append(renders, ms)
	}
	ms := slices.Min(renders)
	t.Logf("500-node run page: first complete render %.0f ms after navigation start (best of %.0f)", ms, renders)
	bench := os.Getenv("SKEIN_WEB_BENCH") != ""
	if bench {
		require.LessOrEqual(t, ms, 2000.0, "a 500-node run page renders within 2 s")
	}

	// Responsive: selecting a node shows its panel at once.
	click := eval[float64](t, ctx, `new Promise(ok => {
		const t0 = performance.now();
		document.querySelector('g.node[data-node="n498"]').dispatchEvent(new MouseEvent("click", {bubbles: true}));
		const check = () => document.querySelector('section.panel[data-panel-node="n498"]') ? ok(performance.now() - t0) : requestAnimationFrame(check);
		check();
	})`)
	t.Logf("500-node run page: a node's panel shown %.0f ms after the click", click)
	if bench {
		require.Less(t, click, 500.0)
	}

	// Live: 4 chains of 50 nodes each waiting 10 ms, whose events come at
	// 100/s or more (also under the race detector), started by a signal
	// once the run's page is open; the page notes when each badge turns
	// success.
	sid := s.start("stream")
	do(t, ctx, chromedp.Navigate(s.url+"/#/runs/"+sid))
	until(t, ctx, `document.querySelector('g.node[data-node="gate"][data-status="waiting"]') && document.querySelectorAll('g.node[data-status="pending"]').length === 200`)
	eval[chromedp.Void](t, ctx, `(() => {
		window.doneAt = {};
		new MutationObserver((ms) => {
			const now = Date.now();
			for (const m of ms) if (m.target.dataset.status === "success" && !window.doneAt[m.target.dataset.node]) window.doneAt[m.target.dataset.node] = now;
		}).observe(document.querySelector("svg.graph"), {attributes: true, attributeFilter: ["data-status"], subtree: true});
	})()`)
	s.api("POST", "/api/runs/"+sid+"/signals/gate", map[string]any{})
	require.Equal(t, "completed", s.ended(sid)["status"])
	until(t, ctx, `document.querySelectorAll('g.node[data-node^="c"][data-status="success"]').length === 200`)
	doneAt := eval[map[string]int64](t, ctx, `window.doneAt`)
	finished, count, span := s.finishes(sid)
	var lags []time.Duration
	for node, at := range doneAt {
		if ft, ok := finished[node]; ok && strings.HasPrefix(node, "c") {
			lags = append(lags, time.UnixMilli(at).Sub(ft))
		}
	}
	require.Greater(t, len(lags), 150, "badges seen turning success live")
	slices.Sort(lags)
	rate := float64(count) / span.Seconds()
	t.Logf("live run of 4×50 nodes: %d events in %v (%.0f/s); badge lag behind the event: median %v, p95 %v, max %v",
		count, span.Round(time.Millisecond), rate, lags[len(lags)/2], lags[len(lags)*95/100], lags[len(lags)-1])
	if bench {
		require.GreaterOrEqual(t, rate, 100.0, "the run's events come at 100/s or more")
		require.Less(t, lags[len(lags)*95/100], 2*time.Second, "the page follows the events")
		fmt.Printf("render_ms=%.0f click_ms=%.0f events=%d rate=%.0f lag_median=%v lag_p95=%v lag_max=%v\n",
			ms, click, count, rate, lags[len(lags)/2], lags[len(lags)*95/100], lags[len(lags)-1])
	}
}

// TestLargeEditor: the editor opens a workflow of 200 nodes, its graph
// drawn and its text validated, and stays responsive: a node added from
// the palette is applied, re-validated and drawn. Its times (first render
// ≤ 1 s, an edit ≤ 200 ms) are targets checked with SKEIN_WEB_BENCH=1 on
// a quiet machine, as TestLargeRun's are; go test -v prints them.
func TestLargeEditor(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"big.yaml": wide("big", 200)})
	ctx := browser(t)
	s.signIn(ctx)

	// First render: from the navigation's start to the frame in which all
	// 200 nodes are drawn and the text is known valid, in a page loaded
	// afresh. The best of three loads.
	var renders []float64
	for i := range 3 {
		do(t, ctx, chromedp.Navigate(fmt.Sprintf("%s/?load=%d#/workflows/big/edit", s.url, i)))
		ms, err := chromedp.Run(ctx, chromedp.Poll[float64](
			`document.querySelectorAll('g.node').length === 200 && document.querySelector("section.editor").dataset.valid === "true" && performance.now()`,
			chromedp.WithPollingTimeout(30*time.Second)))
		require.NoError(t, err)
		renders = append(renders, ms)
	}
	render := slices.Min(renders)
	t.Logf("200-node editor: first render and validation %.0f ms after navigation start (best of %.0f)", render, renders)

	// An edit: with n150 selected, a click on the palette's set adds
	// set_k after it (without its values: the text is then invalid);
	// timed from the click to the frame in which the new node is drawn and
	// the text it is in has been validated.
	// The best of three edits.
	selectNode(t, ctx, "n150")
	var edits []float64
	for k := 1; k <= 3; k++ {
		ms := eval[float64](t, ctx, fmt.Sprintf(`new Promise(ok => {
			const t0 = performance.now();
			document.querySelector('button.kind[data-kind="set"]').click();
			const check = () => document.querySelector('g.node[data-node="set_%d"]') && document.querySelector("section.editor").dataset.valid !== "" ? ok(performance.now() - t0) : requestAnimationFrame(check);
			check();
		})`, k))
		edits = append(edits, ms)
		until(t, ctx, fmt.Sprintf(`document.querySelector('section.node-panel[data-panel-node="set_%d"]')`, k))
		selectNode(t, ctx, "n150")
	}
	edit := slices.Min(edits)
	t.Logf("200-node editor: a node added, validated and drawn %.0f ms after the click (best of %.0f)", edit, edits)
	require.Equal(t, 203, eval[int](t, ctx, `document.querySelectorAll('g.node').length`), "the three nodes were added")
	if os.Getenv("SKEIN_WEB_BENCH") != "" {
		require.LessOrEqual(t, render, 1000.0, "a 200-node workflow opens in the editor within 1 s")
		require.LessOrEqual(t, edit, 200.0, "an edit is validated and drawn within 200 ms")
		fmt.Printf("editor_render_ms=%.0f editor_edit_ms=%.0f\n", render, edit)
	}
}
