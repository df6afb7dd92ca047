package live

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
)

// longRun starts a run with node ids, errors and messages longer than a
// narrow terminal: four nodes run, one fails with a long error.
func longRun(s *script) {
	long := "fetch_the_quarterly_revenue_report_from_the_upstream_archive"
	s.begin("start:trigger.manual", long+":http", "summarise:llm", "archive:shell", "発注を確認する:shell")
	s.run(long, "http")
	s.run("summarise", "llm")
	s.run("archive", "shell")
	s.run("発注を確認する", "shell")
	s.wait(1200 * time.Millisecond)
	f := s.rec(long, "http", engine.StatusFailed)
	f.Error = &node.Error{Message: "GET https://reports.example.com/archive/2026/q3/revenue.csv: HTTP 502 Bad Gateway from the upstream proxy after 30s"}
	s.end(f, 0)
	s.wait(1600 * time.Millisecond)
}

// doubleCtrlC plays longRun, then a Ctrl-C, a second one that stops the
// running nodes, and their cancelled lines.
func doubleCtrlC(s *script) {
	longRun(s)
	s.d.Say("cancelling: waiting for running nodes (Ctrl-C again to stop them now)")
	for _, n := range []string{"archive", "発注を確認する", "summarise"} {
		c := s.rec(n, "shell", engine.StatusCancelled)
		c.Error = &node.Error{Message: `command "sh" was cancelled; it was stopped with the processes it started`}
		s.end(c, 0)
	}
}

// The live view fits every line it draws to the terminal's width, so a
// redraw never leaves part of a wrapped line behind: after a double
// Ctrl-C the screen holds the finished lines, cut to the width, and then
// what the command prints once the display is closed.
func TestLiveFitsTheWidth(t *testing.T) {
	t.Parallel()
	summary := []string{"", "run 3f2a9c1e0b7d cancelled in 2.8s", "resume with: skein resume 3f2a9c1e0b7d"}
	for _, cols := range []int{40, 80, 120} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(t0)
			screen := onTerminal(t, cols, 30, func(out *os.File) {
				l := NewLive(Options{Out: out, Err: io.Discard, Clock: clk}, LiveOptions{})
				doubleCtrlC(&script{d: l, clk: clk})
				l.Close()
				_, _ = out.WriteString(strings.Join(summary, "\n") + "\n")
			})
			golden(t, filepath.Join("live", fmt.Sprintf("width-%d.golden", cols)), screen+"\n")
			lines := strings.Split(screen, "\n")
			for _, l := range lines {
				require.LessOrEqual(t, ansi.StringWidth(l), cols, "%q is wider than the terminal", l)
			}
			require.Equal(t, summary, lines[len(lines)-len(summary):], "the screen ends with what was printed last")
			for _, l := range lines[:len(lines)-len(summary)] {
				require.Regexp(t, `^(▶|✓|✗|⊘|cancelling|    )`, l, "every line on the screen is one the display printed, whole or cut")
			}
		})
	}
}

// The nodes under way and the run's totals fit the width too.
func TestLiveViewFitsTheWidth(t *testing.T) {
	t.Parallel()
	for _, cols := range []int{40, 80, 120} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(t0)
			screen := onTerminal(t, cols, 30, func(out *os.File) {
				l := NewLive(Options{Out: out, Err: io.Discard, Clock: clk}, LiveOptions{})
				longRun(&script{d: l, clk: clk})
				l.stop()
			})
			golden(t, filepath.Join("live", fmt.Sprintf("view-%d.golden", cols)), screen+"\n")
			lines := strings.Split(screen, "\n")
			for _, l := range lines {
				require.LessOrEqual(t, ansi.StringWidth(l), cols, "%q is wider than the terminal", l)
			}
			require.Regexp(t, `^3 running · 0 tokens · \$0\.0000 · 2\.8s$`, lines[len(lines)-1], "the totals are the last line, whole")
		})
	}
}
