package web_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// TestStartFormTakesListsAndMaps: the start form gives a list or a map
// input a JSON field (the API's input types are list and map), shows its
// default as JSON, and starts the run with the value typed.
func TestStartFormTakesListsAndMaps(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"types.yaml": `version: 1
name: types
inputs:
  tags: {type: list, default: [a, b]}
  opts: {type: map, default: {k: 1}}
nodes:
  - {id: echo, type: set, values: {tags: "{{ inputs.tags }}", opts: "{{ inputs.opts }}"}}
`})
	ctx := browser(t)
	s.signIn(ctx)
	do(t, ctx, chromedp.Navigate(s.url+"/#/workflows/types"))
	until(t, ctx, `!!document.querySelector("#in-opts")`)
	require.Equal(t, "TEXTAREA", eval[string](t, ctx, `document.querySelector("#in-tags").tagName`))
	require.Equal(t, `["a","b"]`, eval[string](t, ctx, `document.querySelector("#in-tags").value`))
	require.Equal(t, `{"k":1}`, eval[string](t, ctx, `document.querySelector("#in-opts").value`))
	fill(t, ctx, "#in-opts", `{"k": 2, "on": true}`)
	do(t, ctx, chromedp.Click(`form.start button[type=submit]`))
	until(t, ctx, `location.hash.startsWith("#/runs/") && !!document.querySelector('section.run[data-status="completed"]')`)
	id := eval[string](t, ctx, `document.querySelector("section.run").dataset.run`)
	doc := s.api("GET", "/api/runs/"+id, nil)
	require.Equal(t, map[string]any{"tags": []any{"a", "b"}, "opts": map[string]any{"k": float64(2), "on": true}}, doc["inputs"])
}

// TestCheckVerdictsNameTheirCheck: a node's panel lists its checks by
// name, with what the verdict says (its reasoning).
func TestCheckVerdictsNameTheirCheck(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"checked.yaml": `version: 1
name: checked
nodes:
  - id: order
    type: set
    values: {total: 10}
    checks:
      - {name: big enough, type: expr, expr: "order.total >= 50", on_fail: warn}
`})
	ctx := browser(t)
	s.signIn(ctx)
	id := s.start("checked")
	do(t, ctx, chromedp.Navigate(s.url+"/#/runs/"+id))
	until(t, ctx, `!!document.querySelector('section.run[data-status="completed"]') && !!document.querySelector('g.node[data-node="order"]')`)
	do(t, ctx, chromedp.Click(`g.node[data-node="order"]`))
	until(t, ctx, `!!document.querySelector("ul.checks li")`)
	text := eval[string](t, ctx, `document.querySelector("ul.checks li").textContent`)
	require.Contains(t, text, "big enough")
	require.Contains(t, text, "order.total >= 50", "the reasoning: what the check found")
}

// TestEditorFollowsTheRoute: going from one workflow's editor to
// another's (the hash alone changes) shows the other's text and graph,
// not the first one's graph under the other's name; renaming a node to a
// name expressions read the run by is refused on the page.
func TestEditorFollowsTheRoute(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"other.yaml": `version: 1
name: other
nodes:
  - {id: lonely, type: set, values: {x: 1}}
`})
	ctx := browser(t)
	s.signIn(ctx)
	do(t, ctx, chromedp.Navigate(s.url+"/#/workflows/hello/edit"))
	until(t, ctx, `!!document.querySelector('section.editor g.node[data-node="greet"]')`)
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#/workflows/other/edit"`))
	until(t, ctx, `!!document.querySelector('section.editor g.node[data-node="lonely"]')`)
	require.False(t, eval[bool](t, ctx, `!!document.querySelector('section.editor g.node[data-node="greet"]')`), "hello's graph is gone")

	do(t, ctx, chromedp.Click(`section.editor g.node[data-node="lonely"]`))
	until(t, ctx, `!!document.querySelector("button.rename")`)
	do(t, ctx, chromedp.Click(`button.rename`))
	until(t, ctx, `!!document.querySelector("#rename-to")`)
	fill(t, ctx, "#rename-to", "inputs")
	do(t, ctx, chromedp.Click(`form.rename button[type="submit"]`))
	until(t, ctx, `!!document.querySelector("form.rename [role=alert]")`)
	require.Contains(t, eval[string](t, ctx, `document.querySelector("form.rename [role=alert]").textContent`), "inputs is what expressions read the run by")
}

// TestChatFollowsTheRoute: going from one workflow's chat to another's
// (the hash alone changes) shows the other's page with nothing of the
// first conversation: its messages are gone, and the first message sent
// there starts a conversation of its own (no history of the other).
func TestChatFollowsTheRoute(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"echo.yaml": `version: 1
name: echo
nodes:
  - {id: heard, type: trigger.chat}
  - id: answer
    type: template
    text: "echo heard {{ heard.message }}; earlier: [{{ join(map(heard.history, .content), ' | ') }}]"
edges:
  - {from: heard, to: answer}
outputs:
  reply: "{{ answer.text }}"
`})
	ctx := browser(t)
	s.signIn(ctx)
	// A reply's text, without the speaker said to screen readers and the
	// link to its run.
	const replies = `[...document.querySelectorAll(".msg.assistant")].map(m => m.childNodes[1].textContent)`
	do(t, ctx, chromedp.Navigate(s.url+"/#/chat/chat"), chromedp.WaitVisible("#chat-msg"))
	fill(t, ctx, "#chat-msg", "first")
	do(t, ctx, chromedp.Click(`section.chat button[type="submit"]`))
	until(t, ctx, replies+`.includes("you said first; before: ")`)
	until(t, ctx, `document.querySelector("section.chat button[type=submit]").textContent === "Send"`)

	do(t, ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#/chat/echo"`))
	until(t, ctx, `document.querySelector("#chat-h").textContent === "Chat with echo"`)
	require.Zero(t, eval[int](t, ctx, `document.querySelectorAll(".msg").length`), "the chat with chat is not shown on echo's page")
	fill(t, ctx, "#chat-msg", "second")
	do(t, ctx, chromedp.Click(`section.chat button[type="submit"]`))
	until(t, ctx, `document.querySelectorAll(".msg.assistant").length === 1 && document.querySelector("section.chat button[type=submit]").textContent === "Send"`)
	require.Equal(t, []string{"echo heard second; earlier: []"}, eval[[]string](t, ctx, replies),
		"echo's first message starts a conversation of its own")
	require.Equal(t, []string{"second"}, eval[[]string](t, ctx, `[...document.querySelectorAll(".msg.user")].map(m => m.lastChild.textContent)`))
}

// TestRunsListFollowsTheRoute: going from the runs list of one query to
// another's (#/?workflow=hello, then #/?workflow=pins&status=completed:
// the hash alone changes) shows the other query's filters and runs, not
// the first one's.
func TestRunsListFollowsTheRoute(t *testing.T) {
	t.Parallel()
	s := serve(t, nil)
	hello := s.start("hello")
	pins := s.start("pins")
	ctx := browser(t)
	s.signIn(ctx)
	const filters = `[...document.querySelectorAll("form.filters select")].map(s => s.name + "=" + s.value)`
	row := func(id string) string { return `!!document.querySelector('tr[data-run="` + id + `"]')` }

	do(t, ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#/?workflow=hello"`))
	until(t, ctx, row(hello)+` && `+filters+`.join() === "workflow=hello,status="`)
	require.False(t, eval[bool](t, ctx, row(pins)), "only hello's runs")

	do(t, ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#/?workflow=pins&status=completed"`))
	until(t, ctx, `!!document.querySelector('tr[data-run="`+pins+`"][data-status="completed"]')`)
	require.Equal(t, []string{"workflow=pins", "status=completed"}, eval[[]string](t, ctx, filters))
	require.False(t, eval[bool](t, ctx, row(hello)), "hello's run is not in pins' list")
	require.Equal(t, []string{"pins"}, eval[[]string](t, ctx, `[...new Set([...document.querySelectorAll("table.runs tbody tr")].map(tr => tr.cells[1].textContent))]`))
}

// pageClock gives the page a clock the test moves on, advanceClock(ms):
// the page's Date (new Date(), Date.now()) reads the time that much
// later, so that what the page shows as time passes is seen without
// waiting for it.
const pageClock = `(() => {
	const Real = Date;
	let skew = 0;
	class Moved extends Real {
		constructor(...a) { if (a.length) super(...a); else super(Real.now() + skew); }
		static now() { return Real.now() + skew; }
	}
	window.Date = Moved;
	window.advanceClock = (ms) => { skew += ms; };
})()`

// TestAnInterruptedRunsDurationStandsStill: a run whose process died
// while its nap step ran is interrupted: it recorded no end, so neither
// the runs list nor its page shows it a duration, nor its nap step one,
// however far the page's clock goes on; its step that ended shows the
// duration it recorded.
func TestAnInterruptedRunsDurationStandsStill(t *testing.T) {
	t.Parallel()
	s := serve(t, nil)
	// The run as its dead owner left it: running, with a lease that ran
	// out; the trigger's step ended in 40 ms, the nap's never did.
	const id = "5eed0ead0001"
	began := time.Now().Add(-90 * time.Minute).UTC().Truncate(time.Millisecond)
	at := func(ms int) *time.Time { x := began.Add(time.Duration(ms) * time.Millisecond); return &x }
	st := s.r.Store()
	require.NoError(t, st.CreateRun(t.Context(), &store.Run{ID: id, Workflow: "hold", Status: "running", StartedAt: began,
		Owner: store.Owner{Host: "gone.example", PID: 4242, Token: "dead"}, LeaseTTL: -time.Second}))
	require.NoError(t, st.SaveBatch(t.Context(), []store.Batch{{RunID: id, Steps: []*store.Step{
		{Node: "start", Type: "trigger.manual", Status: "success", Visit: 1, Attempts: 1, StepOrder: 1, StartedAt: at(0), FinishedAt: at(40), DurationMS: 40},
		{Node: "nap", Type: "shell", Status: "running", Visit: 1, Attempts: 1, StepOrder: 2, StartedAt: at(50)},
	}}}))
	doc := s.api("GET", "/api/runs/"+id, nil)
	require.Equal(t, "interrupted", doc["status"])
	require.Nil(t, doc["finished_at"], "the run recorded no end")

	ctx := browser(t)
	s.signIn(ctx)
	eval[chromedp.Void](t, ctx, pageClock)
	hour := func() { eval[chromedp.Void](t, ctx, `advanceClock(3600 * 1000)`) }
	listed := func() string {
		return eval[string](t, ctx, `document.querySelector('tr[data-run="`+id+`"]').cells[5].textContent`)
	}
	type shown struct{ Facts, Nap, Start, NapStep string }
	// read selects nap then start, each render reading the page's clock
	// anew, and says what the page shows: the run's facts, the nodes'
	// badges, nap's step line.
	read := func() shown {
		do(t, ctx, chromedp.Click(`g.node[data-node="nap"]`))
		until(t, ctx, `!!document.querySelector('section.panel[data-panel-node="nap"] details.step summary')`)
		napStep := eval[string](t, ctx, `document.querySelector('section.panel details.step summary').textContent`)
		do(t, ctx, chromedp.Click(`g.node[data-node="start"]`))
		until(t, ctx, `!!document.querySelector('section.panel[data-panel-node="start"] details.step summary')`)
		require.Contains(t, eval[string](t, ctx, `document.querySelector('section.panel details.step summary').textContent`), "40 ms",
			"the trigger's step took what it recorded")
		return shown{
			Facts:   eval[string](t, ctx, `document.querySelector("section.run .facts").textContent`),
			Nap:     eval[string](t, ctx, `document.querySelector('g.node[data-node="nap"]').getAttribute("aria-label")`),
			Start:   eval[string](t, ctx, `document.querySelector('g.node[data-node="start"]').getAttribute("aria-label")`),
			NapStep: napStep,
		}
	}

	// The runs list, the run's page, the same an hour later, and the
	// runs list two hours later.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#/"`))
	until(t, ctx, `!!document.querySelector('tr[data-run="`+id+`"][data-status="interrupted"]')`)
	inList := listed()
	do(t, ctx, chromedp.Click(`tr[data-run="`+id+`"] a`))
	until(t, ctx, `!!document.querySelector('section.run[data-status="interrupted"] g.node[data-node="nap"]')`)
	first := read()
	hour()
	require.Equal(t, first, read(), "an hour later the run's page shows the same")
	hour()
	do(t, ctx, chromedp.Click(`header.top nav a[href="#/"]`))
	until(t, ctx, `!!document.querySelector('tr[data-run="`+id+`"][data-status="interrupted"]')`)
	require.Equal(t, inList, listed(), "two hours later the runs list shows the same")

	// What they show, by what the run recorded.
	require.Equal(t, "", inList, "the runs list: no duration for a run that recorded no end")
	require.Equal(t, "Started "+eval[string](t, ctx, `new Date("`+began.Format(time.RFC3339Nano)+`").toLocaleString(undefined, {dateStyle: "short", timeStyle: "medium"})`),
		first.Facts, "the run's facts: when it started, and no duration")
	require.Equal(t, "nap shell interrupted", first.Nap, "nap's badge: interrupted, as runs show says, with no duration")
	require.NotRegexp(t, `\d (ms|s|m|h)\b`, first.NapStep, "nap's step: no duration")
	require.Contains(t, first.NapStep, "interrupted", "nap's step line: interrupted")
	require.Equal(t, "start trigger.manual success 40 ms", first.Start, "the trigger's badge: the duration its step recorded")
}

// TestRunIDsInPathsAreEncoded: the run page asks the API for the run its
// route names by that id encoded, whatever the route holds. Run ids are
// letters, digits, '_', '-' and '.' (they name the runs' folders), but a
// route may name anything (a link mistyped or cut short): one that names
// "no/such?run#9%" asks for /api/runs/no%2Fsuch%3Frun%239%25 and says there
// is no such run, by that id; one that names an existing run's id with
// "?x" after it does not show that run.
func TestRunIDsInPathsAreEncoded(t *testing.T) {
	t.Parallel()
	s := serve(t, nil)
	id := s.start("hello")
	ctx := browser(t)
	s.signIn(ctx)
	const alert = `document.querySelector('main [role="alert"]')`
	// open goes to the route of runID and waits for its page to say
	// something: an error, or the run (what the last page said is marked
	// stale first).
	open := func(runID string) {
		t.Helper()
		const said = `document.querySelectorAll('main [role="alert"], section.run')`
		do(t, ctx, chromedp.Evaluate[chromedp.Void](said+`.forEach(e => e.dataset.stale = "yes");
			location.hash = "#/runs/" + encodeURIComponent(`+strconv.Quote(runID)+`)`))
		until(t, ctx, `[...`+said+`].some(e => !e.dataset.stale)`)
	}
	asked := func() []string {
		return eval[[]string](t, ctx, `performance.getEntriesByType("resource").map(e => new URL(e.name)).filter(u => u.pathname.startsWith("/api/runs/")).map(u => u.pathname + u.search)`)
	}

	const missing = "no/such?run#9%"
	open(missing)
	require.True(t, eval[bool](t, ctx, `!!`+alert), "no run is shown")
	require.Contains(t, eval[string](t, ctx, alert+`.textContent`), `no run "`+missing+`"`)
	require.Contains(t, asked(), "/api/runs/no%2Fsuch%3Frun%239%25", "the id is one segment of the path")

	open(id + "?x")
	require.True(t, eval[bool](t, ctx, `!!`+alert), "run %s is not shown for %s?x", id, id)
	require.Contains(t, eval[string](t, ctx, alert+`.textContent`), `no run "`+id+`?x"`)
	require.Contains(t, asked(), "/api/runs/"+id+"%3Fx")
	require.NotContains(t, asked(), "/api/runs/"+id+"?x")

	// The run itself still opens.
	open(id)
	until(t, ctx, `!!document.querySelector('section.run[data-run="`+id+`"][data-status="completed"] g.node[data-node="greet"]')`)
}

// TestABigValueOpens: a run whose output is a big value (over 64 KiB,
// kept out of the run's document) shows it as a link, in the run's
// outputs and in the step's, that opens the value whole.
func TestABigValueOpens(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"bigout.yaml": `version: 1
name: bigout
nodes:
  - {id: print, type: shell, command: [sh, -c, "head -c 100000 /dev/zero | tr '\\0' x"]}
outputs:
  text: "{{ print.stdout }}"
`})
	id := s.start("bigout")
	ctx := browser(t)
	s.signIn(ctx)
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#/runs/`+id+`"`))
	until(t, ctx, `!!document.querySelector('section.run[data-run="`+id+`"][data-status="completed"] [aria-label="run outputs"] a.j-blob')`)
	link := `document.querySelector('[aria-label="run outputs"] a.j-blob')`
	require.Equal(t, "text: text of 100,000 bytes: open", eval[string](t, ctx, link+`.parentElement.textContent`))
	got := eval[string](t, ctx, `fetch(`+link+`.href).then(r => r.ok ? r.text() : "status " + r.status)`)
	require.Len(t, got, 100000, "the link opens the value whole")
	require.Equal(t, strings.Repeat("x", 100000), got)

	do(t, ctx, chromedp.Click(`g.node[data-node="print"]`))
	until(t, ctx, `!!document.querySelector('section.panel[data-panel-node="print"] [aria-label="output"] a.j-blob')`)
	require.Equal(t, eval[string](t, ctx, link+`.href`),
		eval[string](t, ctx, `document.querySelector('section.panel [aria-label="output"] a.j-blob').href`), "the step's output opens the same value")
}
