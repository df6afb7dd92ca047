package live

import (
	"fmt"
	"io"
	"sync"

	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/workflow"
)

// Display shows a run's progress: an Observer that the command also
// tells its own lines (Say) and closes before it prints the run's result.
type Display interface {
	runner.Observer
	runner.WorkflowObserver
	// Say prints a line of the command's own (a Ctrl-C notice).
	Say(line string)
	// Close ends the display; what is printed after it goes below.
	Close()
}

// Options configure a display.
type Options struct {
	// Out gets the progress; Err the repair loop's diagnostics.
	Out, Err io.Writer
	// Clock tells the time of spinners and elapsed times (default: the
	// wall clock).
	Clock clock.Clock
	// Color colours the plain lines (Live always colours).
	Color bool
	// NotesOnly shows the repair loop's notes and the command's lines,
	// and no step (stdout carries JSON).
	NotesOnly bool
}

// Plain prints one line per step as it ends, and nothing that changes:
// for logs, pipes, NO_COLOR and TERM=dumb. Lines go out from a goroutine
// of their own, with every line printed while the last write was on its
// way: the steps of a busy run cost a write for many lines, not one each,
// and a slow reader of the output holds up the run only once maxPending
// bytes of lines wait.
type Plain struct {
	mu sync.Mutex
	o  Options
	b  *board
	st styles
	// pending are the lines not written yet; writing is set while a
	// goroutine writes them (writeOut), and written signals each write.
	pending []byte
	writing bool
	written *sync.Cond
	// spare is the buffer writeOut wrote last, kept for the next lines:
	// a run that prints a line at a time does not grow a new one each time.
	spare []byte
}

var _ Display = (*Plain)(nil)

// NewPlain returns a plain display.
func NewPlain(o Options) *Plain {
	st := newStyles(o.Color)
	p := &Plain{o: o, b: newBoard(o.Clock, st), st: st}
	p.written = sync.NewCond(&p.mu)
	return p
}

// print queues lines for writeOut; p.mu is held.
func (p *Plain) print(lines []string) {
	if len(lines) == 0 {
		return
	}
	for _, l := range lines {
		p.pending = append(append(p.pending, l...), '\n')
	}
	if !p.writing {
		p.writing = true
		go p.writeOut()
	}
	for len(p.pending) > maxPending && p.writing {
		p.written.Wait()
	}
}

// maxPending is the most bytes of lines print queues before it waits for
// the output.
const maxPending = 256 << 10

// writeOut writes the pending lines until none is left.
func (p *Plain) writeOut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	buf := p.spare // the buffer written last time: the lines go on in it
	for len(p.pending) > 0 {
		buf, p.pending = p.pending, buf[:0]
		p.mu.Unlock()
		_, _ = p.o.Out.Write(buf)
		p.mu.Lock()
		p.written.Broadcast()
	}
	p.spare = buf[:0]
	p.writing = false
	p.written.Broadcast()
}

// drain waits until every line printed so far is written; p.mu is held.
func (p *Plain) drain() {
	for p.writing {
		p.written.Wait()
	}
}

// Workflow lays out the columns for w's nodes.
func (p *Plain) Workflow(w *workflow.Workflow) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.b.workflow(w)
}

// Started prints the run's first line, with its id, so an interrupted
// run can be found and resumed.
func (p *Plain) Started(run *record.Run, resumed bool) {
	if p.o.NotesOnly {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.print(p.b.started(run, resumed))
}

// Step prints the line of a step that ended.
func (p *Plain) Step(rec record.Step) {
	if p.o.NotesOnly {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.print(p.b.step(rec))
}

// Event prints retries and warnings.
func (p *Plain) Event(ev record.TimedEvent) {
	if p.o.NotesOnly {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.print(p.b.event(ev))
}

// Note prints a line of the repair loop; diagnostics and why the loop
// stopped go to Err.
func (p *Plain) Note(n runner.Note) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, line := noteLine(p.st, n); w == toErr {
		p.drain()
		fmt.Fprintln(p.o.Err, line)
	} else {
		p.print([]string{line})
	}
}

// Say prints a line of the command's on Err, after a line break: on a
// terminal it follows the ^C that Ctrl-C echoes.
func (p *Plain) Say(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drain()
	fmt.Fprintln(p.o.Err, "\n"+line)
}

// Close returns once every line printed is written.
func (p *Plain) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drain()
}

type noteDest int

const (
	toOut noteDest = iota
	toErr
)

// noteLine renders a note of the repair loop and says where it goes.
func noteLine(st styles, n runner.Note) (noteDest, string) {
	switch n.Kind {
	case "diagnostic":
		return toErr, n.Text
	case "stopped":
		return toErr, "skein: " + n.Text
	case "warning":
		return toErr, "skein: warning: " + n.Text
	case "repair":
		return toOut, "\n" + st.cyan.Render(n.Text)
	case "repaired":
		return toOut, st.cyan.Render(n.Text)
	case "problem":
		return toOut, st.yellow.Render(n.Text)
	}
	return toOut, st.dim.Render(n.Text)
}
