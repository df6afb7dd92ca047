package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestWorkflowsLastRunAndNextFire: the workflows page shows each
// workflow's newest run (its status and when it started, a link to it),
// "never" for a workflow not run yet, and when a schedule fires next.
func TestWorkflowsLastRunAndNextFire(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"nightly.yaml": `version: 1
name: nightly
nodes:
  - {id: at_night, type: trigger.schedule, cron: "30 2 * * *", tz: UTC}
  - {id: note, type: template, text: "ran"}
edges:
  - {from: at_night, to: note}
`})
	ctx := browser(t)
	s.signIn(ctx)
	s.start("pins")
	ran := s.start("hello")
	until(t, ctx, `fetch("/api/runs/`+ran+`").then(r => r.json()).then(d => d.status === "completed")`)
	until(t, ctx, `fetch("/api/schedules").then(r => r.json()).then(d => d.schedules.some(s => s.workflow === "nightly" && s.next_fire))`)
	next := s.api("GET", "/api/schedules", nil)["schedules"].([]any)[0].(map[string]any)["next_fire"].(string)
	require.Regexp(t, `T02:30:00Z$`, next)

	do(t, ctx, chromedp.Navigate(s.url+"/#/workflows"))
	until(t, ctx, `(document.querySelector('tr[data-workflow="hello"] td.last-run') || {}).textContent`)
	hello := eval[string](t, ctx, `document.querySelector('tr[data-workflow="hello"] td.last-run').innerText`)
	started := eval[string](t, ctx, `fetch("/api/runs/`+ran+`").then(r => r.json()).then(d => new Date(d.started_at).toLocaleString(undefined, {dateStyle: "short", timeStyle: "medium"}))`)
	require.Equal(t, "completed "+started, hello, "hello's last run")
	require.Equal(t, "#/runs/"+ran, eval[string](t, ctx, `document.querySelector('tr[data-workflow="hello"] td.last-run a').getAttribute("href")`))
	require.Equal(t, "never", eval[string](t, ctx, `document.querySelector('tr[data-workflow="nightly"] td.last-run').innerText`))

	until(t, ctx, `(document.querySelector('tr[data-workflow="nightly"] td.next-fire') || {}).textContent`)
	want := eval[string](t, ctx, `new Date("`+next+`").toLocaleString(undefined, {dateStyle: "short", timeStyle: "medium"})`)
	require.Equal(t, want, eval[string](t, ctx, `document.querySelector('tr[data-workflow="nightly"] td.next-fire').innerText`), "nightly's next fire")
	require.Empty(t, eval[string](t, ctx, `document.querySelector('tr[data-workflow="hello"] td.next-fire').innerText`), "hello has no schedule")
}

func TestWorkflowsProblemsNameTheWebhook(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"deploy.yaml": `version: 1
name: deploy
secrets: [WEB_TEST_UNSET_HOOK_SECRET]
nodes:
  - id: hook
    type: trigger.webhook
    path: deploy
    auth: {type: bearer, secret: "{{ secrets.WEB_TEST_UNSET_HOOK_SECRET }}"}
  - {id: note, type: template, text: "deploying"}
edges:
  - {from: hook, to: note}
`})
	ctx := browser(t)
	s.signIn(ctx)
	do(t, ctx, chromedp.Navigate(s.url+"/#/workflows"))
	until(t, ctx, `(document.querySelector('ul.problems') || {}).textContent`)
	require.Equal(t, "Problems", eval[string](t, ctx, `document.querySelector('ul.problems').previousElementSibling.previousElementSibling.innerText`))
	item := eval[string](t, ctx, `[...document.querySelectorAll('ul.problems li')].map(li => li.innerText).find(t => t.includes("deploy.yaml")) || ""`)
	require.Contains(t, item, "deploy.yaml › hook:", "the problem names the file and the webhook's node")
	require.Contains(t, item, "WEB_TEST_UNSET_HOOK_SECRET", "the operator's page says what to set")
}
