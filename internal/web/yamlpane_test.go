package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"
)

// paneCursor puts the YAML pane's cursor just before the first match of
// what, after the first match of after, and focuses the pane.
func paneCursor(t *testing.T, ctx context.Context, after, what string) {
	t.Helper()
	eval[chromedp.Void](t, ctx, `(v => {
		const text = v.state.doc.toString();
		const at = text.indexOf(`+quote(what)+`, text.indexOf(`+quote(after)+`));
		v.focus();
		v.dispatch({selection: {anchor: at}});
	})(document.querySelector("#yaml").yamlView)`)
}

func quote(s string) string {
	return "`" + strings.NewReplacer("\\", "\\\\", "`", "\\`", "$", "\\$").Replace(s) + "`"
}

// completions is JavaScript that answers the labels of the completion
// list open in the pane.
const completions = `[...document.querySelectorAll("#yaml .cm-tooltip-autocomplete li .cm-completionLabel")].map((e) => e.textContent)`

// TestEditorYAMLPane: the YAML pane is a code editor, styled and labelled
// under the page's CSP. Typed text redraws the graph and is validated, an
// invalid draft marked at its diagnostic's line; an edit from the Setup
// form shows in the pane with the cursor kept where it was. Typing in a
// node completes the parameters of the node's kind (and a node's type,
// every kind), each described; hovering a key or pressing F1 on it
// describes it from the workflow schema. Tab leaves the pane.
func TestEditorYAMLPane(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"report.yaml": commented})
	ctx := browser(t)
	s.signIn(ctx)
	openEditor(t, ctx, s, "report", "build")
	require.Equal(t, "flex", eval[string](t, ctx, `getComputedStyle(document.querySelector("#yaml .cm-editor")).display`), "CodeMirror's styles apply under the CSP")
	require.Equal(t, "YAML of report.yaml", eval[string](t, ctx,
		`document.getElementById(document.querySelector("#yaml .cm-content").getAttribute("aria-labelledby")).textContent.trim()`), "the pane is labelled")
	require.Equal(t, "textbox", eval[string](t, ctx, `document.querySelector("#yaml .cm-content").getAttribute("role")`))

	// Typed: the graph redraws from the text and the text is validated; the
	// edges to the renamed node are marked at their line.
	paneCursor(t, ctx, "- id: tell", "\n")
	do(t, ctx, chromedp.KeyEvent("ing"))

	until(t, ctx, `!!document.querySelector('g.node[data-node="telling"]')`)
	require.Contains(t, eval[string](t, ctx, yamlText), "  - id: telling\n")
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "false"`)
	require.Contains(t, eval[string](t, ctx, `document.querySelector("li.diag.error").innerText`), "tell")
	until(t, ctx, lintLines+`.includes(17)`) // - {from: build, to: tell}
	axe(t, ctx, "editor with a marked YAML pane")
	// F8 goes to a problem.
	paneCursor(t, ctx, "", "version")
	do(t, ctx, chromedp.KeyEvent(kb.F8))
	until(t, ctx, `(v => [14, 17].includes(v.state.doc.lineAt(v.state.selection.main.head).number))(document.querySelector("#yaml").yamlView)`)
	paneCursor(t, ctx, "- id: telling", "\n")
	do(t, ctx, chromedp.KeyEvent(kb.Backspace), chromedp.KeyEvent(kb.Backspace), chromedp.KeyEvent(kb.Backspace))
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)
	until(t, ctx, lintLines+`.length === 0`)

	// An edit from the Setup form shows in the pane; the cursor stays at
	// the text it was at.
	paneCursor(t, ctx, "- id: tell", "text:")
	selectNode(t, ctx, "build")
	fill(t, ctx, "#p-build-max_output", "123456")
	until(t, ctx, yamlText+`.includes("    max_output: 123456\n")`)
	require.Equal(t, "text:", eval[string](t, ctx, `(v => v.state.sliceDoc(v.state.selection.main.head, v.state.selection.main.head + 5))(document.querySelector("#yaml").yamlView)`))
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)

	// Completion: in a shell node, the shell kind's parameters; not another
	// kind's.
	setYAML(t, ctx, strings.Replace(commented, "edges:\n", "  - id: more\n    type: shell\n    \nedges:\n", 1))
	until(t, ctx, `!!document.querySelector('g.node[data-node="more"]')`)
	paneCursor(t, ctx, "- id: more", "    \nedges:")
	do(t, ctx, chromedp.KeyEvent(kb.End), chromedp.SendKeys("#yaml .cm-content", "co"))
	until(t, ctx, completions+`.includes("command")`)
	require.NotContains(t, eval[[]string](t, ctx, completions), "condition", "the if kind's parameter is not offered in a shell node")
	until(t, ctx, `(document.querySelector("#yaml .cm-completionInfo") || {textContent: ""}).textContent.includes("argv")`) // the selected one's description
	// (Enter accepts it too, but a key sent through the DevTools protocol
	// types its character whatever the page does with the key.)
	do(t, ctx, chromedp.Click(`#yaml .cm-tooltip-autocomplete li[aria-selected="true"]`))
	until(t, ctx, yamlText+`.includes("    type: shell\n    command: \nedges:")`)
	do(t, ctx, chromedp.SendKeys("#yaml .cm-content", "[echo, more]"))
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)

	// A node's type: every kind, each described.
	paneCursor(t, ctx, "- id: more", "shell\n")
	do(t, ctx, chromedp.KeyEvent(kb.End))
	for range len("shell") {
		do(t, ctx, chromedp.KeyEvent(kb.Backspace))
	}
	do(t, ctx, chromedp.SendKeys("#yaml .cm-content", "sw"))
	until(t, ctx, completions+`.includes("switch")`)
	kinds := s.api("GET", "/api/kinds", nil)["kinds"].([]any)
	require.NotContains(t, eval[[]string](t, ctx, completions), "http", "the kinds that match sw")
	do(t, ctx, chromedp.KeyEvent(kb.Escape))
	do(t, ctx, chromedp.KeyEvent(kb.Backspace), chromedp.KeyEvent(kb.Backspace), chromedp.KeyEvent(" ", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	until(t, ctx, completions+`.length === `+strconv.Itoa(len(kinds)))

	// Hover over a key describes it, from the workflow schema.
	do(t, ctx, chromedp.KeyEvent(kb.Escape))
	// (Once the text is checked, so the page does not move under the
	// mouse; scrolled to first, and measured once the pane has seen the
	// scroll.)
	until(t, ctx, `document.querySelector(".ed-state").textContent !== "Checking…"`)
	eval[chromedp.Void](t, ctx, `document.querySelector("#yaml").scrollIntoView({block: "center"})`)
	eval[bool](t, ctx, `new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))`)
	xy := eval[[]float64](t, ctx, `(v => {
		const c = v.coordsAtPos(v.state.doc.toString().indexOf("max_output") + 3);
		return [c.left + 2, (c.top + c.bottom) / 2];
	})(document.querySelector("#yaml").yamlView)`)
	do(t, ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, xy[0], xy[1], chromedp.ButtonNone))
	until(t, ctx, `(document.querySelector("#yaml .cm-tooltip-hover .cm-schema-doc") || {textContent: ""}).textContent.includes("Bytes kept")`)

	// F1 does the same at the cursor, for the keyboard.
	paneCursor(t, ctx, "- id: build", "command")
	do(t, ctx, chromedp.KeyEvent(kb.F1))
	until(t, ctx, `[...document.querySelectorAll("#yaml .cm-schema-doc")].some((e) => e.textContent.startsWith("command") && e.textContent.includes("argv"))`)

	// Ctrl-] and Ctrl-[ indent and outdent.
	do(t, ctx, chromedp.KeyEvent(kb.Escape), chromedp.KeyEvent("]", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	until(t, ctx, yamlText+`.includes("\n      command: [echo, \"built\"]")`)
	do(t, ctx, chromedp.KeyEvent("[", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	until(t, ctx, yamlText+`.includes("\n    command: [echo, \"built\"]")`)

	// Tab leaves the pane.
	do(t, ctx, chromedp.KeyEvent(kb.Escape), chromedp.KeyEvent("\t"))
	require.False(t, eval[bool](t, ctx, `document.querySelector("#yaml").contains(document.activeElement)`), "Tab moves the focus out of the pane")
}
