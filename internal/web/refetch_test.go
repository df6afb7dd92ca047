package web_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestRunPageReadsItsDocumentOneAtATime: the page of a live run reads the
// run's document again as events come, one read at a time. Here the
// browser holds the page's first such read unanswered while the run goes
// on for a second and ends: the page does not ask again meanwhile
// (it used to, 400 ms after the last read began), and once the read is
// answered it shows the run completed.
func TestRunPageReadsItsDocumentOneAtATime(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]string{"paced.yaml": chains("paced", 2, 20, 50*time.Millisecond)})
	ctx := browser(t)
	id := s.start("paced")
	s.signIn(ctx)
	do(t, ctx, chromedp.Navigate(s.url+"/#/runs/"+id))
	until(t, ctx, `document.querySelector('g.node[data-node="gate"][data-status="waiting"]') && document.querySelectorAll('g.node[data-status="pending"]').length === 40`)

	paused := make(chan *fetch.EventRequestPaused, 16)
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			paused <- e
		}
	}))
	_, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/api/runs/" + id}}})
	require.NoError(t, err)
	answer := func(e *fetch.EventRequestPaused) {
		t.Helper()
		_, err := chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID})
		require.NoError(t, err)
	}

	s.api("POST", "/api/runs/"+id+"/signals/gate", map[string]any{})
	var first *fetch.EventRequestPaused
	select {
	case first = <-paused:
	case <-ctx.Done():
		t.Fatal("the page never read the run's document as its events came")
	}
	require.Equal(t, "completed", s.ended(id)["status"])
	until(t, ctx, `document.querySelectorAll('g.node[data-node^="c"][data-status="success"]').length === 40`)
	select {
	case e := <-paused:
		require.FailNow(t, fmt.Sprintf("the page read the run's document again (%s) while its last read was unanswered", e.Request.URL))
	default:
	}
	// Answered, the page shows the run completed: this answer or a read
	// the page asks for after it (the events that came meanwhile), which
	// the browser no longer holds.
	answer(first)
	_, err = chromedp.Call(ctx, fetch.Disable, cdp.Empty{})
	require.NoError(t, err)
	for len(paused) > 0 {
		answer(<-paused)
	}
	until(t, ctx, `document.querySelector('section.run[data-status="completed"]')`)
}
