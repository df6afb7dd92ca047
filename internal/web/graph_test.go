package web_test

import (
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// box is an element's place on the screen.
type box struct{ Left, Top, Right, Bottom float64 }

// TestGraphFitsAndZooms: a graph wider than its pane (testdata/flows/
// live.yaml, ten nodes from left to right) opens scaled to show every
// node; the buttons and the wheel zoom, Fit shows it whole again, and
// dragging the background pans.
func TestGraphFitsAndZooms(t *testing.T) {
	t.Parallel()
	s := serve(t, nil)
	ctx := browser(t)
	s.signIn(ctx)
	id := s.start("live")
	// The run waits for a signal, and the page says so in a line above
	// the graph; wait for that line, so that the buttons stay where a
	// click is aimed (under load it came between aiming and clicking,
	// and the click fell on the line instead).
	do(t, ctx, chromedp.Navigate(s.url+"/#/runs/"+id), chromedp.WaitVisible(`g.node[data-node="probe"]`), chromedp.WaitVisible(`p.hint`))

	rect := func(sel string) box {
		return eval[box](t, ctx, `(() => { const r = document.querySelector(`+"`"+sel+"`"+`).getBoundingClientRect(); return {Left: r.left, Top: r.top, Right: r.right, Bottom: r.bottom}; })()`)
	}
	level := func() string { return eval[string](t, ctx, `document.querySelector(".zoom-level").textContent`) }
	allInside := func() bool {
		return eval[bool](t, ctx, `(() => {
			const p = document.querySelector("svg.graph").getBoundingClientRect();
			return [...document.querySelectorAll("g.node")].every(g => {
				const r = g.getBoundingClientRect();
				return r.left >= p.left - 0.5 && r.right <= p.right + 0.5 && r.top >= p.top - 0.5 && r.bottom <= p.bottom + 0.5;
			});
		})()`)
	}

	// On open: every node in the pane, scaled down.
	require.True(t, allInside(), "every node of the graph is inside its pane")
	fitted := level()
	require.Regexp(t, `^[1-9][0-9]%$`, fitted, "the graph is scaled down to fit")

	// The buttons zoom in and out by a quarter; Fit shows it whole again.
	isLevel := func(want string) string {
		return `document.querySelector(".zoom-level").textContent === "` + want + `"`
	}
	do(t, ctx, chromedp.Click(`button[aria-label="Zoom in"]`))
	until(t, ctx, `!(`+isLevel(fitted)+`)`)
	require.False(t, allInside(), "zoomed in, the graph no longer fits")
	do(t, ctx, chromedp.Click(`button[aria-label="Zoom out"]`))
	until(t, ctx, isLevel(fitted))
	do(t, ctx, chromedp.Click(`button[aria-label="Zoom in"]`))
	until(t, ctx, `!(`+isLevel(fitted)+`)`)
	do(t, ctx, chromedp.Click(`//button[text()="Fit"]`))
	until(t, ctx, isLevel(fitted))
	require.True(t, allInside())

	// Dragging the background pans: the nodes move with the pointer.
	pane := rect("svg.graph")
	cx, cy := (pane.Left+pane.Right)/2, (pane.Top+pane.Bottom)/2
	before := rect(`g.node[data-node="start"]`)
	y := pane.Bottom - 3 // the margin below the nodes: the background
	do(t, ctx,
		chromedp.MouseEvent(chromedp.MousePressed, cx, y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
		chromedp.MouseEvent(chromedp.MouseMoved, cx+60, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseMoved, cx+120, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseReleased, cx+120, y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
	)
	after := rect(`g.node[data-node="start"]`)
	require.InDelta(t, before.Left+120, after.Left, 2, "the graph moved right with the pointer")
	require.InDelta(t, before.Top, after.Top, 2)

	// The wheel zooms in (the protocol wants both deltas, and drops a
	// zero one).
	do(t, ctx, chromedp.MouseEvent(chromedp.MouseWheel, cx, cy, func(p *input.DispatchMouseEventParams) { p.DeltaX, p.DeltaY = 1, -120 }))
	until(t, ctx, `parseInt(document.querySelector(".zoom-level").textContent) > parseInt("`+fitted+`")`)
}
