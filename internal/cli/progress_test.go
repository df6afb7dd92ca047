package cli_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/cli"
)

// writeFlow writes a workflow file into a new folder and returns its path.
func writeFlow(t *testing.T, src string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "flow.yaml")
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	return file
}

var runIDLine = regexp.MustCompile(`▶ run ([0-9a-f]+) ·`)

// What `skein run` prints when it is not on a terminal, for a run whose
// node is retried, then fails with a long stderr, under a checked node:
// one line per step, the retry, the error with the last 20 lines of
// stderr, a verdict that names the failed check, and the command that
// resumes the run.
func TestRunPlainOutput(t *testing.T) {
	t.Parallel()
	file := writeFlow(t, `version: 1
name: build
nodes:
  - {id: start, type: trigger.manual}
  - id: pick
    type: if
    condition: "1 < 2"
  - id: compile_everything_in_the_repository
    type: shell
    command: [sh, -c, 'for i in $(seq 1 30); do echo "line $i" >&2; done; exit 3']
    retries: 1
    retry_backoff: 1ms
    checks:
      - {name: built, type: expr, expr: "compile_everything_in_the_repository.exit_code == 0"}
  - {id: never, type: template, text: x}
edges:
  - {from: start, to: pick}
  - {from: pick, to: compile_everything_in_the_repository, on: "true"}
  - {from: pick, to: never, on: "false"}
`)
	dir := t.TempDir()
	r := skein(t, "run", "--dir", dir, file)
	require.Equal(t, 1, r.code, r.stdout+r.stderr)
	m := runIDLine.FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	id := m[1]

	lines := strings.Split(r.stdout, "\n")
	require.Regexp(t, `(?m)^✓ pick                                  if             \S+  → true$`, r.stdout)
	require.Contains(t, lines, "– never                                 template       skipped")
	require.Regexp(t, `(?m)^↻ compile_everything_in_the_repository  attempt 2/2 in \d+ms \(command "sh" exited with status 3\)$`, r.stdout)
	require.Equal(t, 1, strings.Count(r.stdout, "✗ "), "one final mark for the step, not one per attempt:\n%s", r.stdout)
	require.Regexp(t, `(?m)^✗ compile_everything_in_the_repository  shell          \S+  after 2 attempts\n    command "sh" exited with status 3\n    │ line 11\n`, r.stdout)
	require.Contains(t, r.stdout, "    │ line 30\n")
	require.NotContains(t, r.stdout, "│ line 10\n", "only the last 20 lines of stderr")
	require.Contains(t, r.stdout, "INCOMPLETE · 0 passed, 1 not run (compile_everything_in_the_repository › built: the node failed)", "the failed node's checks are not run")
	require.True(t, strings.HasSuffix(r.stdout, "resume with: skein resume "+id+" --dir "+dir+"\n"), r.stdout)

	show := skein(t, "runs", "show", "--dir", dir, id)
	require.Equal(t, 0, show.code, show.stderr)
	require.Contains(t, show.stdout, "compile_everything_in_the_repository failed: command \"sh\" exited with status 3\n    │ line 11\n")
	require.Contains(t, show.stdout, "    │ line 30\n")
}

// skein runs show answers what the run gave: its outputs, as skein run
// printed them.
func TestRunsShowPrintsTheOutputs(t *testing.T) {
	t.Parallel()
	file := writeFlow(t, `version: 1
name: sums
inputs:
  n: {type: integer}
nodes:
  - {id: add, type: set, values: {sum: "{{ inputs.n + 1 }}", list: [1, "two"]}}
outputs:
  sum: "{{ add.sum }}"
  list: "{{ add.list }}"
`)
	dir := t.TempDir()
	r := skein(t, "run", "--dir", dir, file, "-i", "n=41")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	id := runIDLine.FindStringSubmatch(r.stdout)[1]
	want := "outputs: {\n  \"list\": [\n    1,\n    \"two\"\n  ],\n  \"sum\": 42\n}\n"
	require.True(t, strings.HasSuffix(r.stdout, want), r.stdout)

	show := skein(t, "runs", "show", "--dir", dir, id)
	require.Equal(t, 0, show.code, show.stderr)
	require.True(t, strings.HasSuffix(show.stdout, "\n\n"+want), show.stdout)
}

// A command that says what went wrong on stdout, with nothing on stderr,
// shows the last lines of its stdout under its error, its secret masked.
func TestRunShowsStdoutOfAFailureWithoutStderr(t *testing.T) {
	t.Parallel()
	file := writeFlow(t, `version: 1
name: tests
secrets: [TOKEN]
nodes:
  - id: test
    type: shell
    command: [sh, -c, 'for i in $(seq 1 25); do echo "ok $i"; done; echo "FAIL: login as $0"; exit 1', "{{ secrets.TOKEN }}"]
`)
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets.env")
	require.NoError(t, os.WriteFile(secrets, []byte("TOKEN=hunter2-secret\n"), 0o600))
	r := skein(t, "run", "--dir", dir, "--secrets-file", secrets, file)
	require.Equal(t, 1, r.code, r.stdout+r.stderr)
	id := runIDLine.FindStringSubmatch(r.stdout)[1]
	require.Contains(t, r.stdout, "    command \"sh\" exited with status 1\n    │ ok 7\n")
	require.Contains(t, r.stdout, "    │ FAIL: login as ***\n")
	require.NotContains(t, r.stdout, "│ ok 6\n", "only the last 20 lines")

	show := skein(t, "runs", "show", "--dir", dir, id)
	require.Equal(t, 0, show.code, show.stderr)
	require.Contains(t, show.stdout, "test failed: command \"sh\" exited with status 1\n    │ ok 7\n")
	require.Contains(t, show.stdout, "    │ FAIL: login as ***\n")
	require.NotContains(t, show.stdout+r.stdout, "hunter2-secret")
}

// On a terminal `skein run` draws the live view (escape sequences that
// move the cursor and colour); NO_COLOR and TERM=dumb give the plain
// lines instead, without one escape sequence.
func TestRunOnTerminal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		live bool
	}{
		{"a terminal", map[string]string{"TERM": "xterm-256color"}, true},
		{"NO_COLOR", map[string]string{"TERM": "xterm-256color", "NO_COLOR": "1"}, false},
		{"TERM=dumb", map[string]string{"TERM": "dumb"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ptmx, tty, err := pty.Open()
			require.NoError(t, err)
			defer ptmx.Close()
			require.NoError(t, pty.Setsize(ptmx, &pty.Winsize{Cols: 100, Rows: 30}))
			var out bytes.Buffer
			read := make(chan struct{})
			go func() {
				defer close(read)
				_, _ = io.Copy(&out, ptmx) // until EIO: the slave is closed
			}()
			var errb bytes.Buffer
			dir := t.TempDir()
			abs, err := filepath.Abs("testdata/ok.yaml")
			require.NoError(t, err)
			code := cli.MainIn(context.Background(), dir, tc.env, []string{"run", "--dir", dir, abs, "-i", "city=Paris"}, tty, &errb)
			require.NoError(t, tty.Close())
			<-read
			require.Equal(t, 0, code, errb.String())
			got := strings.ReplaceAll(out.String(), "\r\n", "\n")
			require.Contains(t, got, "run ")
			require.Contains(t, got, "completed")
			if tc.live {
				require.Contains(t, got, "\x1b[", "the live view draws with escape sequences")
			} else {
				require.NotContains(t, got, "\x1b", "plain lines only")
				require.Contains(t, got, "✓ start                    trigger.manual <1ms\n")
			}
		})
	}
}

// A foreach body's steps are named by their item's index (loop.index),
// not by their visit; a switch says which case it took.
func TestRunPlainForeachAndSwitch(t *testing.T) {
	t.Parallel()
	file := writeFlow(t, `version: 1
name: items
nodes:
  - {id: start, type: trigger.manual}
  - id: kind
    type: switch
    cases: [{name: small, condition: "1 < 2"}]
  - {id: each, type: foreach, items: "{{ ['a', 'b', 'c'] }}", concurrency: 1}
  - {id: up, type: template, text: "{{ upper(loop.item) }}"}
  - {id: eend, type: endloop, loop: each}
edges:
  - {from: start, to: kind}
  - {from: kind, to: each, on: small}
  - {from: each, to: up, on: body}
  - {from: up, to: eend}
`)
	r := skein(t, "run", "--dir", t.TempDir(), file)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Regexp(t, `(?m)^✓ kind +switch +\S+  → small$`, r.stdout)
	for _, l := range []string{"up[0]", "up[1]", "up[2]"} {
		require.Regexp(t, `(?m)^✓ `+regexp.QuoteMeta(l)+` +template +\S+$`, r.stdout)
	}
	require.NotContains(t, r.stdout, "#2", "a foreach item is not a visit")
	require.NotContains(t, r.stdout, "resume with", "a completed run needs no resume")
}

// TestIsTerminal: the live view is for terminals only. /dev/null is a
// character device too, and `skein run … >/dev/null` drew the whole live
// view into it (foreach of 1,000 items: 0.11 s of CPU became 0.29 s).
func TestIsTerminal(t *testing.T) {
	t.Parallel()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer null.Close()
	require.False(t, cli.IsTerminal(null), "/dev/null is not a terminal")
	f, err := os.CreateTemp(t.TempDir(), "out")
	require.NoError(t, err)
	defer f.Close()
	require.False(t, cli.IsTerminal(f), "a file is not a terminal")
	require.False(t, cli.IsTerminal(&bytes.Buffer{}))
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer ptmx.Close()
	defer tty.Close()
	require.True(t, cli.IsTerminal(tty), "a pseudo-terminal is one")
}

// TestHintsNameTheDatabase: the commands a run's end suggests name the
// --db it was run with, as its --dir, so that they find the run: the
// resume of a failed run, the signal and the resume of a waiting one.
func TestHintsNameTheDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fail := filepath.Join(dir, "fail.yaml")
	require.NoError(t, os.WriteFile(fail, []byte("version: 1\nname: fail\nnodes:\n  - {id: f, type: shell, command: [sh, -c, 'exit 3']}\n"), 0o644))
	db, folder := filepath.Join(dir, "alt.db"), filepath.Join(dir, "d")
	r := skein(t, "run", "--dir", folder, "--db", db, fail)
	require.Equal(t, 1, r.code, r.stdout+r.stderr)
	id := runIDLine.FindStringSubmatch(r.stdout)[1]
	hint := "skein resume " + id + " --dir " + folder + " --db " + db
	require.True(t, strings.HasSuffix(r.stdout, "resume with: "+hint+"\n"), r.stdout)
	again := skein(t, append(strings.Fields(hint)[1:], "-o", "json")...)
	require.Equal(t, 1, again.code, "the hint finds the run (it fails again): %s", again.stdout+again.stderr)
	require.Contains(t, again.stdout, id)

	r = skein(t, "run", "--dir", folder, "--db", db, "../../examples/approval.yaml")
	require.Equal(t, 4, r.code, r.stdout+r.stderr)
	id = runIDLine.FindStringSubmatch(r.stdout)[1]
	require.Contains(t, r.stdout, "skein signal "+id+" approve --dir "+folder+" --db "+db+" --data")
	require.Contains(t, r.stdout, "skein resume "+id+" --dir "+folder+" --db "+db+" then follows the timeout")
}
