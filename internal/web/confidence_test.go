package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestConfidenceAndChecksNotRun: a step's panel shows the confidence its
// node reported, and the checks of a node that failed read not_run.
func TestConfidenceAndChecksNotRun(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"sure.yaml": `version: 1
name: sure
nodes:
  - id: guess
    type: shell
    command: [sh, -c, 'echo "{\"_confidence\": 0.4}"']
  - id: fetch
    type: shell
    command: [sh, -c, 'exit 3']
    on_error: continue
    checks:
      - {name: said done, type: contains, target: stdout, value: done}
edges:
  - {from: guess, to: fetch}
`})
	ctx := browser(t)
	id := s.start("sure")
	s.signIn(ctx)
	do(t, ctx, chromedp.Navigate(s.url+"/#/runs/"+id))
	until(t, ctx, `document.querySelector('g.node[data-node="fetch"][data-status="failed"]')`)
	do(t, ctx, chromedp.Click(`g.node[data-node="guess"]`), chromedp.WaitVisible(`section.panel[data-panel-node="guess"]`))
	require.Contains(t, eval[string](t, ctx, `document.querySelector('section.panel details.step summary').innerText`), "confidence 0.40")
	do(t, ctx, chromedp.Click(`g.node[data-node="fetch"]`), chromedp.WaitVisible(`section.panel[data-panel-node="fetch"]`))
	until(t, ctx, `document.querySelector('section.panel .checks li.v-not_run')`)
	require.Contains(t, eval[string](t, ctx, `document.querySelector('section.panel .checks').innerText`), "not_run")
}
