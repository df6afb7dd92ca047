package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/auth"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// commented is a workflow file as people write them: comments, flow and
// block styles, quoting.
const commented = `# Reports how the build went.
version: 1
name: report
description: Says how the build went.   # shown in the list
nodes:
  # the button
  - {id: start, type: trigger.manual}
  - id: build
    type: shell
    command: [echo, "built"]   # the real build is slower
    max_output: 4096
  - id: tell
    type: template
    text: "build said {{ build.stdout }}"
edges:
  - {from: start, to: build}
  - {from: build, to: tell}
`

// openEditor opens the editor of a workflow and waits for its graph and
// its first validation.
func openEditor(t *testing.T, ctx context.Context, s *site, name, node string) {
	t.Helper()
	do(t, ctx, chromedp.Navigate(s.url+"/#/workflows/"+name+"/edit"), chromedp.WaitVisible(`g.node[data-node="`+node+`"]`))
	until(t, ctx, `document.querySelector("section.editor").dataset.valid !== ""`)
}

// yamlText is JavaScript that reads the YAML pane's text: its view hangs
// on the pane's element.
const yamlText = `document.querySelector("#yaml").yamlView.state.doc.toString()`

// setYAML replaces the YAML pane's text as a paste into it would.
func setYAML(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	v, _ := json.Marshal(text)
	eval[chromedp.Void](t, ctx, `(v => {
		v.focus();
		v.dispatch({changes: {from: 0, to: v.state.doc.length, insert: `+string(v)+`}, userEvent: "input.paste"});
	})(document.querySelector("#yaml").yamlView)`)
}

// lintLines is JavaScript that answers the lines of the YAML pane that
// an error mark underlines and the lint gutter marks.
const lintLines = `(() => {
	const top = (e) => e.getBoundingClientRect().top;
	const marks = [...document.querySelectorAll("#yaml .cm-gutter-lint .cm-gutterElement")].filter((g) => g.querySelector(".cm-lint-marker-error")).map(top);
	const lines = [...document.querySelectorAll("#yaml .cm-content > .cm-line")];
	return lines.map((l, i) => (l.querySelector(".cm-lintRange-error") && marks.some((y) => Math.abs(y - top(l)) < 3) ? i + 1 : 0)).filter((n) => n > 0);
})()`

// selectNode clicks a node of the graph and waits for its panel.
func selectNode(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	do(t, ctx, chromedp.Click(`g.node[data-node="`+id+`"]`), chromedp.WaitVisible(`section.node-panel[data-panel-node="`+id+`"]`))
}

// TestEditorChangesOneLine: the Edit link of the workflows page opens the
// editor; a parameter changed in the selected node's Setup form changes
// only its line of the text, comments and layout kept; Save writes it, and
// the file's diff on disk is that one line.
func TestEditorChangesOneLine(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"report.yaml": commented})
	ctx := browser(t)
	s.signIn(ctx)
	do(t, ctx, chromedp.Navigate(s.url+"/#/workflows"), chromedp.WaitVisible(`tr[data-workflow="report"]`))
	do(t, ctx, chromedp.Click(`tr[data-workflow="report"] a.edit-link`), chromedp.WaitVisible(`g.node[data-node="build"]`))
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)
	require.Equal(t, commented, eval[string](t, ctx, yamlText), "the pane holds the file's text")
	require.True(t, eval[bool](t, ctx, `document.querySelector("button.save").disabled === false`))

	selectNode(t, ctx, "build")
	require.Equal(t, "4096", eval[string](t, ctx, `document.querySelector("#p-build-max_output").value`), "the form holds the node's value")
	require.Contains(t, eval[string](t, ctx, `document.querySelector('[data-param="command"] label').innerText`), "required")
	axe(t, ctx, "editor")
	fill(t, ctx, "#p-build-max_output", "8192")
	until(t, ctx, yamlText+`.includes("max_output: 8192")`)
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)
	eval[chromedp.Void](t, ctx, `document.activeElement.blur(); document.querySelector("section.node-panel").scrollTop = 0`)
	screenshot(t, ctx, "editor")
	do(t, ctx, chromedp.Click("button.save"))
	until(t, ctx, `document.querySelector("section.editor").dataset.dirty === "false"`)
	require.Contains(t, eval[string](t, ctx, `document.querySelector("p.note").innerText`), "Saved report.yaml")

	data, err := os.ReadFile(filepath.Join(s.flows, "report.yaml"))
	require.NoError(t, err)
	require.Equal(t, strings.Replace(commented, "max_output: 4096", "max_output: 8192", 1), string(data), "the file's diff is the one line")
}

// TestEditorBuildsANewWorkflow: a workflow built from "New workflow" by
// clicks — a shell node after the trigger, with a check, an if after it
// with a node on its true branch — is saved, validates, and runs that
// branch.
func TestEditorBuildsANewWorkflow(t *testing.T) {
	t.Parallel()
	s := serve(t, nil)
	ctx := browser(t)
	s.signIn(ctx)
	do(t, ctx, chromedp.Navigate(s.url+"/#/workflows"), chromedp.WaitVisible(`button.new-wf`))
	do(t, ctx, chromedp.Click(`button.new-wf`), chromedp.WaitVisible("#new-file"))
	fill(t, ctx, "#new-file", "built.yaml")
	do(t, ctx, chromedp.Click(`form.new-wf button[type="submit"]`), chromedp.WaitVisible(`g.node[data-node="start"]`))
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)
	require.Equal(t, "#/workflows/built/edit", eval[string](t, ctx, `location.hash`))

	// A shell node after the trigger; its command from the Setup form.
	selectNode(t, ctx, "start")
	fill(t, ctx, "#pal-q", "shell")
	do(t, ctx, chromedp.Click(`button.kind[data-kind="shell"]`), chromedp.WaitVisible(`section.node-panel[data-panel-node="shell_1"]`))
	until(t, ctx, `document.querySelector('g.node[data-node="shell_1"][data-problem="true"]')`)
	fill(t, ctx, "#p-shell_1-command", `[echo, "42"]`)
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)

	// An if after it, and a template on its true branch.
	fill(t, ctx, "#pal-q", "")
	do(t, ctx, chromedp.Click(`button.kind[data-kind="if"]`), chromedp.WaitVisible(`section.node-panel[data-panel-node="if_1"]`))
	fill(t, ctx, "#p-if_1-condition", `trim(shell_1.stdout) == "42"`)
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)
	until(t, ctx, `document.querySelector("#pal-handle")`)
	fill(t, ctx, "#pal-handle", "true")
	do(t, ctx, chromedp.Click(`button.kind[data-kind="template"]`), chromedp.WaitVisible(`section.node-panel[data-panel-node="template_1"]`))
	fill(t, ctx, "#p-template_1-text", "the answer")
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)
	require.Equal(t, 3, eval[int](t, ctx, `document.querySelectorAll("g.edge").length`), "the graph draws the edges")

	// A check on the shell node.
	selectNode(t, ctx, "shell_1")
	fill(t, ctx, "#check-args", `expr: "shell_1.exit_code == 0"`)
	do(t, ctx, chromedp.Click(`//button[text()="Add check"]`))
	until(t, ctx, `document.querySelectorAll(".node-checks li[data-check]").length === 1`)
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)

	do(t, ctx, chromedp.Click("button.save"))
	until(t, ctx, `document.querySelector("section.editor").dataset.dirty === "false"`)

	file := filepath.Join(s.flows, "built.yaml")
	wf, ds := workflow.Load(file, node.Default)
	require.False(t, ds.HasErrors(), "the saved file validates: %v", ds)
	require.Len(t, wf.Nodes, 4)
	require.Len(t, wf.Nodes[1].Checks, 1, "the shell node's check")
	id := s.start("built")
	until(t, ctx, `fetch("/api/runs/`+id+`").then(r => r.json()).then(d => d.status === "completed")`)
	steps := s.api("GET", "/api/runs/"+id, nil)["steps"].([]any)
	ran := map[string]string{}
	for _, st := range steps {
		m := st.(map[string]any)
		ran[m["node"].(string)] = m["status"].(string)
	}
	require.Equal(t, "success", ran["template_1"], "the true branch ran: %v", ran)
}

// TestEditorShowsDiagnostics: an invalid edit typed in the YAML pane shows
// its diagnostic, with its line:col, in the list, on the node (its button
// selects the node) and in the pane at its line (its line:col moves the
// cursor there), and Save is disabled until the text is valid again.
func TestEditorShowsDiagnostics(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"report.yaml": commented})
	ctx := browser(t)
	s.signIn(ctx)
	openEditor(t, ctx, s, "report", "build")
	setYAML(t, ctx, strings.Replace(commented, "max_output: 4096", "max_output: lots", 1))
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "false"`)
	diag := eval[string](t, ctx, `document.querySelector('li.diag[data-node="build"]').innerText`)
	require.Regexp(t, `^11:\d+ error: .*max_output`, diag, "the diagnostic with its line:col")
	require.True(t, eval[bool](t, ctx, `!!document.querySelector('g.node[data-node="build"][data-problem="true"]')`), "the node is marked")
	require.Contains(t, eval[string](t, ctx, `document.querySelector('g.node[data-node="build"]').getAttribute("aria-label")`), "invalid")
	require.False(t, eval[bool](t, ctx, `!!document.querySelector('g.node[data-node="tell"][data-problem]')`))
	require.True(t, eval[bool](t, ctx, `document.querySelector("button.save").disabled`), "an invalid text cannot be saved")
	until(t, ctx, lintLines+`.includes(11)`) // the pane marks the line too
	axe(t, ctx, "editor with problems")
	do(t, ctx, chromedp.Click(`li.diag[data-node="build"] button[aria-label^="node"]`), chromedp.WaitVisible(`section.node-panel[data-panel-node="build"]`))
	// The diagnostic's line:col moves the pane's cursor there.
	do(t, ctx, chromedp.Click(`li.diag[data-node="build"] button.mono`))
	until(t, ctx, `(v => v.hasFocus && v.state.doc.lineAt(v.state.selection.main.head).number === 11)(document.querySelector("#yaml").yamlView)`)

	setYAML(t, ctx, commented)
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)
	require.False(t, eval[bool](t, ctx, `document.querySelector("button.save").disabled`))
	require.False(t, eval[bool](t, ctx, `!!document.querySelector('g.node[data-problem]')`))
}

// TestEditorConflict: a save after the file changed on disk is refused
// with a conflict message; Reload shows the file as it is, Overwrite
// saves over it.
func TestEditorConflict(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"report.yaml": commented})
	ctx := browser(t)
	s.signIn(ctx)
	openEditor(t, ctx, s, "report", "build")
	file := filepath.Join(s.flows, "report.yaml")
	theirs := strings.Replace(commented, "build said", "the build said", 1)
	require.NoError(t, os.WriteFile(file, []byte(theirs), 0o600))

	mine := strings.Replace(commented, "max_output: 4096", "max_output: 100", 1)
	setYAML(t, ctx, mine)
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true" && !document.querySelector("button.save").disabled`)
	do(t, ctx, chromedp.Click("button.save"))
	until(t, ctx, `document.querySelector(".conflict")`)
	require.Contains(t, eval[string](t, ctx, `document.querySelector(".conflict").innerText`), "report.yaml changed on disk since you opened it")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, theirs, string(data), "a conflicting save writes nothing")

	// Overwrite saves the text over theirs.
	do(t, ctx, chromedp.Click(`//div[contains(@class,"conflict")]//button[text()="Overwrite"]`))
	until(t, ctx, `!document.querySelector(".conflict") && document.querySelector("section.editor").dataset.dirty === "false"`)
	data, err = os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, mine, string(data))

	// Changed again on disk: Reload theirs shows the file as it is.
	require.NoError(t, os.WriteFile(file, []byte(theirs), 0o600))
	setYAML(t, ctx, commented)
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true" && !document.querySelector("button.save").disabled`)
	do(t, ctx, chromedp.Click("button.save"))
	until(t, ctx, `document.querySelector(".conflict")`)
	do(t, ctx, chromedp.Click(`//div[contains(@class,"conflict")]//button[text()="Reload theirs"]`))
	until(t, ctx, `!document.querySelector(".conflict")`)
	require.Equal(t, theirs, eval[string](t, ctx, yamlText))
}

// TestEditorRefusesWithoutEdit: signed in with a token of scope run, the
// editor opens the file but says the server will not check or save it,
// and why; a Save is refused and the file not touched. The workflows page
// offers no "New workflow".
func TestEditorRefusesWithoutEdit(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"report.yaml": commented})
	tok, _, err := s.r.Tokens().Create(t.Context(), auth.Run, "runs only")
	require.NoError(t, err)
	ctx := browser(t)
	do(t, ctx,
		chromedp.Navigate(s.url+"/"),
		chromedp.WaitVisible("#token"),
		chromedp.SendKeys("#token", tok),
		chromedp.Click(`form button[type="submit"]`),
		chromedp.WaitVisible("header.top nav"),
	)
	do(t, ctx, chromedp.Navigate(s.url+"/#/workflows"), chromedp.WaitVisible(`tr[data-workflow="report"]`))
	require.False(t, eval[bool](t, ctx, `!!document.querySelector("button.new-wf")`), "no New workflow without edit")
	do(t, ctx, chromedp.Navigate(s.url+"/#/workflows/report/edit"), chromedp.WaitVisible(`g.node[data-node="build"]`))
	until(t, ctx, `(document.querySelector('section.editor [role="alert"]') || {}).textContent`)
	require.Contains(t, eval[string](t, ctx, `document.querySelector('section.editor [role="alert"]').textContent`), "Checking and saving a draft need a token of scope edit; this session's scope is run")
	setYAML(t, ctx, strings.Replace(commented, "max_output: 4096", "max_output: 100", 1))
	until(t, ctx, `!document.querySelector("button.save").disabled`)
	do(t, ctx, chromedp.Click("button.save"))
	until(t, ctx, `(document.querySelector('section.editor [role="alert"]') || {textContent: ""}).textContent.startsWith("Not saved")`)
	require.Equal(t, "Not saved: saving needs a token of scope edit; this session's scope is run.", eval[string](t, ctx, `document.querySelector('section.editor [role="alert"]').textContent`))
	data, err := os.ReadFile(filepath.Join(s.flows, "report.yaml"))
	require.NoError(t, err)
	require.Equal(t, commented, string(data), "the file is not touched")
}

// TestEditorNodeActions: the palette lists every kind grouped as
// docs/nodes.md groups them and filters them by a search; the selected
// node's Duplicate, Disable and Delete, and its Checks, change the text
// (and the graph drawn from it) by those edits only. The keyboard selects
// a node.
func TestEditorNodeActions(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"report.yaml": commented})
	ctx := browser(t)
	s.signIn(ctx)
	openEditor(t, ctx, s, "report", "build")
	kinds := s.api("GET", "/api/kinds", nil)["kinds"].([]any)
	until(t, ctx, `document.querySelectorAll("button.kind").length > 0`)
	require.Equal(t, len(kinds), eval[int](t, ctx, `document.querySelectorAll("button.kind").length`), "every kind is offered")
	require.Equal(t, []string{"Triggers", "Control", "Data", "Actions", "AI"}, eval[[]string](t, ctx, `[...document.querySelectorAll(".pal-group h3")].map(h => h.textContent)`))
	fill(t, ctx, "#pal-q", "templ")
	until(t, ctx, `[...document.querySelectorAll("button.kind")].every(b => b.dataset.kind.includes("templ") || b.title.toLowerCase().includes("templ"))`)
	require.True(t, eval[bool](t, ctx, `!!document.querySelector('button.kind[data-kind="template"]') && !document.querySelector('button.kind[data-kind="shell"]')`))

	// Enter on a focused node selects it.
	do(t, ctx, chromedp.Focus(`g.node[data-node="build"]`), pressEnter(), chromedp.WaitVisible(`section.node-panel[data-panel-node="build"]`))
	text := func() string { return eval[string](t, ctx, yamlText) }

	// A field changed, then Duplicate clicked at once: the edits apply in
	// turn, each to the text the one before answered; the copy has the
	// new value.
	eval[chromedp.Void](t, ctx, `(() => {
		const e = document.querySelector("#p-build-max_output");
		e.value = "5000";
		e.dispatchEvent(new Event("change", {bubbles: true}));
		[...document.querySelectorAll("section.node-panel button")].find(b => b.textContent === "Duplicate").click();
	})()`)
	do(t, ctx, chromedp.WaitVisible(`section.node-panel[data-panel-node="build_1"]`))
	require.True(t, eval[bool](t, ctx, `!!document.querySelector('g.node[data-node="build_1"]')`))
	require.Contains(t, text(), "  - id: build\n    type: shell\n    command: [echo, \"built\"]   # the real build is slower\n    max_output: 5000\n")
	require.Contains(t, text(), "  - id: build_1\n    type: shell\n    command: [echo, \"built\"]   # the real build is slower\n    max_output: 5000\n")

	do(t, ctx, chromedp.Click(`//section[contains(@class,"node-panel")]//button[text()="Disable"]`))
	until(t, ctx, `document.querySelector('g.node[data-node="build_1"]').getAttribute("aria-label").endsWith("disabled")`)
	require.Contains(t, text(), "disabled: true")
	do(t, ctx, chromedp.Click(`//section[contains(@class,"node-panel")]//button[text()="Enable"]`))
	until(t, ctx, `!`+yamlText+`.includes("disabled")`)

	selectNode(t, ctx, "tell")
	do(t, ctx, chromedp.Click(`//section[contains(@class,"node-panel")]//button[text()="Delete"]`))
	until(t, ctx, `!document.querySelector('g.node[data-node="tell"]')`)
	require.NotContains(t, text(), "tell")
	require.False(t, eval[bool](t, ctx, `!!document.querySelector("section.node-panel")`), "nothing is selected")

	// A check, added with its on_fail, then removed.
	selectNode(t, ctx, "build")
	fill(t, ctx, "#check-type", "expr")
	fill(t, ctx, "#check-args", `expr: "build.exit_code == 0"`)
	fill(t, ctx, "#check-onfail", "warn")
	do(t, ctx, chromedp.Click(`//button[text()="Add check"]`))
	until(t, ctx, `document.querySelectorAll(".node-checks li[data-check]").length === 1`)
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true"`)
	require.Contains(t, text(), "    checks:\n      - type: expr\n        expr: build.exit_code == 0\n        on_fail: warn\n")
	do(t, ctx, chromedp.Click(`//button[@aria-label="Remove check 1"]`))
	until(t, ctx, `document.querySelectorAll(".node-checks li[data-check]").length === 0`)
	require.NotContains(t, text(), "build.exit_code")
	require.NotContains(t, text(), "checks", "the last check removed, no empty list is left")

	// The Setup form: a field per parameter of the kind's type, with its
	// description and default; an emptied field is removed from the text.
	require.Equal(t, []string{"TEXTAREA", "checkbox", "number"}, eval[[]string](t, ctx,
		`["#p-build-command", "#p-build-shell", "#p-build-max_output"].map(q => { const e = document.querySelector(q); return e.tagName === "INPUT" ? e.type : e.tagName })`))
	require.Regexp(t, `^Bytes kept .* Default: \d+$`, eval[string](t, ctx, `document.querySelector("#p-build-max_output-d").textContent`))
	// Typing does not write the text; leaving the field does.
	do(t, ctx, chromedp.SendKeys("#p-build-cwd", "/tmp"))
	require.Equal(t, "/tmp", eval[string](t, ctx, `document.querySelector("#p-build-cwd").value`))
	require.NotContains(t, text(), "cwd")
	do(t, ctx, chromedp.KeyEvent("\t"))
	until(t, ctx, yamlText+`.includes("    cwd: /tmp\n")`)
	fill(t, ctx, "#p-build-max_output", "")
	until(t, ctx, `(v => !v.slice(v.indexOf("- id: build\n"), v.indexOf("- id: build_1")).includes("max_output"))(`+yamlText+`)`)
	require.Contains(t, text(), "    max_output: 5000\n", "the duplicate keeps its own")
	fill(t, ctx, "#pal-q", "")
	do(t, ctx, chromedp.Click(`button.kind[data-kind="merge"]`), chromedp.WaitVisible(`section.node-panel[data-panel-node="merge_1"]`))
	require.Equal(t, []string{"", "all", "any"}, eval[[]string](t, ctx, `[...document.querySelectorAll("#p-merge_1-wait option")].map(o => o.value)`), "an enum is a list")
	fill(t, ctx, "#p-merge_1-wait", "any")
	until(t, ctx, yamlText+`.includes("wait: any")`)
	require.Contains(t, text(), "  - {from: build, to: merge_1}\n", "the new node follows the selected one")
	axe(t, ctx, "editor after edits")
}

// TestEditorMendsABrokenFile: a file of the folder that does not validate
// is listed under Problems with an Edit link; mended in the editor and
// saved, it is served.
func TestEditorMendsABrokenFile(t *testing.T) {
	t.Parallel()
	broken := strings.Replace(commented, "max_output: 4096", "max_output: lots", 1)
	s := serve(t, map[string]string{"report.yaml": broken})
	ctx := browser(t)
	s.signIn(ctx)
	do(t, ctx, chromedp.Navigate(s.url+"/#/workflows"), chromedp.WaitVisible(`ul.problems`))
	do(t, ctx, chromedp.Click(`//ul[contains(@class,"problems")]//a[@aria-label="Edit report.yaml"]`), chromedp.WaitVisible(`g.node[data-node="build"]`))
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "false"`)
	require.True(t, eval[bool](t, ctx, `!!document.querySelector('g.node[data-node="build"][data-problem="true"]')`))
	setYAML(t, ctx, commented)
	until(t, ctx, `document.querySelector("section.editor").dataset.valid === "true" && !document.querySelector("button.save").disabled`)
	do(t, ctx, chromedp.Click("button.save"))
	until(t, ctx, `document.querySelector("section.editor").dataset.dirty === "false"`)
	require.Equal(t, "report", s.api("GET", "/api/workflows/report", nil)["name"], "the mended file is served")
}

// TestEditorKeepsTheView: a value changed in the Setup form keeps the
// graph's layout and the zoom the user chose; a node added after another
// is placed beside it, the others staying where they are, and the view is
// fitted again; any other change of the graph's shape lays it out anew.
func TestEditorKeepsTheView(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"report.yaml": commented})
	ctx := browser(t)
	s.signIn(ctx)
	openEditor(t, ctx, s, "report", "build")
	zoom := func() string { return eval[string](t, ctx, `document.querySelector(".zoom-level").textContent`) }
	fitted := zoom()
	do(t, ctx, chromedp.Click(`button[aria-label="Zoom in"]`))
	until(t, ctx, `document.querySelector(".zoom-level").textContent !== "`+fitted+`"`)
	zoomed := zoom()

	selectNode(t, ctx, "build")
	fill(t, ctx, "#p-build-max_output", "8192")
	until(t, ctx, `document.querySelector("section.editor").dataset.dirty === "true" && document.querySelector("section.editor").dataset.valid === "true"`)
	require.Equal(t, zoomed, zoom(), "a value edit keeps the zoom")

	// A node added after build: the others stay where they were, the new
	// one is right of build.
	at := func() map[string]string {
		return eval[map[string]string](t, ctx, `Object.fromEntries([...document.querySelectorAll("g.node")].map(g => [g.dataset.node, g.getAttribute("transform")]))`)
	}
	before := at()
	do(t, ctx, chromedp.Click(`button.kind[data-kind="template"]`), chromedp.WaitVisible(`g.node[data-node="template_1"]`))
	until(t, ctx, `document.querySelector(".zoom-level").textContent === "`+fitted+`"`)
	after := at()
	for id, tr := range before {
		require.Equal(t, tr, after[id], "node %s stays where it was", id)
	}
	xy := func(tr string) (x, y float64) {
		_, err := fmt.Sscanf(tr, "translate(%g,%g)", &x, &y)
		require.NoError(t, err, tr)
		return x, y
	}
	bx, _ := xy(before["build"])
	nx, _ := xy(after["template_1"])
	require.Greater(t, nx, bx, "the new node is right of the one it follows")
	require.Contains(t, eval[string](t, ctx, yamlText), "{from: build, to: template_1}")

	// Any other change of the shape lays the graph out anew: a removed
	// edge moves the nodes after it.
	setYAML(t, ctx, strings.Replace(eval[string](t, ctx, yamlText), "  - {from: build, to: tell}\n", "", 1))
	until(t, ctx, `!document.querySelector('g.edge[data-from="build"][data-to="tell"]')`)
	require.NotEqual(t, after["tell"], at()["tell"], "tell, no longer after build, is laid out anew")
}

// TestFieldsKeepWhatIsTypedAtOnce: what is typed into a node's fields
// (a Setup parameter, its expected outcome) as soon as they are drawn,
// before the browser paints, stays: the fields are not set back to the
// draft's values when their effects run after the paint.
func TestFieldsKeepWhatIsTypedAtOnce(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"report.yaml": commented})
	ctx := browser(t)
	s.signIn(ctx)
	openEditor(t, ctx, s, "report", "build")
	// Select the node and type into its fields from the mutation that
	// draws them (a microtask, before any paint), then let two frames and
	// the tasks after them pass: the effects of the drawing have run.
	got := eval[[]string](t, ctx, `new Promise((done) => {
		const ids = ["#p-tell-text", "#expect-tell"];
		const seen = new MutationObserver(() => {
			const fields = ids.map((id) => document.querySelector(id));
			if (fields.some((f) => !f)) return;
			seen.disconnect();
			for (const f of fields) {
				f.value = "typed at once";
				f.dispatchEvent(new Event("input", {bubbles: true}));
			}
			requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => setTimeout(() => done(fields.map((f) => f.value))))));
		});
		seen.observe(document.body, {childList: true, subtree: true});
		document.querySelector('g.node[data-node="tell"]').dispatchEvent(new MouseEvent("click", {bubbles: true}));
	})`)
	require.Equal(t, []string{"typed at once", "typed at once"}, got)
	require.NotContains(t, draftText(t, ctx), "typed at once", "typing does not write the draft; leaving the field or saving does")
}
