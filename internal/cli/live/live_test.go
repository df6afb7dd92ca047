package live

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), got, "%s differs; run go test -update and read the diff", path)
}

// The plain lines of every scenario: what logs, pipes and NO_COLOR get.
func TestPlainGolden(t *testing.T) {
	t.Parallel()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			clk := clock.NewFake(t0)
			d := NewPlain(Options{Out: &out, Err: &errb, Clock: clk})
			sc.play(&script{d: d, clk: clk})
			d.Close()
			golden(t, filepath.Join("plain", sc.name+".golden"), out.String()+stderrPart(errb.String()))
		})
	}
}

func stderrPart(s string) string {
	if s == "" {
		return ""
	}
	return "--- stderr\n" + s
}

// The live view of every scenario, run on a pseudo-terminal and read back
// through a terminal emulator: the screen as a person sees it when the
// scenario's last event has been drawn.
func TestLiveGolden(t *testing.T) {
	t.Parallel()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(t0)
			screen := onTerminal(t, 100, 30, func(out *os.File) {
				l := NewLive(Options{Out: out, Err: io.Discard, Clock: clk}, LiveOptions{})
				sc.play(&script{d: l, clk: clk})
				l.stop()
			})
			golden(t, filepath.Join("live", sc.name+".golden"), screen+"\n")
		})
	}
}

// Closing the live display takes its view away, leaving the finished
// lines for what the command prints next.
func TestLiveCloseClearsView(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	screen := onTerminal(t, 100, 30, func(out *os.File) {
		l := NewLive(Options{Out: out, Err: io.Discard, Clock: clk}, LiveOptions{})
		scenarios[0].play(&script{d: l, clk: clk})
		l.Close()
		_, _ = out.WriteString("run 3f2a9c1e0b7d completed in 2.2s\n")
	})
	golden(t, filepath.Join("live", "closed.golden"), screen+"\n")
}

// onTerminal runs draw with the slave side of a pseudo-terminal of the
// given size as its output and returns the screen a terminal emulator
// shows once draw has returned and everything written was read.
func onTerminal(t *testing.T, cols, rows int, draw func(out *os.File)) string {
	t.Helper()
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer ptmx.Close()
	require.NoError(t, pty.Setsize(ptmx, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}))
	em := vt.NewEmulator(cols, rows)
	answers := make(chan struct{})
	go func() { // the emulator's answers to queries: nobody asks for them here
		defer close(answers)
		_, _ = io.Copy(io.Discard, em)
	}()
	read := make(chan error, 1)
	go func() {
		_, err := io.Copy(em, ptmx)
		read <- err
	}()
	draw(tty)
	require.NoError(t, tty.Close())
	// With the slave closed, the master reads what is left, then EIO.
	if err := <-read; err != nil && !errors.Is(err, syscall.EIO) {
		require.NoError(t, err)
	}
	// Lines printed above the view scroll off the top of the screen, as on
	// any terminal: the scrollback keeps them.
	var b strings.Builder
	for _, l := range em.Scrollback().Lines() {
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	screen := strings.TrimRight(b.String()+em.String(), "\n ")
	// Ending the answers' pipe ends their reader (Emulator.Close would race
	// with it).
	require.NoError(t, em.InputPipe().(io.Closer).Close())
	<-answers
	return screen
}

// stop ends the display leaving its last frame on the screen (tests).
func (l *Live) stop() { l.end(true) }

// With a tick the display draws on its own clock, not at each event; what
// it has not drawn yet when it closes is printed then, in order.
func TestLiveTickDrawsWhatIsQueuedAtClose(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	screen := onTerminal(t, 100, 30, func(out *os.File) {
		l := NewLive(Options{Out: out, Err: io.Discard, Clock: clk}, LiveOptions{Tick: time.Hour})
		scenarios[0].play(&script{d: l, clk: clk})
		l.Close()
		_, _ = out.WriteString("run 3f2a9c1e0b7d completed in 2.2s\n")
	})
	golden(t, filepath.Join("live", "closed.golden"), screen+"\n")
}

// TestPlainWritesLinesTogether: a line goes out without waiting for Close;
// the lines printed while a write is on its way go out together in the
// next write, in order; Close returns once all are written.
func TestPlainWritesLinesTogether(t *testing.T) {
	t.Parallel()
	w := &heldWriter{entered: make(chan struct{}), release: make(chan struct{})}
	clk := clock.NewFake(t0)
	d := NewPlain(Options{Out: w, Err: io.Discard, Clock: clk})
	s := &script{d: d, clk: clk}
	d.Workflow(&workflow.Workflow{Name: "demo", Nodes: []*workflow.Node{{ID: "a", Type: "set"}, {ID: "b", Type: "set"}}})
	d.Started(&store.Run{ID: "3f2a9c1e0b7d", Workflow: "demo", StartedAt: t0}, false)
	<-w.entered // the run's first line is being written, with no Close
	for _, n := range []string{"a", "b", "a"} {
		s.ok(n, "set", 0)
	}
	close(w.release)
	d.Close()
	require.Len(t, w.writes, 2, "the lines printed during the first write go out in one")
	require.Contains(t, w.writes[0], "run 3f2a9c1e0b7d")
	lines := strings.Split(strings.TrimSuffix(w.writes[1], "\n"), "\n")
	require.Len(t, lines, 3)
	for i, n := range []string{"a", "b", "a"} {
		require.Contains(t, lines[i], "✓ "+n)
	}
}

// heldWriter holds its first Write until release is closed, and keeps
// what each Write wrote.
type heldWriter struct {
	entered, release chan struct{}
	writes           []string
}

func (w *heldWriter) Write(b []byte) (int, error) {
	if len(w.writes) == 0 {
		close(w.entered)
		<-w.release
	}
	w.writes = append(w.writes, string(b))
	return len(b), nil
}

// TestBoardKeepsNothingOfEndedSteps: a run of many steps leaves the board
// holding nothing of those that ended, so a long loop's display does not
// grow with it.
func TestBoardKeepsNothingOfEndedSteps(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	b := newBoard(clk, newStyles(false))
	for visit := 1; visit <= 1000; visit++ {
		start := clk.Now()
		r := record.Step{StepOrder: visit, Node: "item", Type: "set", Status: record.StatusRunning, Visit: visit, Attempts: 2, StartedAt: &start}
		b.step(r)
		b.event(record.TimedEvent{Time: start, Event: record.Event{Type: record.EventNodeStarted, Node: "item", Visit: visit}})
		clk.Advance(3 * time.Millisecond)
		end := clk.Now()
		r.Status, r.FinishedAt = record.StatusSuccess, &end
		lines := b.step(r)
		require.Len(t, lines, 1)
		require.Contains(t, lines[0], "3ms", "the duration of its last attempt, from its node_started")
	}
	// A pure step's records come with its end, before its node_started.
	for visit := 1001; visit <= 2000; visit++ {
		start := clk.Now()
		r := record.Step{StepOrder: visit, Node: "item", Type: "set", Status: record.StatusSuccess, Visit: visit, Attempts: 1, StartedAt: &start, FinishedAt: &start}
		require.Len(t, b.step(r), 1)
		b.event(record.TimedEvent{Time: start, Event: record.Event{Type: record.EventNodeStarted, Node: "item", Visit: visit}})
	}
	require.Empty(t, b.act)
	require.Empty(t, b.order)
	require.Empty(t, b.starts)
}

// TestPlainLinesInOrderAcrossWrites: lines printed one write after
// another (each write's buffer kept for the lines after it) all go out,
// in order, none mixed with another.
func TestPlainLinesInOrderAcrossWrites(t *testing.T) {
	t.Parallel()
	w := &signalWriter{wrote: make(chan struct{}, 1000)}
	clk := clock.NewFake(t0)
	d := NewPlain(Options{Out: w, Err: io.Discard, Clock: clk})
	s := &script{d: d, clk: clk}
	nodes := []*workflow.Node{}
	for i := range 50 {
		nodes = append(nodes, &workflow.Node{ID: fmt.Sprintf("n%02d", i), Type: "set"})
	}
	d.Workflow(&workflow.Workflow{Name: "demo", Nodes: nodes})
	d.Started(&store.Run{ID: "3f2a9c1e0b7d", Workflow: "demo", StartedAt: t0}, false)
	<-w.wrote
	for _, n := range nodes {
		s.ok(n.ID, "set", 0)
		<-w.wrote // written before the next is printed
	}
	d.Close()
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := strings.Split(strings.TrimSuffix(w.out.String(), "\n"), "\n")
	require.Len(t, lines, 1+len(nodes))
	for i, n := range nodes {
		require.Contains(t, lines[1+i], "✓ "+n.ID)
	}
}

// signalWriter keeps what is written and signals each Write.
type signalWriter struct {
	mu    sync.Mutex
	out   strings.Builder
	wrote chan struct{}
}

func (w *signalWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	w.out.Write(b)
	w.mu.Unlock()
	w.wrote <- struct{}{}
	return len(b), nil
}
