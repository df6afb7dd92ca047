package web_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// chain is a workflow of four nodes in a row, b with a check.
const chain = `version: 1
name: chain
inputs:
  who: {type: string, required: true, description: who the text is for}
nodes:
  - {id: start, type: trigger.manual}
  - {id: a, type: template, text: "A for {{ inputs.who }}"}
  - id: b
    type: template
    text: "disk: {{ a.text }}"
    checks:
      - {name: names the input, type: contains, value: "for"}
  - {id: c, type: template, text: "C after {{ b.text }}"}
edges:
  - {from: start, to: a}
  - {from: a, to: b}
  - {from: b, to: c}
outputs:
  said: "{{ c.text }}"
`

// TestEditorTriesTheDraft: a parameter changed in the editor and not
// saved, Run with an input runs the draft — the result shown is the
// draft's, not the file's; then "Run this node" on b runs b alone on a's
// output pinned from that run (a's own change does not show), and b's
// panel shows its output and its check's verdict. The file is untouched.
func TestEditorTriesTheDraft(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"chain.yaml": chain})
	ctx := browser(t)
	s.signIn(ctx)
	openEditor(t, ctx, s, "chain", "b")
	selectNode(t, ctx, "b")
	fill(t, ctx, "#p-b-text", "web: {{ a.text }}")
	until(t, ctx, yamlText+`.includes('text: "web: {{ a.text }}"') && document.querySelector("section.editor").dataset.valid === "true"`)
	require.Equal(t, "true", eval[string](t, ctx, `document.querySelector("section.editor").dataset.dirty`), "the change is not saved")

	// Run the whole draft with an input.
	do(t, ctx, chromedp.Click("button.try-open"), chromedp.WaitVisible("#try-in-who"))
	require.Contains(t, eval[string](t, ctx, `document.querySelector('label[for="try-in-who"]').innerText`), "required", "the form is made from the draft's inputs")
	fill(t, ctx, "#try-in-who", "ann")
	do(t, ctx, chromedp.Click("button.try-start"))
	until(t, ctx, `document.querySelector('.try-run .try-result[data-status="completed"]')`)
	out := eval[string](t, ctx, `document.querySelector(".try-run .try-result").innerText`)
	require.Contains(t, out, "C after web: A for ann", "the result is the draft's")
	require.NotContains(t, out, "disk:")
	runID := eval[string](t, ctx, `document.querySelector(".try-run .try-result a").getAttribute("href")`)
	require.Regexp(t, `^#/runs/[0-9a-f]{12}$`, runID, "the result links to the run's page")

	// Change a too, then run b alone: a is pinned to the run above.
	selectNode(t, ctx, "a")
	fill(t, ctx, "#p-a-text", "A2 for {{ inputs.who }}")
	until(t, ctx, yamlText+`.includes("A2 for") && document.querySelector("section.editor").dataset.valid === "true"`)
	selectNode(t, ctx, "b")
	until(t, ctx, `document.querySelector("#try-from-b") && document.querySelector("#try-from-b").value === "`+runID[len("#/runs/"):]+`"`)
	do(t, ctx, chromedp.Click("button.try-node-start"))
	until(t, ctx, `document.querySelector('.try-node .try-result[data-status="completed"]')`)
	res := eval[string](t, ctx, `document.querySelector(".try-node .try-result").innerText`)
	require.Contains(t, res, "web: A for ann", "b ran the draft's text on a's pinned output")
	require.NotContains(t, res, "A2")
	require.Equal(t, "success", eval[string](t, ctx, `document.querySelector(".try-node .try-result").dataset.stepStatus`))
	require.True(t, eval[bool](t, ctx, `!!document.querySelector('.try-node .try-checks li[data-verdict="pass"]')`), "b's check passed")
	require.Contains(t, eval[string](t, ctx, `document.querySelector('.try-node .try-checks li[data-verdict="pass"]').textContent`), "names the input",
		"the check is shown by its name")

	// The run: a pinned, c not run.
	nodeRun := eval[string](t, ctx, `document.querySelector(".try-node .try-result a").getAttribute("href")`)[len("#/runs/"):]
	steps := s.api("GET", "/api/runs/"+nodeRun, nil)["steps"].([]any)
	ran := map[string]bool{}
	for _, st := range steps {
		m := st.(map[string]any)
		ran[m["node"].(string)] = true
		if m["node"] == "a" {
			require.Equal(t, true, m["pinned"], "a is pinned")
		}
	}
	require.False(t, ran["c"], "nothing after b runs")

	axe(t, ctx, "editor trying a draft")
	// Tall enough to show the draft's run and the node's beside the graph.
	do(t, ctx, chromedp.EmulateViewport(1440, 1750))
	eval[chromedp.Void](t, ctx, `document.activeElement.blur(); window.scrollTo(0, 0)`)
	screenshot(t, ctx, "editor-try")

	// The runs list says the editor started them. The draft is not
	// saved, so leaving asks first.
	do(t, ctx, chromedp.ResetViewport(), chromedp.Navigate(s.url+"/#/runs"), chromedp.WaitVisible(`.leave-guard`))
	do(t, ctx, chromedp.Click(`//div[contains(@class,"leave-guard")]//button[text()="Leave"]`), chromedp.WaitVisible(`tr[data-run="`+nodeRun+`"]`))
	require.Contains(t, eval[string](t, ctx, `document.querySelector('tr[data-run="`+nodeRun+`"]').innerText`), "editor")

	data, err := os.ReadFile(filepath.Join(s.flows, "chain.yaml"))
	require.NoError(t, err)
	require.Equal(t, chain, string(data), "trying saves nothing")
}
