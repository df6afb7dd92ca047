package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/skeinhq/skein/internal/engine"
)

// progress prints one line per step as it ends: ✓ success, ✗ failed,
// ⚠ warning, ↻ cached or pinned, – skipped. On a terminal it uses colour;
// elsewhere plain lines.
type progress struct {
	w     io.Writer
	color bool
	// lines wait for Flush; when later is set, Flush hands them to it to
	// be printed once the records they describe are durable, so a node
	// shown done is never lost by a crash.
	lines []string
	later func(func())
	mu    sync.Mutex
}

// Flush prints the lines of the last scheduler step, or schedules them.
func (p *progress) Flush() error {
	if len(p.lines) == 0 {
		return nil
	}
	lines := p.lines
	p.lines = nil
	print := func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, l := range lines {
			fmt.Fprintln(p.w, l)
		}
	}
	if p.later != nil {
		p.later(print)
	} else {
		print()
	}
	return nil
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
	if !p.color {
		return s
	}
	return c + s + reset
}

func (p *progress) Step(rec *engine.StepRecord) error {
	var mark, col string
	switch {
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
		return nil
	}
	if rec.Status == engine.StatusFailed && rec.Error != nil && rec.Attempts > 0 && !rec.Status.Final() {
		return nil
	}
	label := rec.Node
	if rec.Visit > 1 {
		label = fmt.Sprintf("%s #%d", rec.Node, rec.Visit)
	}
	line := fmt.Sprintf("%s %-24s %s", p.paint(col, mark), label, p.paint(dim, fmt.Sprintf("%-10s %s", rec.Type, fmtDuration(time.Duration(rec.DurationMS)*time.Millisecond))))
	if rec.Status == engine.StatusFailed && rec.Error != nil {
		line += "\n    " + p.paint(red, rec.Error.Message)
	}
	p.lines = append(p.lines, line)
	return nil
}

func (p *progress) Event(ev engine.TimedEvent) error {
	switch ev.Type {
	case engine.EventWarning:
		msg, _ := ev.Data["message"].(string)
		p.lines = append(p.lines, p.paint(yellow, "⚠ "+msg))
	case engine.EventRetry:
		p.lines = append(p.lines, p.paint(yellow, fmt.Sprintf("↺ %s retry %v in %vms: %v", ev.Node, ev.Data["attempt"], ev.Data["delay_ms"], ev.Data["error"])))
	}
	return nil
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

// header prints the run's first line, with its id, so an interrupted run
// can be found and resumed.
func (p *progress) header(runID, wf string, resumed bool) {
	verb := "run"
	if resumed {
		verb = "resuming run"
	}
	fmt.Fprintln(p.w, p.paint(dim, fmt.Sprintf("▶ %s %s · %s", verb, runID, wf)))
}

// summary prints the run's last line and its outputs.
func (p *progress) summary(res *engine.Result, dir string) {
	p.later = nil
	_ = p.Flush()
	p.mu.Lock()
	defer p.mu.Unlock()
	var col, word string
	switch res.Status {
	case engine.RunCompleted:
		col, word = green, "completed"
	case engine.RunCancelled:
		col, word = yellow, "cancelled"
	default:
		col, word = red, string(res.Status)
	}
	usage := ""
	if res.Tokens > 0 {
		usage = fmt.Sprintf(" · %d tokens · $%.4f", res.Tokens, res.CostUSD)
	}
	fmt.Fprintf(p.w, "\n%s in %s%s  %s\n", p.paint(col, "run "+res.RunID+" "+word), fmtDuration(time.Duration(res.DurationMS)*time.Millisecond), usage, p.paint(dim, dir))
	if res.Error != nil && res.Status != engine.RunCancelled {
		fmt.Fprintln(p.w, p.paint(red, "error: "+res.Error.Message))
	}
	if len(res.Outputs) > 0 {
		b := strings.Builder{}
		writeJSON(&b, res.Outputs)
		fmt.Fprintf(p.w, "outputs: %s", b.String())
	}
}

// tee sends records to several recorders; the first error wins.
type tee []engine.Recorder

// Flush flushes the recorders that buffer, in order, stopping at the first
// error: the store comes before the progress display, so nothing is shown
// done that is not durable.
func (t tee) Flush() error {
	for _, r := range t {
		if f, ok := r.(engine.Flusher); ok {
			if err := f.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t tee) Step(rec *engine.StepRecord) error {
	var first error
	for _, r := range t {
		if err := r.Step(rec); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (t tee) Event(ev engine.TimedEvent) error {
	var first error
	for _, r := range t {
		if err := r.Event(ev); err != nil && first == nil {
			first = err
		}
	}
	return first
}
