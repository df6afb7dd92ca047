package live

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/workflow"
)

// Live shows a run on a terminal, inline (no alternate screen): it
// prints each finished line above its view for good and keeps under
// them the steps under way and the run's totals, redrawn in place. It
// reads no keys and asks the terminal nothing (no colour or cursor
// queries): Ctrl-C stays the terminal's signal, which the command turns
// into a cancel.
//
// Every line it writes is cut to the terminal's width, so each takes one
// row and a redraw, which moves up as many rows as it drew, never leaves
// part of an older frame behind.
type Live struct {
	mu      sync.Mutex // guards the fields below
	b       *board
	st      styles
	o       Options
	tick    time.Duration
	fd      int // the terminal's descriptor, -1 if Out is no file
	height  int
	queued  []string // to print above the view at the next frame
	rows    int      // rows the last view took
	drawn   bool     // a frame was drawn: the cursor is hidden
	stopped chan struct{}
	done    chan struct{}
	closed  bool
	started bool
	failed  bool   // a write failed: print plain lines
	restore func() // the terminal's echo
	keep    bool   // stop: a blank last line under the last frame
	last    string // the width and view last drawn
	ending  sync.Once
}

var _ Display = (*Live)(nil)

// LiveOptions are what a live display adds to Options.
type LiveOptions struct {
	// Tick is how often the view is redrawn for its spinners and times;
	// 0 redraws at once whenever something happens (tests).
	Tick time.Duration
}

// DefaultTick redraws the spinners ten times a second.
const DefaultTick = spinEvery

// NewLive returns a live display on o.Out, which must be a terminal. It
// starts drawing with the first thing to show, so a command that stops
// before a run starts (an invalid workflow) leaves the terminal alone.
func NewLive(o Options, lo LiveOptions) *Live {
	st := newStyles(true)
	l := &Live{b: newBoard(o.Clock, st), st: st, o: o, tick: lo.Tick, fd: -1,
		stopped: make(chan struct{}), done: make(chan struct{}), restore: func() {}}
	if f, ok := o.Out.(*os.File); ok {
		l.fd = int(f.Fd())
	}
	l.size()
	return l
}

// size reads the terminal's size (under the lock, or before the display
// starts).
func (l *Live) size() {
	if l.fd < 0 {
		return
	}
	if w, h, err := term.GetSize(l.fd); err == nil && w > 0 {
		l.b.width, l.height = w, h
	}
}

// start turns off the terminal's echo and, with a tick, starts redrawing
// the view on it; once.
func (l *Live) start() {
	if l.started || l.closed {
		return
	}
	l.started = true
	if f, ok := l.o.Out.(*os.File); ok {
		l.restore = quiet(f)
	}
	if l.tick <= 0 {
		close(l.done)
		return
	}
	go func() {
		defer close(l.done)
		t := time.NewTicker(l.tick)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				l.mu.Lock()
				l.flush()
				l.mu.Unlock()
			case <-l.stopped:
				return
			}
		}
	}()
}

// flush draws a frame: the queued lines above, then the view in place of
// the last one. Under the lock.
func (l *Live) flush() {
	if l.failed {
		return
	}
	l.size()
	var view string
	switch {
	case l.closed:
		view = ""
	case l.keep:
		view = l.b.view(spinFrames) + "\n"
	default:
		view = l.b.view(spinFrames)
	}
	frame := fmt.Sprintf("%d\x00%s", l.b.width, view)
	if len(l.queued) == 0 && l.drawn && frame == l.last && !l.closed {
		return // the same frame again, at the same width
	}
	l.last = frame
	lines := strings.Split(view, "\n")
	if l.height > 0 && len(lines) > l.height {
		lines = lines[len(lines)-l.height:] // the rows above are out of reach
	}
	var buf strings.Builder
	if !l.drawn {
		buf.WriteString(ansi.HideCursor)
	}
	if l.rows > 1 {
		buf.WriteString(ansi.CursorUp(l.rows - 1))
	}
	buf.WriteByte('\r')
	w := l.b.width
	row := func(s string) {
		s = fit(s, w)
		buf.WriteString(s)
		if w <= 0 || ansi.StringWidth(s) < w {
			buf.WriteString(ansi.EraseLineRight)
		}
	}
	for _, q := range l.queued {
		for _, s := range strings.Split(q, "\n") {
			row(s)
			buf.WriteString("\r\n")
		}
	}
	for i, s := range lines {
		row(s)
		if i < len(lines)-1 {
			buf.WriteString("\r\n")
		}
	}
	buf.WriteString(ansi.EraseScreenBelow + "\r")
	l.queued, l.rows, l.drawn = nil, len(lines), true
	if _, err := io.WriteString(l.o.Out, buf.String()); err != nil {
		l.failed = true
		fmt.Fprintf(l.o.Err, "skein: live progress: %v; plain lines follow\n", err)
	}
}

// fit cuts each line of s to width w (0: as it is), with an ellipsis
// where it is cut, counting wide runes as two columns: a line that
// wrapped would take two rows of the screen where a redraw counts one,
// and leave part of it behind.
func fit(s string, w int) string {
	if w <= 0 {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, w, "…")
	}
	return strings.Join(lines, "\n")
}

// apply changes the board under the lock and queues the lines it gives
// to print above the view, in order; without a tick it draws at once.
func (l *Live) apply(f func(*board) []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.start()
	lines := f(l.b)
	if l.failed { // the terminal could not be drawn on: plain lines
		if len(lines) > 0 {
			fmt.Fprintln(l.o.Out, strings.Join(lines, "\n"))
		}
		return
	}
	if len(lines) > 0 {
		l.queued = append(l.queued, strings.Join(lines, "\n"))
	}
	if l.tick <= 0 {
		l.flush()
	}
}

// Workflow lays out the columns for w's nodes.
func (l *Live) Workflow(w *workflow.Workflow) {
	l.apply(func(b *board) []string { b.workflow(w); return nil })
}

// Started prints the run's first line.
func (l *Live) Started(run *record.Run, resumed bool) {
	l.apply(func(b *board) []string { return b.started(run, resumed) })
}

// Step prints the line of a step that ended, or shows one under way.
func (l *Live) Step(rec record.Step) {
	l.apply(func(b *board) []string { return b.step(rec) })
}

// Event prints retries and warnings, and times the steps under way.
func (l *Live) Event(ev record.TimedEvent) {
	l.apply(func(b *board) []string { return b.event(ev) })
}

// Note prints a line of the repair loop above the view; diagnostics and
// why the loop stopped go to Err.
func (l *Live) Note(n runner.Note) {
	dest, line := noteLine(l.st, n)
	if dest == toErr {
		fmt.Fprintln(l.o.Err, line)
		return
	}
	l.apply(func(*board) []string { return []string{line} })
}

// Say prints a line of the command's above the view.
func (l *Live) Say(line string) {
	l.apply(func(*board) []string { return []string{l.st.yellow.Render(line)} })
}

// Close prints what is queued, clears the view and shows the cursor;
// the terminal is the command's again when it returns.
func (l *Live) Close() { l.end(false) }

// end stops the redraws and draws the last frame: none, or with keep the
// view as it was (tests).
func (l *Live) end(keep bool) { l.ending.Do(func() { l.finish(keep) }) }

func (l *Live) finish(keep bool) {
	l.mu.Lock()
	if !l.started {
		l.closed = true
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	close(l.stopped)
	<-l.done
	l.mu.Lock()
	l.keep, l.closed = keep, !keep
	l.flush()
	l.keep, l.closed = false, true
	if !l.failed {
		_, _ = io.WriteString(l.o.Out, ansi.ShowCursor)
	}
	l.mu.Unlock()
	l.restore()
}

// spinFrames are the spinner's frames (the braille dots of Bubbles'
// MiniDot); the frame shown follows the step's elapsed time on the
// display's clock, so a fixed clock draws a fixed frame.
var spinFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
