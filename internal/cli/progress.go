package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/store"
)

// progress prints one line per step as it ends: ✓ success, ✗ failed,
// ⚠ warning, ↻ cached or pinned, – skipped. On a terminal it uses colour;
// elsewhere plain lines. It is the runner's Observer, so it sees a step
// only once the step is committed: a node shown done is never lost by a
// crash.
type progress struct {
	w, errw io.Writer
	color   bool
	// notesOnly shows the repair loop's notes (on errw) and nothing else:
	// stdout carries JSON.
	notesOnly bool
	mu        sync.Mutex
}

var _ runner.Observer = (*progress)(nil)

func newProgress(w, errw io.Writer, color bool) *progress {
	return &progress{w: w, errw: errw, color: color}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

const (
	green  = "\x1b[32m"
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	dim    = "\x1b[2m"
	cyan   = "\x1b[36m"
	reset  = "\x1b[0m"
)

func (p *progress) paint(c, s string) string {
	if !p.color || c == "" {
		return s
	}
	return c + s + reset
}

func (p *progress) println(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, s)
}

// Started prints the run's first line, with its id, so an interrupted run
// can be found and resumed.
func (p *progress) Started(run *store.Run, resumed bool) {
	if p.notesOnly {
		return
	}
	verb := "run"
	if resumed {
		verb = "resuming run"
	}
	p.println(p.paint(dim, fmt.Sprintf("▶ %s %s · %s", verb, run.ID, run.Workflow)))
}

func (p *progress) Step(rec engine.StepRecord) {
	if p.notesOnly {
		return
	}
	var mark, col string
	switch {
	case rec.Status == engine.StatusWaiting:
		mark, col = "⏸", yellow
	case rec.Cached || rec.Pinned:
		mark, col = "↻", cyan
	case rec.Status == engine.StatusSuccess:
		mark, col = "✓", green
	case rec.Status == engine.StatusFailed:
		mark, col = "✗", red
	case rec.Status == engine.StatusSkipped:
		mark, col = "–", dim
	case rec.Status == engine.StatusCancelled:
		mark, col = "✗", yellow
	default:
		return
	}
	label := rec.Node
	if rec.Visit > 1 {
		label = fmt.Sprintf("%s #%d", rec.Node, rec.Visit)
	}
	line := fmt.Sprintf("%s %-24s %s", p.paint(col, mark), label, p.paint(dim, fmt.Sprintf("%-10s %s", rec.Type, fmtDuration(time.Duration(rec.DurationMS)*time.Millisecond))))
	if rec.Status == engine.StatusFailed && rec.Error != nil {
		line += "\n    " + p.paint(red, rec.Error.Message)
	}
	if rec.Status == engine.StatusWaiting {
		line = fmt.Sprintf("%s %-24s %s", p.paint(col, mark), label, p.paint(dim, fmt.Sprintf("%-10s %s", rec.Type, waitingFor(rec))))
	}
	p.println(line)
}

// waitingFor says what a waiting step waits for.
func waitingFor(rec engine.StepRecord) string {
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

func (p *progress) Event(ev engine.TimedEvent) {
	if p.notesOnly {
		return
	}
	switch ev.Type {
	case engine.EventWarning:
		msg, _ := ev.Data["message"].(string)
		p.println(p.paint(yellow, "⚠ "+msg))
	case engine.EventRetry:
		p.println(p.paint(yellow, fmt.Sprintf("↺ %s retry %v in %vms: %v", ev.Node, ev.Data["attempt"], ev.Data["delay_ms"], ev.Data["error"])))
	}
}

// Note prints a line of the repair loop: with the progress, or on stderr
// when stdout carries JSON; diagnostics and why the loop stopped go to
// stderr.
func (p *progress) Note(n runner.Note) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch n.Kind {
	case "diagnostic":
		fmt.Fprintln(p.errw, n.Text)
	case "stopped":
		fmt.Fprintln(p.errw, "skein: "+n.Text)
	case "repair":
		fmt.Fprintln(p.w)
		fmt.Fprintln(p.w, p.paint(cyan, n.Text))
	case "repaired":
		fmt.Fprintln(p.w, p.paint(cyan, n.Text))
	case "problem":
		fmt.Fprintln(p.w, p.paint(yellow, n.Text))
	default:
		fmt.Fprintln(p.w, p.paint(dim, n.Text))
	}
}

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

// summary prints the run's last line, its outputs and its verdict.
func (p *progress) summary(r *runner.Result) {
	res, run := r.Engine, r.Run
	p.mu.Lock()
	defer p.mu.Unlock()
	var col, word string
	switch engine.RunStatus(run.Status) {
	case engine.RunCompleted:
		col, word = green, "completed"
	case engine.RunCancelled:
		col, word = yellow, "cancelled"
	case engine.RunWaiting:
		col, word = yellow, "waiting"
	default:
		col, word = red, run.Status
	}
	usage := ""
	if res.Tokens > 0 {
		usage = fmt.Sprintf(" · %d tokens · $%.4f", res.Tokens, res.CostUSD)
	}
	fmt.Fprintf(p.w, "\n%s in %s%s  %s\n", p.paint(col, "run "+run.ID+" "+word), fmtDuration(time.Duration(res.DurationMS)*time.Millisecond), usage, p.paint(dim, run.Dir))
	if res.Error != nil && res.Status != engine.RunCancelled {
		fmt.Fprintln(p.w, p.paint(red, "error: "+res.Error.Message))
	}
	if len(res.Outputs) > 0 {
		b := strings.Builder{}
		writeJSON(&b, res.Outputs)
		fmt.Fprintf(p.w, "outputs: %s", b.String())
	}
	if r.Verdict != nil {
		fmt.Fprintln(p.w, check.Bar(r.Verdict, p.color))
	}
	if engine.RunStatus(run.Status) == engine.RunWaiting {
		for _, a := range res.Awaiting {
			fmt.Fprintf(p.w, "%s waits for a signal: skein signal %s %s --data '{\"approved\": true}'\n", a.Node, run.ID, a.Node)
		}
		if run.WakeAt != nil {
			fmt.Fprintf(p.w, "without a signal by %s, skein resume %s then follows the timeout (skein serve on this folder does it by itself)\n",
				run.WakeAt.Local().Format("2006-01-02 15:04:05"), run.ID)
		}
	}
}
