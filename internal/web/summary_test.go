package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// broken is a workflow whose shell step fails and stops the run.
const broken = `version: 1
name: broken
inputs:
  disk: {type: string, default: sdz}
nodes:
  - {id: start, type: trigger.manual}
  - id: probe
    type: shell
    command: [sh, -c, "echo 'disk full on /dev/{{ inputs.disk }}' >&2; exit 3"]
edges:
  - {from: start, to: probe}
`

// TestRunSummary: a run's page leads with its status, its inputs and its
// outputs — or, for a failed run, its error's code, node and message —
// and its event list names the node of each event.
func TestRunSummary(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"broken.yaml": broken})
	ctx := browser(t)
	s.signIn(ctx)

	ok := s.api("POST", "/api/workflows/hello/runs", map[string]any{"inputs": map[string]any{"who": "Ada", "times": 2}})["execution_id"].(string)
	do(t, ctx, chromedp.Navigate(s.url+"/#/runs/"+ok))
	until(t, ctx, `document.querySelector('section.run[data-status="completed"] .run-outputs')`)
	require.Equal(t, "completed", eval[string](t, ctx, `document.querySelector(".run-head h1 .pill").textContent`))
	in := eval[string](t, ctx, `document.querySelector(".run-inputs").innerText`)
	require.Contains(t, in, `who: "Ada"`)
	require.Contains(t, in, `times: 2`)
	require.Contains(t, eval[string](t, ctx, `document.querySelector(".run-outputs").innerText`), `greeting: "Hello, Ada ×2!"`)
	require.False(t, eval[bool](t, ctx, `!!document.querySelector(".run-summary .run-error")`), "a completed run shows no error")

	// Each event names its node.
	until(t, ctx, `[...document.querySelectorAll(".timeline li")].some(li => li.dataset.type === "node_finished")`)
	events := eval[[]string](t, ctx, `[...document.querySelectorAll(".timeline li")].map(li => li.innerText.replace(/^\S+\s+/, ""))`)
	require.Contains(t, events, `node_started greet #1`, "the event list: %q", events)
	require.Contains(t, events, `node_started start #1`, "the event list: %q", events)

	// A failed run: its error in place of its outputs.
	bad := s.api("POST", "/api/workflows/broken/runs", map[string]any{})["execution_id"].(string)
	do(t, ctx, chromedp.Navigate(s.url+"/#/runs/"+bad))
	until(t, ctx, `document.querySelector('section.run[data-status="failed"] .run-summary .run-error')`)
	require.False(t, eval[bool](t, ctx, `!!document.querySelector(".run-outputs")`), "a failed run shows its error, not outputs")
	require.Contains(t, eval[string](t, ctx, `document.querySelector(".run-inputs").innerText`), `disk: "sdz"`)
	errText := eval[string](t, ctx, `document.querySelector(".run-summary .run-error").innerText`)
	runErr := s.api("GET", "/api/runs/"+bad, nil)["error"].(map[string]any)
	require.NotEmpty(t, runErr["code"])
	require.Equal(t, "probe", runErr["node"])
	require.Contains(t, errText, runErr["code"].(string)+" in node probe: "+strings.TrimPrefix(runErr["message"].(string), "node probe: "))
	require.NotContains(t, errText, "in node probe: node probe:", "the node is named once")
	require.Contains(t, errText, "disk full on /dev/sdz", "the command's stderr")
	axe(t, ctx, "a failed run's page")
	screenshot(t, ctx, "run-failed")
}
