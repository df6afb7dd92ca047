package live

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/workflow"
)

// Live shows a run on a terminal: a Bubble Tea program, inline (no
// alternate screen), that prints each finished line above itself for
// good and keeps under them the steps under way and the run's totals.
// It reads no keys: Ctrl-C stays the terminal's signal, which the
// command turns into a cancel.
//
// It uses Bubble Tea v1: the inline renderer of v2.1 (charm.land) writes
// lines printed above the view at the top of the screen, and drops the
// lines of a multi-line print, when the view is not at the bottom of the
// terminal — which it is not when a run starts.
type Live struct {
	mu      sync.Mutex // guards b and the flags below
	b       *board
	st      styles
	o       Options
	p       *tea.Program
	done    chan struct{}
	closed  bool
	once    sync.Once // starts the program
	started bool
	failed  bool   // the program ended with an error: print plain lines
	restore func() // the terminal's echo
	keep    bool   // stop: a blank last line takes the renderer's last erase
}

var _ Display = (*Live)(nil)

// LiveOptions are what a live display adds to Options.
type LiveOptions struct {
	// Tick is how often the view is redrawn for its spinners and times;
	// 0 redraws only when something happens (tests).
	Tick time.Duration
	// Env is the terminal's environment (TERM…); nil takes the process's.
	Env []string
}

// DefaultTick redraws the spinners ten times a second.
const DefaultTick = spinEvery

// NewLive returns a live display on o.Out, which must be a terminal. Its
// program starts with the first thing to show, so a command that stops
// before a run starts (an invalid workflow) leaves the terminal alone.
func NewLive(o Options, lo LiveOptions) *Live {
	st := newStyles(true)
	l := &Live{b: newBoard(o.Clock, st), st: st, o: o, done: make(chan struct{}), restore: func() {}}
	out := o.Out
	if f, ok := out.(*os.File); ok {
		out = terminal{File: f, fd: f.Fd()}
		if w, _, err := term.GetSize(int(f.Fd())); err == nil {
			l.b.width = w
		}
	}
	opts := []tea.ProgramOption{
		tea.WithOutput(out), tea.WithInput(nil), tea.WithoutSignalHandler(), tea.WithoutCatchPanics(), tea.WithoutBracketedPaste(),
	}
	if lo.Env != nil {
		opts = append(opts, tea.WithEnvironment(lo.Env))
	}
	l.p = tea.NewProgram(&model{l: l, tick: lo.Tick, spin: spinFrames}, opts...)
	return l
}

// start runs the program, once.
func (l *Live) start() {
	l.once.Do(func() {
		l.mu.Lock()
		if l.closed { // Close came first: never start
			l.mu.Unlock()
			return
		}
		l.started = true
		l.mu.Unlock()
		if f, ok := l.o.Out.(*os.File); ok {
			l.restore = quiet(f)
		}
		go func() {
			defer close(l.done)
			if _, err := l.p.Run(); err != nil {
				l.mu.Lock()
				l.failed = true
				l.mu.Unlock()
				fmt.Fprintf(l.o.Err, "skein: live progress: %v; plain lines follow\n", err)
			}
		}()
	})
}

// refresh asks for a new frame.
type refresh struct{}

type tick struct{}

// model is the Bubble Tea model: its view is the board's.
type model struct {
	l    *Live
	tick time.Duration
	spin []string
}

func (m *model) Init() tea.Cmd { return m.next() }

func (m *model) next() tea.Cmd {
	if m.tick <= 0 {
		return nil
	}
	return tea.Tick(m.tick, func(time.Time) tea.Msg { return tick{} })
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if ws, ok := msg.(tea.WindowSizeMsg); ok && ws.Width > 0 {
		m.l.mu.Lock()
		m.l.b.width = ws.Width
		m.l.mu.Unlock()
	}
	if _, ok := msg.(tick); ok {
		m.l.mu.Lock()
		closed := m.l.closed
		m.l.mu.Unlock()
		if !closed {
			return m, m.next()
		}
	}
	return m, nil
}

func (m *model) View() string {
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	switch {
	case m.l.closed:
		return ""
	case m.l.keep:
		return fit(m.l.b.view(m.spin), m.l.b.width) + "\n"
	}
	return fit(m.l.b.view(m.spin), m.l.b.width)
}

// fit cuts each line of s to width w (0: as it is), with an ellipsis
// where it is cut, counting wide runes as two columns: a line that
// wrapped would take two rows of the screen where the renderer counts
// one, and the next redraw would leave part of it behind.
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

// apply changes the board under the lock, prints the lines it gives
// above the view, in order, and redraws.
func (l *Live) apply(f func(*board) []string) {
	l.start()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	lines := f(l.b)
	failed, width := l.failed, l.b.width
	l.mu.Unlock()
	if failed { // the program could not draw: plain lines
		if len(lines) > 0 {
			fmt.Fprintln(l.o.Out, strings.Join(lines, "\n"))
		}
		return
	}
	// Send, not Program.Println: it does not block once the program ended.
	if len(lines) > 0 {
		l.p.Send(tea.Println(fit(strings.Join(lines, "\n"), width))())
	}
	l.p.Send(refresh{})
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

// Close clears the view and ends the program; the terminal is the
// command's again when it returns.
func (l *Live) Close() {
	l.mu.Lock()
	l.closed = true
	started := l.started
	l.mu.Unlock()
	if !started {
		return
	}
	l.p.Send(refresh{})
	l.p.Quit()
	<-l.done
	l.restore()
}

// spinFrames are the spinner's frames (the braille dots of Bubbles'
// MiniDot); the frame shown follows the step's elapsed time on the
// display's clock, so a fixed clock draws a fixed frame.
var spinFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// terminal is the display's terminal as its program sees it: the file,
// with its descriptor read once. The program checks the terminal's size
// from goroutines of its own that may outlive it; they read the number
// kept here, not the file's, which the command may be closing by then.
type terminal struct {
	*os.File
	fd uintptr
}

// Fd returns the terminal's descriptor, read when the display started.
func (t terminal) Fd() uintptr { return t.fd }
