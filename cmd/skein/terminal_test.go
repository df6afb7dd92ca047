package main_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
)

// On a terminal, skein asks the terminal nothing: no background colour
// query (ESC]11;?) and no cursor position report (ESC[6n), whose answers
// a terminal that does not give them would be waited for, and which a
// log of the output would keep. Not in plain lines (NO_COLOR, TERM=dumb),
// not with -o json, not in the live view, not in other commands.
func TestNoTerminalQueries(t *testing.T) {
	t.Parallel()
	flow := filepath.Join(t.TempDir(), "flow.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: hello
nodes:
  - {id: start, type: trigger.manual}
  - {id: greet, type: template, text: "Hello!"}
edges:
  - {from: start, to: greet}
`), 0o644))
	tests := []struct {
		name string
		env  []string
		args []string
	}{
		{"NO_COLOR", []string{"NO_COLOR=1"}, []string{"run", flow}},
		{"TERM=dumb", []string{"TERM=dumb"}, []string{"run", flow}},
		{"json", nil, []string{"run", "-o", "json", flow}},
		{"live", nil, []string{"run", flow}},
		{"validate", []string{"NO_COLOR=1"}, []string{"validate", flow}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, tc.args...)
			cmd.Dir = t.TempDir()
			// CI set would keep a terminal library from asking anyway.
			cmd.Env = append(withoutEnv(os.Environ(), "CI", "NO_COLOR", "TERM"), append([]string{"TERM=xterm-256color"}, tc.env...)...)
			ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 100, Rows: 30})
			require.NoError(t, err)
			defer ptmx.Close()
			var out bytes.Buffer
			_, err = io.Copy(&out, ptmx) // until EIO: the command exited
			if err != nil && !errors.Is(err, syscall.EIO) {
				require.NoError(t, err)
			}
			require.NoError(t, cmd.Wait(), out.String())
			require.NotEmpty(t, out.String())
			require.NotContains(t, out.String(), "\x1b]11;?", "a background colour query")
			require.NotContains(t, out.String(), "\x1b[6n", "a cursor position query")
		})
	}
}

// withoutEnv drops the variables named from env.
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || k == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// A double Ctrl-C while a long-named node runs, on a terminal 120 columns
// wide, read back through a terminal emulator: every row of the screen is
// a whole line skein printed or one cut with …, none a fragment of an
// older frame, and the screen ends with the run's summary.
func TestDoubleCtrlCLeavesNoFragments(t *testing.T) {
	t.Parallel()
	const cols = 120
	dir := t.TempDir()
	flow := filepath.Join(dir, "flow.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: nap
nodes:
  - {id: start, type: trigger.manual}
  - {id: sleep_through_the_whole_quarterly_reporting_window, type: shell, command: [sleep, "30"]}
edges:
  - {from: start, to: sleep_through_the_whole_quarterly_reporting_window}
`), 0o644))
	cmd := exec.Command(bin, "run", flow)
	cmd.Dir = dir
	cmd.Env = append(withoutEnv(os.Environ(), "CI", "NO_COLOR", "TERM"), "TERM=xterm-256color")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: cols, Rows: 30})
	require.NoError(t, err)
	defer ptmx.Close()
	var out bytes.Buffer
	// waitFor reads the terminal until it has shown s.
	waitFor := func(s string) {
		buf := make([]byte, 4096)
		for !strings.Contains(out.String(), s) {
			n, err := ptmx.Read(buf)
			out.Write(buf[:n])
			require.NoError(t, err, "waiting for %q in %q", s, out.String())
		}
	}
	waitFor("1 running")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	waitFor("Ctrl-C again")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	if _, err := io.Copy(&out, ptmx); err != nil && !errors.Is(err, syscall.EIO) {
		require.NoError(t, err)
	}
	var ee *exec.ExitError
	require.ErrorAs(t, cmd.Wait(), &ee)
	require.Equal(t, 130, ee.ExitCode(), out.String())

	em := vt.NewEmulator(cols, 30)
	answers := make(chan struct{})
	go func() {
		defer close(answers)
		_, _ = io.Copy(io.Discard, em)
	}()
	_, err = em.Write(out.Bytes())
	require.NoError(t, err)
	screen := strings.TrimRight(em.String(), "\n ")
	require.NoError(t, em.InputPipe().(io.Closer).Close())
	<-answers
	var lines []string
	for _, l := range strings.Split(screen, "\n") {
		lines = append(lines, strings.TrimRight(l, " "))
	}
	for _, l := range lines {
		require.Regexp(t, `^(|▶ run [0-9a-f]+ · nap|✓ start +trigger\.manual .*|⊘ sleep_through_\S+… +shell +\S+  cancelled: command "sleep" was cancelled.*|cancelling: waiting for running nodes \(Ctrl-C again to stop them now\)|run [0-9a-f]+ cancelled in .*|resume with: .*)$`, l, "a row that is no line skein printed:\n%s", screen)
	}
	cancelled := ""
	for _, l := range lines {
		if strings.HasPrefix(l, "⊘ ") {
			cancelled = l
		}
	}
	require.True(t, strings.HasSuffix(cancelled, "…"), "the cancelled line is cut to the width:\n%s", screen)
	require.Regexp(t, `resume with: skein resume [0-9a-f]+$`, lines[len(lines)-1], screen)
}
