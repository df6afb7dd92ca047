package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// unwired is a workflow whose nodes are not connected yet: the editor's
// handles connect them.
const unwired = `version: 1
name: wire
nodes:
  - id: start
    type: trigger.manual
  - id: work
    type: shell
    command: [echo, "42"]
  - id: branch
    type: if
    condition: trim(work.stdout) == "42"
  - id: yes
    type: template
    text: "yes"
  - id: no
    type: template
    text: "no"
`

// draftJS is a JavaScript expression of the editor's text of the
// workflow.
const draftJS = yamlText

// draftText is the editor's text of the workflow.
func draftText(t *testing.T, ctx context.Context) string {
	t.Helper()
	return eval[string](t, ctx, draftJS)
}

// handleSel is the dot of handle h of node id on the graph.
func handleSel(id, h string) string {
	return fmt.Sprintf(`g.hnd[data-node-handle=%q][data-handle=%q] circle.dot`, id, h)
}

// edgeSel is the graph's edge from → to on handle h.
func edgeSel(from, to, h string) string {
	return fmt.Sprintf(`g.edge[data-from=%q][data-to=%q][data-on=%q]`, from, to, h)
}

// dragHandle drags handle h of node from onto node to with the mouse and
// waits for the edge.
func dragHandle(t *testing.T, ctx context.Context, from, h, to string) {
	t.Helper()
	// As a person drags: once the page is still (the check of the draft
	// after an edit redraws its diagnostics, which moves what is below
	// them), pressed on the handle where it shows, then moved toward the
	// node as the pointer goes (read again before each move), released on
	// it. Each point is one the page answers with the element itself
	// (hitPoint): a point of the node another element covers, or one
	// outside the window, would drop on nothing.
	// A drop that missed (the graph moved under the pointer after all, on
	// a loaded machine) is dragged again, as a person would: the drag is
	// over once its wire is gone and the edit it made, if any, is answered
	// (the editor is not busy). Each miss is described in the failure.
	handle := handleSel(from, h)
	target := fmt.Sprintf(`g.node[data-node=%q] rect.box`, to)
	edge := fmt.Sprintf(`!!document.querySelector(%q)`, edgeSel(from, to, h))
	var misses []string
	for attempt := 1; ; attempt++ {
		until(t, ctx, settled)
		eval[chromedp.Void](t, ctx, fmt.Sprintf(`document.querySelector(%q)?.scrollIntoView({block: "nearest", inline: "nearest"})`, target))
		eval[chromedp.Void](t, ctx, fmt.Sprintf(`document.querySelector(%q)?.scrollIntoView({block: "nearest", inline: "nearest"})`, handle))
		p0, p1 := hitPoint(t, ctx, handle, "g.hnd"), hitPoint(t, ctx, target, "g.node")
		if p0.X < 0 || p1.X < 0 {
			misses = append(misses, fmt.Sprintf("attempt %d: the handle at %s, the node at %s", attempt, p0.What, p1.What))
			require.Less(t, attempt, 5, "dragging handle %s of %s onto %s: %s", h, from, to, strings.Join(misses, "; "))
			continue
		}
		buttons := func(p *input.DispatchMouseEventParams) { p.Buttons = 1 }
		do(t, ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, p0.X, p0.Y, chromedp.ButtonLeft, buttons, chromedp.ClickCount(1)))
		wired := eval[bool](t, ctx, `!!document.querySelector("g.wire")`)
		for i := 1; i <= 5; i++ {
			p1 = hitPoint(t, ctx, target, "g.node")
			if p1.X < 0 {
				break
			}
			f := float64(i) / 5
			x, y := p0.X+(p1.X-p0.X)*f, p0.Y+(p1.Y-p0.Y)*f
			do(t, ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, y, chromedp.ButtonLeft, buttons))
		}
		p1 = hitPoint(t, ctx, target, "g.node")
		x, y := p1.X, p1.Y
		if x < 0 {
			x, y = p0.X, p0.Y // released where it began: no edge
		}
		do(t, ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, y, chromedp.ButtonLeft, buttons),
			chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x, y, chromedp.ButtonLeft, chromedp.ClickCount(1)))
		until(t, ctx, `!document.querySelector("g.wire") && document.querySelector("section.editor").getAttribute("aria-busy") !== "true"`)
		if eval[bool](t, ctx, edge) {
			return
		}
		misses = append(misses, fmt.Sprintf("attempt %d: pressed at (%.0f, %.0f), a wire: %t; released at (%.0f, %.0f) on %s",
			attempt, p0.X, p0.Y, wired, x, y, p1.What))
		require.Less(t, attempt, 5, "dragging handle %s of %s onto %s made no edge: %s", h, from, to, strings.Join(misses, "; "))
	}
}

// point is a page point (X < 0: none), and what the page has there.
type point struct {
	X, Y float64
	What string
}

// hitPoint is a point of the element sel, within the window, where the
// page answers with it (its closest ancestor want is sel's): its middle
// when that is so, else another of a grid over its box. It waits a few
// seconds for one (a page redrawn under a panel's change); with none, X
// is -1 and What says what covers its middle.
func hitPoint(t *testing.T, ctx context.Context, sel, want string) point {
	t.Helper()
	js := fmt.Sprintf(`((sel, want) => {
		const el = document.querySelector(sel);
		if (!el) return {X: -1, Y: -1, What: "nothing: " + sel + " is not on the page"};
		const owner = el.closest(want), r = el.getBoundingClientRect();
		const fs = [0.5, 0.35, 0.65, 0.2, 0.8];
		for (const fy of fs) for (const fx of fs) {
			const x = r.x + r.width * fx, y = r.y + r.height * fy;
			if (x < 0 || y < 0 || x >= innerWidth || y >= innerHeight) continue;
			const at = document.elementFromPoint(x, y);
			if (at && at.closest(want) === owner) return {X: x, Y: y, What: want};
		}
		const x = r.x + r.width / 2, y = r.y + r.height / 2, at = document.elementFromPoint(x, y);
		const what = at ? at.outerHTML.slice(0, 160) : "outside the window " + innerWidth + "x" + innerHeight;
		return {X: -1, Y: -1, What: "(" + Math.round(x) + ", " + Math.round(y) + "): " + what};
	})(%q, %q)`, sel, want)
	if p, err := chromedp.Run(ctx, chromedp.Poll[point](`(p => p.X >= 0 ? p : null)(`+js+`)`, chromedp.WithPollingTimeout(5*time.Second))); err == nil {
		return p
	}
	return eval[point](t, ctx, js)
}

// center is the page point at the middle of the element sel.
func center(t *testing.T, ctx context.Context, sel string) (x, y float64) {
	t.Helper()
	p := eval[[]float64](t, ctx, fmt.Sprintf(`(r => [r.x + r.width / 2, r.y + r.height / 2])(document.querySelector(%q).getBoundingClientRect())`, sel))
	return p[0], p[1]
}

// settled is true once the editor's draft is checked: nothing is
// waiting to redraw the page.
const settled = `document.querySelector("section.editor").dataset.valid !== ""`

// touchDrag drags handle h of node from onto node to with a finger.
func touchDrag(t *testing.T, ctx context.Context, from, h, to string) {
	t.Helper()
	until(t, ctx, settled)
	x0, y0 := center(t, ctx, handleSel(from, h))
	x1, y1 := center(t, ctx, fmt.Sprintf(`g.node[data-node=%q] rect.box`, to))
	touch := func(typ input.DispatchTouchEventType, x, y float64) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			pts := []*input.TouchPoint{{X: x, Y: y}}
			if typ == input.DispatchTouchEventTypeTouchEnd {
				pts = []*input.TouchPoint{}
			}
			_, err := cdp.Call(ctx, tg, input.DispatchTouchEvent, input.DispatchTouchEventParams{Type: typ, TouchPoints: pts})
			return err
		})
	}
	steps := []chromedp.Action[chromedp.Void]{touch(input.DispatchTouchEventTypeTouchStart, x0, y0)}
	for i := 1; i <= 5; i++ {
		f := float64(i) / 5
		steps = append(steps, touch(input.DispatchTouchEventTypeTouchMove, x0+(x1-x0)*f, y0+(y1-y0)*f))
	}
	steps = append(steps, touch(input.DispatchTouchEventTypeTouchEnd, x1, y1))
	do(t, ctx, steps...)
	until(t, ctx, fmt.Sprintf(`!!document.querySelector(%q)`, edgeSel(from, to, h)))
}

// TestEditorConnectsByDragging: each node shows the handles its kind has
// (an if's true and false); dragging a handle onto a node connects them,
// with the mouse or a finger. start → work → branch, branch's true to yes
// and false to no, saved: the file validates and runs the true branch.
func TestEditorConnectsByDragging(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"wire.yaml": unwired})
	ctx := browser(t)
	s.signIn(ctx)
	openEditor(t, ctx, s, "wire", "work")
	until(t, ctx, `document.querySelectorAll('g.hnd[data-node-handle="branch"]').length === 2`)
	require.Equal(t, []string{"true", "false"}, eval[[]string](t, ctx, `[...document.querySelectorAll('g.hnd[data-node-handle="branch"]')].map(g => g.dataset.handle)`), "an if's handles")
	require.Equal(t, []string{"true", "false"}, eval[[]string](t, ctx, `[...document.querySelectorAll('g.hnd[data-node-handle="branch"] text')].map(g => g.textContent)`), "labelled")
	require.Equal(t, []string{""}, eval[[]string](t, ctx, `[...document.querySelectorAll('g.hnd[data-node-handle="work"]')].map(g => g.dataset.handle)`), "an action without on_error: route has its default handle only")

	dragHandle(t, ctx, "start", "", "work")
	touchDrag(t, ctx, "work", "", "branch")
	dragHandle(t, ctx, "branch", "true", "yes")
	dragHandle(t, ctx, "branch", "false", "no")
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)
	require.True(t, strings.HasPrefix(draftText(t, ctx), unwired), "the nodes' text is kept: %s", draftText(t, ctx))
	require.Contains(t, draftText(t, ctx), "edges:\n")
	for _, e := range []string{"from: start, to: work", "from: work, to: branch", "from: branch, to: yes, on: \"true\"", "from: branch, to: no, on: \"false\""} {
		require.Contains(t, draftText(t, ctx), e)
	}
	axe(t, ctx, "editor with handles")
	screenshot(t, ctx, "editor-handles")

	do(t, ctx, chromedp.Click("button.save"))
	until(t, ctx, `document.querySelector("section.editor").dataset.dirty === "false"`)
	wf, ds := workflow.Load(filepath.Join(s.flows, "wire.yaml"), node.Default)
	require.False(t, ds.HasErrors(), "the saved file validates: %v", ds)
	require.Len(t, wf.Edges, 4)
	id := s.start("wire")
	until(t, ctx, `fetch("/api/runs/`+id+`").then(r => r.json()).then(d => d.status === "completed")`)
	ran := map[string]string{}
	for _, st := range s.api("GET", "/api/runs/"+id, nil)["steps"].([]any) {
		m := st.(map[string]any)
		ran[m["node"].(string)] = m["status"].(string)
	}
	require.Equal(t, "success", ran["yes"], "the true branch ran: %v", ran)
	require.NotEqual(t, "success", ran["no"], "the false branch did not: %v", ran)
}

// listFocused is true once the picker's list of targets has the focus.
const listFocused = `document.activeElement && document.activeElement.id === "cp-to"`

// TestEditorConnectsByKeyboard: a selected node's handles take the focus;
// Enter on one offers the nodes to connect it to; Connect adds the edge.
// An edge is removed from the node's Connections, or selected with a
// click and removed with Delete.
func TestEditorConnectsByKeyboard(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"wire.yaml": unwired})
	ctx := browser(t)
	s.signIn(ctx)
	openEditor(t, ctx, s, "wire", "work")
	until(t, ctx, `document.querySelectorAll('g.hnd[data-node-handle="branch"]').length === 2`)
	require.Equal(t, 0, eval[int](t, ctx, `[...document.querySelectorAll("g.hnd")].filter(g => g.tabIndex === 0).length`), "no handle is a tab stop before its node is selected")

	// Select branch, Tab to its handle "true", Enter: the picker.
	do(t, ctx, chromedp.Focus(`g.node[data-node="branch"]`), pressEnter(), chromedp.WaitVisible(`section.node-panel[data-panel-node="branch"]`))
	do(t, ctx, chromedp.Focus(`g.node[data-node="branch"]`), chromedp.KeyEvent("\t"))
	require.Equal(t, "branch/true", eval[string](t, ctx, `(e => e.dataset.nodeHandle + "/" + e.dataset.handle)(document.activeElement)`))
	require.Contains(t, eval[string](t, ctx, `document.activeElement.getAttribute("aria-label")`), "connect branch from handle true")
	do(t, ctx, pressEnter(), chromedp.WaitVisible("#cp-to"))
	// The picker gives its list the focus once it is drawn (an effect that
	// runs after the list is visible).
	until(t, ctx, listFocused)
	require.Equal(t, []string{"start", "work", "yes", "no"}, eval[[]string](t, ctx, `[...document.querySelectorAll("#cp-to option")].map(o => o.value)`))
	axe(t, ctx, "editor connecting by keyboard")
	// "y" picks "yes", then Tab to Connect, Enter. The key is pressed
	// again while the list has not taken it (on a loaded machine a key
	// can reach the list before it takes keys; "yes" is the only target
	// that starts with "y", so pressing it again stays there).
	pressUntil(t, ctx, `document.querySelector("#cp-to").value === "yes"`, chromedp.Focus("#cp-to"), chromedp.KeyEvent("y"))
	do(t, ctx, chromedp.KeyEvent("\t"), pressEnter())
	until(t, ctx, `!!document.querySelector('`+edgeSel("branch", "yes", "true")+`')`)
	require.False(t, eval[bool](t, ctx, `!!document.querySelector("#cp-to")`), "the picker is closed")
	require.Contains(t, draftText(t, ctx), `  - {from: branch, to: yes, on: "true"}`)

	// Escape closes the picker, and the focus is back on the handle.
	do(t, ctx, chromedp.Focus(`g.hnd[data-node-handle="branch"][data-handle="false"]`), pressSpace(), chromedp.WaitVisible("#cp-to"))
	until(t, ctx, listFocused) // the picker takes Escape where it has the focus
	// Escape is pressed again while the picker is open: on a loaded
	// machine a key can reach the list before it takes keys, as with "y"
	// above. Once it is closed, no more is pressed.
	pressUntil(t, ctx, `!document.querySelector("#cp-to")`, chromedp.KeyEvent(kb.Escape))
	require.Equal(t, "false", eval[string](t, ctx, `document.activeElement.dataset.handle`))

	// The node's Connections: Remove by keyboard.
	until(t, ctx, `!!document.querySelector('.connections li[data-edge-to="yes"] button')`)
	do(t, ctx, chromedp.Focus(`.connections li[data-edge-to="yes"] button`), pressEnter())
	until(t, ctx, `!document.querySelector('`+edgeSel("branch", "yes", "true")+`')`)
	require.NotContains(t, draftText(t, ctx), "to: yes")

	// An edge clicked is selected; Delete removes it. The edge is made
	// with the picker, as above ("n" picks "no"): TestEditorConnectsByDragging
	// drags the same one, and here branch's panel is open beside the graph.
	do(t, ctx, chromedp.Focus(`g.hnd[data-node-handle="branch"][data-handle="false"]`), pressSpace(), chromedp.WaitVisible("#cp-to"))
	until(t, ctx, listFocused)
	pressUntil(t, ctx, `document.querySelector("#cp-to").value === "no"`, chromedp.Focus("#cp-to"), chromedp.KeyEvent("n"))
	do(t, ctx, chromedp.KeyEvent("\t"), pressEnter())
	until(t, ctx, `!!document.querySelector('`+edgeSel("branch", "no", "false")+`')`)
	// A click on the edge's line (where the graph may still be settling
	// after the edit, so not at a page point).
	eval[chromedp.Void](t, ctx, `document.querySelector('`+edgeSel("branch", "no", "false")+` path.hit').dispatchEvent(new MouseEvent("click", {bubbles: true}))`)
	until(t, ctx, `!!document.querySelector(".edge-bar") && document.activeElement.textContent === "Remove edge"`)
	require.Contains(t, eval[string](t, ctx, `document.querySelector(".edge-bar").innerText`), "branch → no (false)")
	require.True(t, eval[bool](t, ctx, `document.querySelector('`+edgeSel("branch", "no", "false")+`').classList.contains("selected")`))
	do(t, ctx, chromedp.KeyEvent(kb.Delete))
	until(t, ctx, `!document.querySelector('`+edgeSel("branch", "no", "false")+`')`)
	require.NotContains(t, draftText(t, ctx), "to: no")
	require.False(t, eval[bool](t, ctx, `!!document.querySelector(".edge-bar")`))
}

// TestEditorRenamesANode: Rename gives the node a new id, checked as the
// validator checks ids; the edges and the templates that name it follow,
// and the graph keeps it selected under its new id.
func TestEditorRenamesANode(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"report.yaml": commented})
	ctx := browser(t)
	s.signIn(ctx)
	openEditor(t, ctx, s, "report", "build")
	selectNode(t, ctx, "build")
	do(t, ctx, chromedp.Click(`button.rename`), chromedp.WaitVisible("#rename-to"))
	until(t, ctx, `document.activeElement.id === "rename-to"`) // focused once drawn
	for _, c := range []struct{ id, says string }{
		{"Make", "lower-case letters"},
		{"1make", "does not start with a digit"},
		{strings.Repeat("m", 65), "at most 64"},
		{"tell", "already there"},
	} {
		eval[chromedp.Void](t, ctx, `document.querySelector("#rename-to").removeAttribute("maxlength")`)
		fill(t, ctx, "#rename-to", c.id)
		do(t, ctx, chromedp.Click(`form.rename button[type="submit"]`))
		until(t, ctx, `!!document.querySelector("#rename-err")`)
		require.Contains(t, eval[string](t, ctx, `document.querySelector("#rename-err").textContent`), c.says, c.id)
	}
	require.Equal(t, commented, draftText(t, ctx), "a refused id changes nothing")
	axe(t, ctx, "editor renaming")

	fill(t, ctx, "#rename-to", "make")
	do(t, ctx, pressEnter())
	do(t, ctx, chromedp.WaitVisible(`section.node-panel[data-panel-node="make"]`))
	require.Equal(t, "true", eval[string](t, ctx, `document.querySelector('g.node[data-node="make"]').getAttribute("aria-pressed")`), "still selected")
	require.False(t, eval[bool](t, ctx, `!!document.querySelector('g.node[data-node="build"]')`))
	want := strings.NewReplacer("  - id: build\n", "  - id: make\n", "{from: start, to: build}", "{from: start, to: make}",
		"{from: build, to: tell}", "{from: make, to: tell}", "{{ build.stdout }}", "{{ make.stdout }}").Replace(commented)
	require.Equal(t, want, draftText(t, ctx), "the id and its references change, nothing else")
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)
}

// TestEditorExpectAndChecks: the Checks hold the node's expect — added,
// changed, removed — and its typed checks, each edited in place.
func TestEditorExpectAndChecks(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"report.yaml": commented})
	ctx := browser(t)
	s.signIn(ctx)
	openEditor(t, ctx, s, "report", "build")
	selectNode(t, ctx, "build")
	require.Contains(t, eval[string](t, ctx, `document.querySelector("#expect-build-d").textContent`), "This node has none")

	fill(t, ctx, "#expect-build", "The build says it built")
	do(t, ctx, chromedp.Click(`//button[text()="Add expect"]`))
	until(t, ctx, draftJS+`.includes("    expect: The build says it built\n")`)
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)
	do(t, ctx, chromedp.WaitVisible(`//button[text()="Save expect"]`))
	require.Equal(t, "The build says it built", eval[string](t, ctx, `document.querySelector("#expect-build").value`))

	fill(t, ctx, "#expect-build", "The build said built")
	do(t, ctx, chromedp.Click(`//button[text()="Save expect"]`))
	until(t, ctx, draftJS+`.includes("    expect: The build said built\n")`)
	require.NotContains(t, draftText(t, ctx), "it built")

	// A check, then edited in place: its on_fail and its expression.
	fill(t, ctx, "#check-args", `expr: "build.exit_code == 0"`)
	do(t, ctx, chromedp.Click(`//button[text()="Add check"]`))
	until(t, ctx, `document.querySelectorAll(".node-checks li[data-check]").length === 1`)
	require.Contains(t, draftText(t, ctx), "      - type: expr\n        expr: build.exit_code == 0\n        on_fail: fail\n")
	do(t, ctx, chromedp.Click(`//button[@aria-label="Edit check 1"]`), chromedp.WaitVisible("#check-0-args"))
	require.Equal(t, "expr", eval[string](t, ctx, `document.querySelector("#check-0-type").value`))
	require.Equal(t, `{"expr":"build.exit_code == 0"}`, eval[string](t, ctx, `document.querySelector("#check-0-args").value`))
	require.Equal(t, "fail", eval[string](t, ctx, `document.querySelector("#check-0-onfail").value`))
	axe(t, ctx, "editor editing a check")
	fill(t, ctx, "#check-0-onfail", "warn")
	fill(t, ctx, "#check-0-args", `expr: "build.exit_code < 2"`)
	do(t, ctx, chromedp.Click(`//button[text()="Save check"]`))
	until(t, ctx, draftJS+`.includes("        on_fail: warn\n")`)
	require.Contains(t, draftText(t, ctx), "      - type: expr\n        expr: build.exit_code < 2\n        on_fail: warn\n")
	require.False(t, eval[bool](t, ctx, `!!document.querySelector("#check-0-args")`), "the form closes")
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)

	do(t, ctx, chromedp.Click(`//button[text()="Remove expect"]`))
	until(t, ctx, `!`+draftJS+`.includes("expect:")`)
	until(t, ctx, `document.querySelector("#expect-build").value === ""`)
	do(t, ctx, chromedp.WaitVisible(`//button[text()="Add expect"]`))
}

// TestEditorCompletesTemplates: typing {{ in a template field lists the
// nodes upstream, trigger and the inputs; after node. the ports its kind
// declares. Arrows move, Enter takes, Escape closes.
func TestEditorCompletesTemplates(t *testing.T) {
	t.Parallel()
	withInputs := strings.Replace(commented, "nodes:\n", "inputs:\n  who: {type: string, default: World}\nnodes:\n", 1)
	s := serve(t, map[string]string{"report.yaml": withInputs})
	ctx := browser(t)
	s.signIn(ctx)
	openEditor(t, ctx, s, "report", "build")
	selectNode(t, ctx, "tell")
	const field = "#p-tell-text"
	require.Equal(t, "combobox", eval[string](t, ctx, `document.querySelector("`+field+`").getAttribute("role")`))
	require.Equal(t, "false", eval[string](t, ctx, `document.querySelector("`+field+`").getAttribute("aria-expanded")`))
	options := func() []string {
		return eval[[]string](t, ctx, `[...document.querySelectorAll("#p-tell-text-complete [role=option]")].map(o => o.dataset.option)`)
	}
	// Empty the field without writing it, then type.
	eval[chromedp.Void](t, ctx, `(e => { e.focus(); e.value = ""; e.dispatchEvent(new Event("input", {bubbles: true})) })(document.querySelector("`+field+`"))`)
	do(t, ctx, chromedp.SendKeys(field, "got {{ "))
	until(t, ctx, `!document.querySelector("#p-tell-text-complete").hidden`)
	require.Equal(t, []string{"start", "build", "trigger", "inputs.who"}, options(), "the nodes upstream, trigger, the inputs")
	require.Equal(t, "true", eval[string](t, ctx, `document.querySelector("`+field+`").getAttribute("aria-expanded")`))
	axe(t, ctx, "editor completing a template")

	do(t, ctx, chromedp.SendKeys(field, "b"))
	until(t, ctx, `document.querySelectorAll("#p-tell-text-complete [role=option]").length === 1`)
	require.Equal(t, []string{"build"}, options())
	require.Equal(t, "p-tell-text-complete-0", eval[string](t, ctx, `document.querySelector("`+field+`").getAttribute("aria-activedescendant")`))
	do(t, ctx, pressEnter())
	until(t, ctx, `document.querySelector("`+field+`").value === "got {{ build."`)
	until(t, ctx, `document.querySelectorAll("#p-tell-text-complete [role=option]").length === 5`)
	require.Equal(t, []string{"stdout", "stderr", "exit_code", "json", "truncated"}, options(), "the shell kind's ports")
	do(t, ctx, chromedp.KeyEvent(kb.ArrowDown))
	until(t, ctx, `document.querySelector("`+field+`").getAttribute("aria-activedescendant") === "p-tell-text-complete-1"`)
	require.Equal(t, "true", eval[string](t, ctx, `document.querySelector("#p-tell-text-complete-1").getAttribute("aria-selected")`))
	do(t, ctx, pressEnter())
	until(t, ctx, `document.querySelector("`+field+`").value === "got {{ build.stderr"`)
	require.True(t, eval[bool](t, ctx, `document.querySelector("#p-tell-text-complete").hidden`), "a port ends the list")
	require.NotContains(t, draftText(t, ctx), "got {{", "taking an option does not write the text")

	// Escape closes the list; the field is written when left.
	do(t, ctx, chromedp.SendKeys(field, " }} and {{ inp"))
	until(t, ctx, `!document.querySelector("#p-tell-text-complete").hidden`)
	require.Equal(t, []string{"inputs.who"}, options())
	do(t, ctx, chromedp.KeyEvent(kb.Escape))
	until(t, ctx, `document.querySelector("#p-tell-text-complete").hidden`)
	do(t, ctx, chromedp.SendKeys(field, "uts.who }}"), chromedp.KeyEvent("\t"))
	until(t, ctx, draftJS+`.includes("got {{ build.stderr }} and {{ inputs.who }}")`)
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)

	// A node with nothing upstream but the trigger's payload and inputs.
	selectNode(t, ctx, "build")
	require.Equal(t, "textarea", eval[string](t, ctx, `document.querySelector("#p-build-command").tagName.toLowerCase()`))
	do(t, ctx, chromedp.Click("#p-build-cwd"), chromedp.SendKeys("#p-build-cwd", "{{ "))
	until(t, ctx, `!document.querySelector("#p-build-cwd-complete").hidden`)
	require.Equal(t, []string{"start", "trigger", "inputs.who"}, eval[[]string](t, ctx, `[...document.querySelectorAll("#p-build-cwd-complete [role=option]")].map(o => o.dataset.option)`))
}

// TestEditorWarnsBeforeLeaving: with changes not saved, a link out of the
// editor asks first: Stay keeps the draft, Leave goes; the tab's closing
// is asked by the browser (beforeunload). Saved, nothing is asked.
func TestEditorWarnsBeforeLeaving(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"report.yaml": commented})
	ctx := browser(t)
	s.signIn(ctx)
	openEditor(t, ctx, s, "report", "build")
	unloadAsks := `(() => { const e = new Event("beforeunload", {cancelable: true}); dispatchEvent(e); return e.defaultPrevented })()`
	require.False(t, eval[bool](t, ctx, unloadAsks), "nothing to lose")
	selectNode(t, ctx, "build")
	fill(t, ctx, "#p-build-max_output", "100")
	until(t, ctx, `document.querySelector("section.editor").dataset.dirty === "true"`)
	require.True(t, eval[bool](t, ctx, unloadAsks), "closing the tab asks")

	const open = `.ed-bar a[href="#/workflows/report"]`
	do(t, ctx, chromedp.Click(open), chromedp.WaitVisible(`.leave-guard`))
	require.Equal(t, "#/workflows/report/edit", eval[string](t, ctx, `location.hash`), "the page stays until answered")
	// Its answer that keeps the draft takes the focus once it is drawn.
	until(t, ctx, `document.activeElement.textContent === "Stay"`)
	axe(t, ctx, "editor asking before leaving")
	do(t, ctx, chromedp.Click(`//div[contains(@class,"leave-guard")]//button[text()="Stay"]`))
	until(t, ctx, `!document.querySelector(".leave-guard")`)
	require.Contains(t, draftText(t, ctx), "max_output: 100", "the draft is kept")
	require.True(t, eval[bool](t, ctx, `!!document.querySelector('section.node-panel[data-panel-node="build"]')`), "the editor is as it was")

	do(t, ctx, chromedp.Click(open), chromedp.WaitVisible(`.leave-guard`))
	do(t, ctx, chromedp.Click(`//div[contains(@class,"leave-guard")]//button[text()="Leave"]`))
	until(t, ctx, `location.hash === "#/workflows/report" && !document.querySelector("section.editor")`)

	// Saved: leaving asks nothing.
	openEditor(t, ctx, s, "report", "build")
	selectNode(t, ctx, "build")
	fill(t, ctx, "#p-build-max_output", "200")
	until(t, ctx, draftJS+`.includes("max_output: 200") && document.querySelector("section.editor").dataset.valid === "true"`)
	do(t, ctx, chromedp.Click("button.save"))
	until(t, ctx, `document.querySelector("section.editor").dataset.dirty === "false"`)
	do(t, ctx, chromedp.Click(open))
	until(t, ctx, `location.hash === "#/workflows/report" && !document.querySelector("section.editor")`)
	require.False(t, eval[bool](t, ctx, unloadAsks))
}

// TestEditorSaveRefused: the draft validated when it was typed, but the
// child workflow it runs is deleted before Save: the server's validation
// refuses it (422), the page says "Not saved" with the server's
// diagnostic, Save is disabled, and the file is not written.
func TestEditorSaveRefused(t *testing.T) {
	t.Parallel()
	parent := `version: 1
name: parent
nodes:
  - {id: start, type: trigger.manual}
  - {id: child, type: subworkflow, workflow: child.yaml}
edges:
  - {from: start, to: child}
`
	child := "version: 1\nname: child\nnodes:\n  - {id: start, type: trigger.manual}\n"
	s := serve(t, map[string]string{"parent.yaml": parent, "child.yaml": child})
	ctx := browser(t)
	s.signIn(ctx)
	openEditor(t, ctx, s, "parent", "child")
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true" && !document.querySelector("button.save").disabled`)
	require.NoError(t, os.Remove(filepath.Join(s.flows, "child.yaml")))

	do(t, ctx, chromedp.Click("button.save"))
	until(t, ctx, `(document.querySelector('section.editor [role="alert"]') || {textContent: ""}).textContent.startsWith("Not saved")`)
	require.Equal(t, "Not saved: the text does not validate; mend the problems listed.", eval[string](t, ctx, `document.querySelector('section.editor [role="alert"]').textContent`))
	require.Contains(t, eval[string](t, ctx, `document.querySelector('li.diag[data-node="child"]').innerText`), `child workflow "child.yaml" not found`)
	require.True(t, eval[bool](t, ctx, `document.querySelector("button.save").disabled`), "Save is disabled")
	require.Equal(t, "false", eval[string](t, ctx, `document.querySelector("section.editor").dataset.valid`))
	require.True(t, eval[bool](t, ctx, `!!document.querySelector('g.node[data-node="child"][data-problem="true"]')`))
	data, err := os.ReadFile(filepath.Join(s.flows, "parent.yaml"))
	require.NoError(t, err)
	require.Equal(t, parent, string(data), "nothing is written")
}
