package live

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/dustin/go-humanize"

	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/workflow"
)

// FailureTailLines is how many of a failed step's last lines of output are
// shown.
const FailureTailLines = 20

// Minimum widths of the node and type columns; longer ids and types
// widen them for the whole run.
const (
	minNodeWidth = 24
	minTypeWidth = 10
)

// key names one step: a node and its visit.
type key struct {
	node  string
	visit int
}

// active is a step that is not finished: running, waiting for a slot or
// waiting to be retried.
type active struct {
	label, typ string
	start      time.Time // of the current attempt
	pending    bool      // waits for a concurrency slot
	retry      *retry    // waits to be tried again
	// failed is the attempt that failed before the retry; it is the
	// step's end when the run ends before the retry (a cancel).
	failed *record.Step
	// items is, for a foreach or loop whose body runs, what it has
	// started: "started 2 of 4 items", "pass 3".
	items string
}

type retry struct {
	attempt, max int
	at           time.Time // when it was asked for
	delay        time.Duration
	reason       string
}

// board is what both displays know of a run: the column widths, the
// steps under way and what the run used so far. It turns each record
// into the lines to print for good.
type board struct {
	clk    clock.Clock
	st     styles
	nodeW  int
	typeW  int
	width  int // the terminal's, which caps the node column; 0: none
	run    *record.Run
	begun  time.Time
	act    map[key]*active
	order  []key             // of act, as the steps appeared
	starts map[key]time.Time // start of the latest attempt of each step under way
	tokens int
	cost   float64
}

func newBoard(clk clock.Clock, st styles) *board {
	if clk == nil {
		clk = clock.Real{}
	}
	return &board{clk: clk, st: st, nodeW: minNodeWidth, typeW: minTypeWidth,
		act: map[key]*active{}, starts: map[key]time.Time{}}
}

// workflow widens the columns to the workflow's longest node id and type.
func (b *board) workflow(w *workflow.Workflow) {
	for _, n := range w.Nodes {
		if n == nil {
			continue
		}
		b.nodeW = max(b.nodeW, ansi.StringWidth(n.ID)+1)
		b.typeW = max(b.typeW, ansi.StringWidth(n.Type))
	}
}

func (b *board) started(run *record.Run, resumed bool) []string {
	b.run, b.begun = run, b.clk.Now()
	verb := "run"
	if resumed {
		verb = "resuming run"
	}
	return []string{b.st.dim.Render(fmt.Sprintf("▶ %s %s · %s", verb, run.ID, run.Workflow))}
}

// Label names a step: its node, with the foreach item index (sq[2]), the
// loop pass (body (pass 3)) or, on a cycle, the visit (poll #2).
func Label(rec record.Step) string {
	if rec.Loop != nil {
		if _, ok := rec.Loop["total"]; ok {
			if i, ok := rec.Loop["index"].(int); ok {
				return rec.Node + "[" + strconv.Itoa(i) + "]"
			}
			return fmt.Sprintf("%s[%v]", rec.Node, rec.Loop["index"])
		}
		if it, ok := rec.Loop["iteration"].(int); ok {
			return rec.Node + " (pass " + strconv.Itoa(it+1) + ")"
		}
	}
	if rec.Visit > 1 {
		return rec.Node + " #" + strconv.Itoa(rec.Visit)
	}
	return rec.Node
}

func (b *board) get(k key, rec record.Step) *active {
	a, ok := b.act[k]
	if !ok {
		a = &active{label: Label(rec), typ: rec.Type, start: b.clk.Now()}
		b.act[k] = a
		b.order = append(b.order, k)
	}
	return a
}

func (b *board) drop(k key) {
	delete(b.act, k)
	for i, o := range b.order {
		if o == k {
			b.order = append(b.order[:i], b.order[i+1:]...)
			break
		}
	}
}

func (b *board) step(rec record.Step) []string {
	k := key{rec.Node, rec.Visit}
	switch rec.Status {
	case record.StatusPending:
		if rec.Attempts > 0 { // released, waiting for a slot; else planned
			b.get(k, rec).pending = true
		}
		return nil
	case record.StatusRunning:
		a := b.get(k, rec)
		a.pending, a.retry = false, nil
		if rec.StartedAt != nil && rec.Attempts <= 1 {
			a.start = *rec.StartedAt
		} else {
			a.start = b.clk.Now() // a retry: its node_started event tells the exact time
		}
		return nil
	case record.StatusFailed:
		if rec.Retry {
			if a, ok := b.act[k]; ok {
				r := rec
				a.failed = &r
			}
			return nil // the retry event says what comes next
		}
	}
	b.drop(k)
	b.tokens += rec.Tokens
	b.cost += rec.CostUSD
	lines := b.finished(rec)
	// Nothing of a step that ended is kept: a run of many steps holds
	// the board no larger than its steps under way.
	delete(b.starts, k)
	return lines
}

func (b *board) event(ev record.TimedEvent) []string {
	k := key{ev.Node, ev.Visit}
	switch ev.Type {
	case record.EventNodeStarted:
		// Only a step under way: the start of one that ended already (a
		// pure step's, recorded with its end) would be kept for good.
		if a, ok := b.act[k]; ok {
			b.starts[k] = ev.Time
			a.start, a.pending, a.retry = ev.Time, false, nil
		}
	case record.EventRetry:
		r := &retry{attempt: intOf(ev.Data["attempt"]), max: intOf(ev.Data["max_attempts"]), at: ev.Time,
			delay: time.Duration(intOf(ev.Data["delay_ms"])) * time.Millisecond}
		r.reason, _ = ev.Data["error"].(string)
		lbl := ev.Node
		if a, ok := b.act[k]; ok {
			a.retry = r
			lbl = a.label
		}
		return []string{fmt.Sprintf("%s %s %s", b.st.yellow.Render("↻"), b.node(lbl), b.st.yellow.Render(r.text(0)))}
	case record.EventLoopIteration:
		if a, ok := b.act[k]; ok {
			if total, ok := ev.Data["total"]; ok {
				a.items = fmt.Sprintf("started %d of %d items", intOf(ev.Data["index"])+1, intOf(total))
			} else {
				a.items = fmt.Sprintf("pass %d", intOf(ev.Data["iteration"])+1)
			}
		}
	case record.EventWarning:
		msg, _ := ev.Data["message"].(string)
		return []string{b.st.yellow.Render("⚠ " + msg)}
	case record.EventExecutionFinished:
		// A step whose retry never came (the run was cancelled while it
		// waited) ended with its failed attempt: its line now.
		var lines []string
		for _, k := range append([]key(nil), b.order...) {
			if a := b.act[k]; a != nil && a.retry != nil && a.failed != nil {
				r := *a.failed
				r.Retry = false
				lines = append(lines, b.step(r)...)
			}
		}
		return lines
	}
	return nil
}

// text says which attempt comes when: "attempt 2/3 in 2s (reason)"; with
// left > 0, the time left.
func (r *retry) text(left time.Duration) string {
	of := ""
	if r.max > 0 {
		of = "/" + strconv.Itoa(r.max)
	}
	in := r.delay
	if left > 0 {
		in = left
	}
	s := fmt.Sprintf("attempt %d%s in %s", r.attempt, of, fmtDelay(in))
	if reason := oneLine(r.reason, 80); reason != "" {
		s += " (" + reason + ")"
	}
	return s
}

// finished renders the line of a step that ended, with what goes under it.
func (b *board) finished(rec record.Step) []string {
	st := b.st
	var mark, tail string
	dur := b.duration(rec)
	switch {
	case rec.Status == record.StatusWaiting:
		mark, dur = st.yellow.Render("⏸"), waitingFor(rec)
	case rec.Cached:
		mark, tail = st.cyan.Render("↻"), "cached"
	case rec.Pinned:
		mark, tail = st.cyan.Render("↻"), "pinned"
	case rec.Status == record.StatusSuccess:
		mark = st.green.Render("✓")
	case rec.Status == record.StatusFailed:
		mark = st.red.Render("✗")
	case rec.Status == record.StatusSkipped:
		mark, dur = st.dim.Render("–"), "skipped"
	case rec.Status == record.StatusCancelled:
		mark, tail = st.yellow.Render("⊘"), "cancelled"
		if rec.Error != nil && rec.Error.Message != "" {
			tail += ": " + oneLine(rec.Error.Message, 120)
		}
	default:
		return nil
	}
	if route, ok := rec.Directives["_route"].(string); ok && rec.Status == record.StatusSuccess {
		tail = joinTail(tail, "→ "+route)
	}
	if rec.Attempts > 1 && (rec.Status == record.StatusSuccess || rec.Status == record.StatusFailed) {
		tail = joinTail(tail, fmt.Sprintf("after %d attempts", rec.Attempts))
	}
	line := fmt.Sprintf("%s %s %s", mark, b.node(Label(rec)), st.dim.Render(b.pad(rec.Type, b.typeW)+" "+dur))
	if tail != "" {
		c := st.dim
		if rec.Status == record.StatusCancelled {
			c = st.yellow
		}
		line += "  " + c.Render(tail)
	}
	out := []string{line}
	if rec.Status == record.StatusFailed && rec.Error != nil {
		out = append(out, "    "+st.red.Render(rec.Error.Message))
		for _, l := range FailureTail(rec.Error.Details) {
			out = append(out, st.dim.Render("    │ "+l))
		}
	}
	return out
}

// duration is how long the step's final attempt took.
func (b *board) duration(rec record.Step) string {
	d := time.Duration(rec.DurationMS) * time.Millisecond
	if s, ok := b.starts[key{rec.Node, rec.Visit}]; ok && rec.Attempts > 1 && rec.FinishedAt != nil && !rec.FinishedAt.Before(s) {
		d = rec.FinishedAt.Sub(s)
	}
	return fmtDuration(d)
}

// view is the live part: the steps under way, then the run's totals.
func (b *board) view(spin []string) string {
	if b.run == nil {
		return ""
	}
	now := b.clk.Now()
	var lines []string
	running, pending := 0, 0
	for _, k := range b.order {
		a := b.act[k]
		switch {
		case a.retry != nil:
			left := a.retry.at.Add(a.retry.delay).Sub(now)
			lines = append(lines, fmt.Sprintf("%s %s %s %s", b.st.yellow.Render("↻"), b.node(a.label),
				b.st.dim.Render(b.pad(a.typ, b.typeW)), b.st.yellow.Render(a.retry.text(max(left, time.Millisecond)))))
		case a.pending:
			pending++
			lines = append(lines, fmt.Sprintf("%s %s %s", b.st.dim.Render("·"), b.node(a.label),
				b.st.dim.Render(b.pad(a.typ, b.typeW)+" waiting for a slot")))
		default:
			el := now.Sub(a.start)
			frame := spin[int(max(el, 0)/spinEvery)%len(spin)]
			line := fmt.Sprintf("%s %s %s", b.st.cyan.Render(frame), b.node(a.label),
				b.st.dim.Render(b.pad(a.typ, b.typeW)+" ")+fmtElapsed(el))
			if a.items != "" {
				line += "  " + b.st.dim.Render(a.items) // its body's nodes run, not it
			} else {
				running++
			}
			lines = append(lines, line)
		}
	}
	parts := []string{fmt.Sprintf("%d running", running)}
	if pending > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting for a slot", pending))
	}
	retrying := 0
	for _, a := range b.act {
		if a.retry != nil {
			retrying++
		}
	}
	if retrying > 0 {
		parts = append(parts, fmt.Sprintf("%d to retry", retrying))
	}
	parts = append(parts, humanize.Comma(int64(b.tokens))+" tokens", fmt.Sprintf("$%.4f", b.cost), fmtElapsed(now.Sub(b.begun)))
	lines = append(lines, b.st.dim.Render(strings.Join(parts, " · ")))
	return strings.Join(lines, "\n")
}

// spinEvery is how long a spinner frame lasts.
const spinEvery = 100 * time.Millisecond

// node renders a step's label in the node column: padded to the column,
// and on a terminal cut to at most two fifths of its width.
func (b *board) node(label string) string {
	w := b.nodeW
	if b.width > 0 {
		w = min(w, max(minNodeWidth/2, b.width*2/5))
		label = ansi.Truncate(label, w-1, "…")
	}
	return b.pad(label, w)
}

// pad pads s to width w, or adds one space when it is longer.
func (b *board) pad(s string, w int) string {
	if n := lipgloss.Width(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

// FailureTail returns the last FailureTailLines lines of the stderr an error's
// details hold (a shell step's), without trailing blank lines; of its
// stdout when its stderr is empty, as many tools say what went wrong there.
func FailureTail(details map[string]any) []string {
	s, _ := details["stderr"].(string)
	s = strings.TrimRight(s, "\n\r\t ")
	if s == "" {
		s, _ = details["stdout"].(string)
		s = strings.TrimRight(s, "\n\r\t ")
	}
	if s == "" {
		return nil
	}
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	if len(lines) > FailureTailLines {
		lines = lines[len(lines)-FailureTailLines:]
	}
	return lines
}

// waitingFor says what a waiting step waits for.
func waitingFor(rec record.Step) string {
	at := ""
	if rec.WakeAt != nil {
		at = rec.WakeAt.Local().Format("2006-01-02 15:04:05")
	}
	switch {
	case rec.Params["until"] == "signal" && at != "":
		return "waits for a signal (timeout " + at + ")"
	case rec.Params["until"] == "signal":
		return "waits for a signal"
	case at != "":
		return "waits until " + at
	}
	return "waits"
}

func joinTail(a, b string) string {
	if a == "" {
		return b
	}
	return a + " · " + b
}

// oneLine is s on one line, cut to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func intOf(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	return 0
}

// FmtDuration renders a step's duration: <1ms, 35ms, 1.2s, 2m3s.
func FmtDuration(d time.Duration) string { return fmtDuration(d) }

func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return "<1ms"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// fmtDelay renders a wait: 2s, 1.5s, 300ms.
func fmtDelay(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return d.String()
	}
	return fmtDuration(d)
}

// fmtElapsed renders a time under way to the tenth of a second.
func fmtElapsed(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", max(d, 0).Seconds())
	}
	return d.Round(time.Second).String()
}

var _ runner.Observer = (*Plain)(nil)
