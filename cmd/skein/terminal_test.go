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
