//go:build unix

package shell_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/nodes/shell"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/node/nodetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// event is one call.Emit.
type event struct {
	kind string
	data map[string]any
}

// bundle is a hand-made call and what the kind emitted through it.
type bundle struct {
	mu     sync.Mutex
	events []event
}

func setup(t *testing.T) *bundle {
	t.Helper()
	return &bundle{}
}

func (b *bundle) call(params map[string]any) *node.Call {
	return &node.Call{
		RunID: "run1", NodeID: "sh", Visit: 1, Attempt: 1, Params: params,
		IdempotencyKey: "run1/sh/1",
		Emit: func(kind string, data map[string]any) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.events = append(b.events, event{kind, data})
		},
		Redact: func(s string) string { return s },
		Eval:   func(string) (any, error) { return nil, errors.New("no expressions here") },
		Now:    func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) },
	}
}

func (b *bundle) emitted() []event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]event(nil), b.events...)
}

// run runs a fresh Shell with params, coerced as the engine coerces them
// (a value coercion refuses fails as the engine fails it).
func (b *bundle) run(ctx context.Context, params map[string]any) (map[string]any, error) {
	coerced, err := nodetest.Params(&shell.Spec, params)
	if err != nil {
		return nil, err
	}
	return (&shell.Shell{}).Run(ctx, b.call(coerced))
}

// nodeError requires err to be a *node.Error and returns it.
func nodeError(t *testing.T, err error) *node.Error {
	t.Helper()
	require.Error(t, err, "expected the node to fail")
	var e *node.Error
	require.ErrorAs(t, err, &e, "expected a *node.Error, got %T: %v", err, err)
	return e
}

func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

func TestRegistered(t *testing.T) {
	t.Parallel()

	k, ok := node.Default.New(shell.Kind)
	require.True(t, ok, "the shell kind should have a constructor")
	require.IsType(t, &shell.Shell{}, k)
}

func TestRunOutput(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	tests := []struct {
		name   string
		params map[string]any
		check  func(t *testing.T, out map[string]any)
	}{
		{
			name:   "echo argv",
			params: map[string]any{"command": []any{"echo", "hello", "world"}},
			check: func(t *testing.T, out map[string]any) {
				require.Equal(t, "hello world\n", out["stdout"])
				require.Equal(t, "", out["stderr"])
				require.Equal(t, 0, out["exit_code"])
				require.Equal(t, map[string]any{"stdout": false, "stderr": false}, out["truncated"])
				require.NotContains(t, out, "json", "plain text is not JSON")
			},
		},
		{
			name:   "numbers and booleans become arguments",
			params: map[string]any{"command": []any{"printf", `%s|%s|%s|%s|%s\n`, 42, 1.5, float64(1000000), true, int64(-7)}},
			check: func(t *testing.T, out map[string]any) {
				require.Equal(t, "42|1.5|1000000|true|-7\n", out["stdout"])
			},
		},
		{
			name:   "argv as []string",
			params: map[string]any{"command": []string{"echo", "typed"}},
			check: func(t *testing.T, out map[string]any) {
				require.Equal(t, "typed\n", out["stdout"])
			},
		},
		{
			name:   "json object parsed and directives hoisted",
			params: map[string]any{"command": []any{"printf", `{"_route": "b", "_state_patch": {"n": 1}, "count": 3, "ratio": 0.5, "tags": ["x"]}` + "\n"}},
			check: func(t *testing.T, out map[string]any) {
				require.Equal(t, map[string]any{
					"count": 3, "ratio": 0.5, "tags": []any{"x"},
				}, out["json"], "json holds outputs; directives are not outputs")
				require.Equal(t, "b", out["_route"], "_route should sit at the top of the result")
				require.Equal(t, map[string]any{"n": 1}, out["_state_patch"])
				require.NotContains(t, out, "count", "only _ keys are hoisted")
			},
		},
		{
			name:   "json array is parsed but carries no directives",
			params: map[string]any{"command": []any{"echo", `[{"_route": "b"}, 2]`}},
			check: func(t *testing.T, out map[string]any) {
				require.Equal(t, map[string]any{"items": []any{map[string]any{"_route": "b"}, 2}, "found": true, "count": 2}, out["json"],
					"a list follows the extraction rule; the first element's _ fields are not copied")
				require.NotContains(t, out, "_route")
			},
		},
		{
			name:   "json scalar",
			params: map[string]any{"command": []any{"echo", "42"}},
			check: func(t *testing.T, out map[string]any) {
				require.Equal(t, map[string]any{"value": 42}, out["json"], "a scalar becomes {value}")
			},
		},
		{
			name:   "two json values are not json",
			params: map[string]any{"command": []any{"echo", "1 2"}},
			check: func(t *testing.T, out map[string]any) {
				require.NotContains(t, out, "json")
			},
		},
		{
			name:   "allow_failure keeps the output of a failed command",
			params: map[string]any{"command": []any{"sh", "-c", "echo out; echo err >&2; exit 3"}, "allow_failure": true},
			check: func(t *testing.T, out map[string]any) {
				require.Equal(t, 3, out["exit_code"])
				require.Equal(t, "out\n", out["stdout"])
				require.Equal(t, "err\n", out["stderr"])
			},
		},
		{
			name:   "allow_failure rendered from a template as text",
			params: map[string]any{"command": []any{"false"}, "allow_failure": "true"},
			check: func(t *testing.T, out map[string]any) {
				require.Equal(t, 1, out["exit_code"])
			},
		},
		{
			name:   "stdin",
			params: map[string]any{"command": []any{"cat"}, "stdin": "piped\ntext"},
			check: func(t *testing.T, out map[string]any) {
				require.Equal(t, "piped\ntext", out["stdout"])
			},
		},
		{
			name:   "stdin from a map is JSON",
			params: map[string]any{"command": []any{"cat"}, "stdin": map[string]any{"a": 1}},
			check: func(t *testing.T, out map[string]any) {
				require.Equal(t, `{"a":1}`, out["stdout"])
				require.Equal(t, map[string]any{"a": 1}, out["json"])
			},
		},
		{
			name:   "no stdin reads empty",
			params: map[string]any{"command": []any{"wc", "-c"}},
			check: func(t *testing.T, out map[string]any) {
				require.Equal(t, "0", strings.TrimSpace(out["stdout"].(string)))
			},
		},
		{
			name:   "cwd",
			params: map[string]any{"command": []any{"pwd", "-P"}, "cwd": dir},
			check: func(t *testing.T, out map[string]any) {
				want, err := filepath.EvalSymlinks(dir)
				require.NoError(t, err)
				require.Equal(t, want+"\n", out["stdout"])
			},
		},
		{
			name:   "relative program found from cwd",
			params: map[string]any{"command": []any{"./hello.sh"}, "cwd": scriptDir(t)},
			check: func(t *testing.T, out map[string]any) {
				require.Equal(t, "hello from a script\n", out["stdout"])
			},
		},
		{
			name:   "env is explicit",
			params: map[string]any{"command": []any{"env"}, "env": map[string]any{"GREETING": "hi there", "COUNT": 7, "EMPTY": nil}},
			check: func(t *testing.T, out map[string]any) {
				vars := envNames(t, out["stdout"].(string))
				require.Equal(t, "hi there", vars["GREETING"])
				require.Equal(t, "7", vars["COUNT"])
				require.Contains(t, vars, "EMPTY")
				require.Equal(t, "", vars["EMPTY"])
				require.Contains(t, vars, "PATH", "the base environment keeps PATH")
				for name := range vars {
					require.Contains(t, []string{"PATH", "HOME", "LANG", "TMPDIR", "USER", "GREETING", "COUNT", "EMPTY", "SKEIN_PROC_STARTING"}, name,
						"the child should see only the base environment, env and (Linux) the guardian's tag")
				}
				if runtime.GOOS == "linux" {
					require.Regexp(t, `^[0-9]+\.[0-9]+$`, vars["SKEIN_PROC_STARTING"], "the guardian's tag: Skein's pid and the command's number")
				}
			},
		},
		{
			name:   "env PATH finds the program",
			params: map[string]any{"command": []any{"hello.sh"}, "env": map[string]any{"PATH": scriptDir(t)}},
			check: func(t *testing.T, out map[string]any) {
				require.Equal(t, "hello from a script\n", out["stdout"])
			},
		},
		{
			name:   "shell true runs a string through sh",
			params: map[string]any{"command": "echo $((1 + 2)) | tr 3 x", "shell": true},
			check: func(t *testing.T, out map[string]any) {
				require.Equal(t, "x\n", out["stdout"])
			},
		},
		{
			name:   "shell true with a list passes arguments as $1, $2",
			params: map[string]any{"command": []any{`printf '%s\n' "$1" "$2"`, "a b; echo injected", "$(echo no)"}, "shell": true},
			check: func(t *testing.T, out map[string]any) {
				require.Equal(t, "a b; echo injected\n$(echo no)\n", out["stdout"])
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			b := setup(t)
			out, err := b.run(t.Context(), tt.params)
			require.NoError(t, err)
			tt.check(t, out)
			require.Empty(t, b.emitted(), "nothing was truncated, so nothing should be emitted")
		})
	}
}

// scriptDir returns a folder holding an executable hello.sh.
func scriptDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello.sh"), []byte("#!/bin/sh\necho hello from a script\n"), 0o755))
	return dir
}

// envNames parses the output of env.
func envNames(t *testing.T, out string) map[string]string {
	t.Helper()
	vars := map[string]string{}
	for _, l := range lines(out) {
		k, v, ok := strings.Cut(l, "=")
		require.True(t, ok, "env printed %q", l)
		vars[k] = v
	}
	return vars
}

// TestEnvNotInherited cannot be parallel: it sets a variable in the test
// process's environment.
func TestEnvNotInherited(t *testing.T) {
	t.Setenv("SKEIN_TEST_PARENT_SECRET", "hunter2")

	tests := []struct {
		name   string
		env    map[string]any
		expect map[string]string
	}{
		{"not given", map[string]any{"GIVEN": "yes"}, map[string]string{"GIVEN": "yes"}},
		{"given explicitly", map[string]any{"SKEIN_TEST_PARENT_SECRET": "passed on"}, map[string]string{"SKEIN_TEST_PARENT_SECRET": "passed on"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			out, err := b.run(t.Context(), map[string]any{"command": []any{"env"}, "env": tt.env})
			require.NoError(t, err)
			stdout := out["stdout"].(string)
			require.NotContains(t, stdout, "hunter2", "the parent's variable leaked into the child")
			vars := envNames(t, stdout)
			for k, v := range tt.expect {
				require.Equal(t, v, vars[k])
			}
			if _, given := tt.env["SKEIN_TEST_PARENT_SECRET"]; !given {
				require.NotContains(t, vars, "SKEIN_TEST_PARENT_SECRET")
			}
		})
	}
}

func TestArgumentsAreNotInterpreted(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		args func(victim, marker string) []any
	}{
		{"separate hostile elements", func(victim, marker string) []any {
			return []any{"; rm -rf " + victim, "$(touch " + marker + ")", "`touch " + marker + "`"}
		}},
		{"one hostile element", func(victim, marker string) []any {
			return []any{"x; rm -rf " + victim + " && touch " + marker + " | $(touch " + marker + ") > " + victim}
		}},
		{"quotes and newlines", func(victim, marker string) []any {
			return []any{`'"; rm -rf ` + victim + `; "'`, "a\nb; touch " + marker}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			dir := t.TempDir()
			victim := filepath.Join(dir, "victim")
			marker := filepath.Join(dir, "created")
			require.NoError(t, os.WriteFile(victim, []byte("keep me"), 0o600))
			args := tt.args(victim, marker)

			b := setup(t)
			out, err := b.run(t.Context(), map[string]any{"command": append([]any{"printf", `%s\0`}, args...)})
			require.NoError(t, err)

			got := strings.Split(strings.TrimSuffix(out["stdout"].(string), "\x00"), "\x00")
			require.Len(t, got, len(args), "each element should arrive as one argument")
			for i, a := range args {
				require.Equal(t, a, got[i], "argument %d should arrive literally", i)
			}
			data, err := os.ReadFile(victim)
			require.NoError(t, err, "the victim file should still exist")
			require.Equal(t, "keep me", string(data))
			require.NoFileExists(t, marker, "no command substitution should have run")
		})
	}
}

// TestArgumentLines is the injection test the issue describes: printf
// '%s\n' prints one line per argument.
func TestArgumentLines(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	marker := filepath.Join(dir, "created")
	require.NoError(t, os.WriteFile(victim, nil, 0o600))

	b := setup(t)
	out, err := b.run(t.Context(), map[string]any{"command": []any{"printf", `%s\n`, "; rm -rf " + victim, "$(touch " + marker + ")"}})
	require.NoError(t, err)
	require.Equal(t, []string{"; rm -rf " + victim, "$(touch " + marker + ")"}, lines(out["stdout"].(string)))
	require.FileExists(t, victim)
	require.NoFileExists(t, marker)
}

func TestRunFails(t *testing.T) {
	t.Parallel()

	const secret = "s3cret-token-value"
	plain := filepath.Join(t.TempDir(), "plain.txt")
	require.NoError(t, os.WriteFile(plain, []byte("echo hi\n"), 0o644))
	tests := []struct {
		name      string
		params    map[string]any
		category  string
		code      string
		permanent bool
		message   string // a part of the message
		check     func(t *testing.T, e *node.Error)
	}{
		{
			name:     "non-zero exit",
			params:   map[string]any{"command": []any{"sh", "-c", "echo partial; echo boom >&2; exit 2", secret}},
			category: node.CategoryExecution, code: "exit_code",
			message: `command "sh" exited with status 2`,
			check: func(t *testing.T, e *node.Error) {
				require.Equal(t, 2, e.Details["exit_code"])
				require.Equal(t, "boom\n", e.Details["stderr"])
				require.Equal(t, "partial\n", e.Details["stdout"])
			},
		},
		{
			name:     "stderr tail is the last 2 KiB",
			params:   map[string]any{"command": []any{"sh", "-c", "head -c 5000 /dev/zero | tr '\\0' a >&2; echo END >&2; exit 1"}},
			category: node.CategoryExecution, code: "exit_code",
			check: func(t *testing.T, e *node.Error) {
				tail := e.Details["stderr"].(string)
				require.Len(t, tail, 2048)
				require.True(t, strings.HasSuffix(tail, "aaaaEND\n"), "the tail should end with the last output, got %q", tail[len(tail)-20:])
			},
		},
		{
			name:     "stdout tail is the last 2 KiB",
			params:   map[string]any{"command": []any{"sh", "-c", "head -c 5000 /dev/zero | tr '\\0' b; echo FAILED: disk full; exit 1"}},
			category: node.CategoryExecution, code: "exit_code",
			check: func(t *testing.T, e *node.Error) {
				tail := e.Details["stdout"].(string)
				require.Len(t, tail, 2048)
				require.True(t, strings.HasSuffix(tail, "bbbbFAILED: disk full\n"), "the tail should end with the last output, got %q", tail[len(tail)-20:])
				require.Equal(t, "", e.Details["stderr"])
			},
		},
		{
			name:     "killed by a signal",
			params:   map[string]any{"command": []any{"sh", "-c", "kill -9 $$"}},
			category: node.CategoryExecution, code: "exit_code",
			message: "exited with status 137",
		},
		{
			name:     "shell command exit names no script",
			params:   map[string]any{"command": "echo " + secret + "; exit 4", "shell": true},
			category: node.CategoryExecution, code: "exit_code",
			message: "shell command exited with status 4",
		},
		{
			name:     "command not found",
			params:   map[string]any{"command": []any{"skein-no-such-command", "--token", secret}},
			category: node.CategoryExecution, code: "command_not_found", permanent: true,
			message: `command "skein-no-such-command" not found in PATH`,
		},
		{
			name:     "path not found",
			params:   map[string]any{"command": []any{"/nonexistent/skein-tool", secret}},
			category: node.CategoryExecution, code: "command_not_found", permanent: true,
			message: `command "/nonexistent/skein-tool" not found`,
		},
		{
			name:     "not executable",
			params:   map[string]any{"command": []any{plain}},
			category: node.CategoryExecution, code: "command_not_executable", permanent: true,
			message: "cannot be run: permission denied",
		},
		{
			name:     "string command without shell",
			params:   map[string]any{"command": "echo " + secret},
			category: node.CategoryValidation, code: "command", permanent: true,
			message: "set shell: true",
		},
		{
			name:     "empty command",
			params:   map[string]any{"command": []any{}},
			category: node.CategoryValidation, code: "command", permanent: true,
			message: "empty list",
		},
		{
			name:     "missing command",
			params:   map[string]any{},
			category: node.CategoryValidation, code: "command", permanent: true,
			message: "command is null",
		},
		{
			name:     "nested list element",
			params:   map[string]any{"command": []any{"echo", []any{secret}}},
			category: node.CategoryValidation, code: "command", permanent: true,
			message: "argument 1 of command is a list",
		},
		{
			name:     "NUL in an argument",
			params:   map[string]any{"command": []any{"echo", "a\x00b"}},
			category: node.CategoryValidation, code: "command", permanent: true,
			message: "NUL",
		},
		{
			name:     "bad env name",
			params:   map[string]any{"command": []any{"env"}, "env": map[string]any{"A=B": "x"}},
			category: node.CategoryValidation, code: "env", permanent: true,
			message: `env has the name "A=B"`,
		},
		{
			name:     "missing cwd",
			params:   map[string]any{"command": []any{"pwd"}, "cwd": "/nonexistent/skein-dir"},
			category: node.CategoryValidation, code: "cwd", permanent: true,
			message: "no such file or directory",
		},
		{
			name:     "negative max_output",
			params:   map[string]any{"command": []any{"echo"}, "max_output": -1},
			category: node.CategoryValidation, code: "max_output", permanent: true,
		},
		{
			name:     "shell not a boolean, refused by coercion",
			params:   map[string]any{"command": []any{"echo"}, "shell": "maybe"},
			category: node.CategoryValidation, code: "param_type", permanent: true,
			message: `parameter shell: must be true or false, not "maybe"`,
		},
		{
			name:     "a null argument",
			params:   map[string]any{"command": []any{"echo", nil}},
			category: node.CategoryValidation, code: "command", permanent: true,
			message: "argument 1 of command is null",
		},
		{
			name:     "an env value that is a list",
			params:   map[string]any{"command": []any{"env"}, "env": map[string]any{"A": []any{secret}}},
			category: node.CategoryValidation, code: "env", permanent: true,
			message: "env A is a list",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			b := setup(t)
			out, err := b.run(t.Context(), tt.params)
			require.Nil(t, out)
			e := nodeError(t, err)
			require.Equal(t, tt.category, e.Category, "category of %q", e.Message)
			require.Equal(t, tt.code, e.Code, "code of %q", e.Message)
			require.Equal(t, tt.permanent, e.Permanent, "permanent")
			require.Contains(t, e.Message, tt.message)
			require.NotContains(t, e.Message, secret, "the message must not repeat the arguments")
			if tt.check != nil {
				tt.check(t, e)
			}
		})
	}
}

// pidsOf reads the process ids a test command wrote to a file.
func pidsOf(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err, "the command should have written its pids before it was stopped")
	var pids []int
	for _, l := range lines(string(data)) {
		pid, err := strconv.Atoi(l)
		require.NoError(t, err)
		pids = append(pids, pid)
	}
	return pids
}

// running reports whether pid is a live process (a zombie is not).
func running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	// pid (comm) state …: comm may hold spaces and parentheses.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// stopCtx is a context that ends with err once the command has written
// its two pids to path: a command is stopped while it runs, however long it
// took to start.
type stopCtx struct {
	context.Context
	done    chan struct{}
	err     error
	stopped time.Time // when it ended
}

func stopWhenStarted(t *testing.T, path string, err error) *stopCtx {
	c := &stopCtx{Context: t.Context(), done: make(chan struct{}), err: err}
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			if data, _ := os.ReadFile(path); len(lines(string(data))) >= 2 {
				c.stopped = time.Now()
				close(c.done)
				return
			}
		}
	}()
	t.Cleanup(func() { close(quit); <-finished })
	return c
}

func (c *stopCtx) Done() <-chan struct{} { return c.done }

func (c *stopCtx) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

func TestStopKillsProcessGroup(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		shell    *shell.Shell
		script   string // writes its pids to $1, then blocks
		stop     error  // what the context ends with once they are written
		category string
		atLeast  time.Duration // from the stop to Run's return
	}{
		{
			name:     "timeout",
			shell:    &shell.Shell{},
			script:   `sleep 30 & echo $! > "$1"; echo $$ >> "$1"; sleep 30`,
			stop:     context.DeadlineExceeded,
			category: node.CategoryTimeout,
		},
		{
			name:     "SIGTERM ignored: SIGKILL after the grace",
			shell:    &shell.Shell{KillGrace: 400 * time.Millisecond},
			script:   `trap '' TERM; sleep 30 & echo $! > "$1"; echo $$ >> "$1"; wait; wait`,
			stop:     context.DeadlineExceeded,
			category: node.CategoryTimeout,
			atLeast:  400 * time.Millisecond,
		},
		{
			name:     "cancelled",
			shell:    &shell.Shell{},
			script:   `sleep 30 & echo $! > "$1"; echo $$ >> "$1"; sleep 30`,
			stop:     context.Canceled,
			category: node.CategoryCancelled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			pidFile := filepath.Join(t.TempDir(), "pids")
			b := setup(t)
			ctx := stopWhenStarted(t, pidFile, tt.stop)
			out, err := tt.shell.Run(ctx, b.call(map[string]any{"command": []any{"sh", "-c", tt.script, "sh", pidFile}}))
			elapsed := time.Since(ctx.stopped)

			require.Nil(t, out)
			e := nodeError(t, err)
			require.Equal(t, tt.category, e.Category)
			require.ErrorIs(t, err, tt.stop)
			require.GreaterOrEqual(t, elapsed, tt.atLeast)
			pids := pidsOf(t, pidFile)
			require.Len(t, pids, 2)
			for _, pid := range pids {
				require.False(t, running(pid), "process %d outlived the node", pid)
			}
		})
	}
}

func TestStopBeforeStart(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b := setup(t)
	_, err := b.run(ctx, map[string]any{"command": []any{"touch", filepath.Join(dir, "ran")}})
	e := nodeError(t, err)
	require.Equal(t, node.CategoryCancelled, e.Category)
	require.NoFileExists(t, filepath.Join(dir, "ran"), "a cancelled call should not start the command")
}

func TestBackgroundProcessDoesNotHangRun(t *testing.T) {
	t.Parallel()

	b := setup(t)
	start := time.Now()
	out, err := (&shell.Shell{PipeWait: 200 * time.Millisecond}).Run(t.Context(),
		b.call(map[string]any{"command": []any{"sh", "-c", "sleep 60 & echo $!"}}))
	elapsed := time.Since(start)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(out["stdout"].(string)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	require.Equal(t, 0, out["exit_code"])
	require.Less(t, elapsed, 30*time.Second, "Run should not wait for a background process that holds stdout")
	if runtime.GOOS == "linux" {
		// Killed when Run returns; SIGKILL is delivered, not instant, on a
		// loaded machine.
		require.Eventually(t, func() bool { return !running(pid) }, 60*time.Second, 10*time.Millisecond,
			"what the command left running ends with it")
	}
}

// TestEscapedProcessDoesNotHangRun: a process that left the command's
// group cannot be killed with the group, but Run still returns once the
// pipe wait is over (it starts a session of its own: no one follows it).
func TestEscapedProcessDoesNotHangRun(t *testing.T) {
	t.Parallel()

	pidFile := filepath.Join(t.TempDir(), "pids")
	ctx := stopWhenStarted(t, pidFile, context.DeadlineExceeded)
	b := setup(t)
	_, err := (&shell.Shell{PipeWait: 200 * time.Millisecond}).Run(ctx, b.call(map[string]any{
		"command": []any{"sh", "-c", `setsid sleep 60 & echo $! > "$1"; echo $$ >> "$1"; sleep 60`, "sh", pidFile},
	}))
	elapsed := time.Since(ctx.stopped)
	pids := pidsOf(t, pidFile)
	for _, pid := range pids {
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}

	e := nodeError(t, err)
	require.Equal(t, node.CategoryTimeout, e.Category)
	require.Less(t, elapsed, 30*time.Second, "Run should not wait for an escaped process that holds stdout")
}

func TestOutputCap(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		command   []any
		limit     any
		stdout    string
		stderrLen int
		truncated map[string]any
		events    []event
	}{
		{
			name:      "stdout over the limit",
			command:   []any{"sh", "-c", "head -c 5000 /dev/zero | tr '\\0' a"},
			limit:     1024,
			stdout:    strings.Repeat("a", 1024),
			truncated: map[string]any{"stdout": true, "stderr": false},
			events:    []event{{"output_truncated", map[string]any{"stream": "stdout", "limit": 1024, "dropped_bytes": 5000 - 1024}}},
		},
		{
			name:      "stderr over the limit",
			command:   []any{"sh", "-c", "head -c 3000 /dev/zero >&2"},
			limit:     float64(100),
			stderrLen: 100,
			truncated: map[string]any{"stdout": false, "stderr": true},
			events:    []event{{"output_truncated", map[string]any{"stream": "stderr", "limit": 100, "dropped_bytes": 2900}}},
		},
		{
			name:      "exactly the limit",
			command:   []any{"printf", "abcd"},
			limit:     4,
			stdout:    "abcd",
			truncated: map[string]any{"stdout": false, "stderr": false},
		},
		{
			name:      "a character cut in two is dropped whole",
			command:   []any{"printf", "aé"},
			limit:     2,
			stdout:    "a",
			truncated: map[string]any{"stdout": true, "stderr": false},
			events:    []event{{"output_truncated", map[string]any{"stream": "stdout", "limit": 2, "dropped_bytes": 2}}},
		},
		{
			name:      "cut JSON is not parsed",
			command:   []any{"echo", `{"a": "long value"}`},
			limit:     "5",
			stdout:    `{"a":`,
			truncated: map[string]any{"stdout": true, "stderr": false},
			events:    []event{{"output_truncated", map[string]any{"stream": "stdout", "limit": 5, "dropped_bytes": 15}}},
		},
		{
			name:      "default limit",
			command:   []any{"sh", "-c", "head -c 10485761 /dev/zero"},
			stdout:    strings.Repeat("\x00", shell.DefaultMaxOutput),
			truncated: map[string]any{"stdout": true, "stderr": false},
			events:    []event{{"output_truncated", map[string]any{"stream": "stdout", "limit": shell.DefaultMaxOutput, "dropped_bytes": 1}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			params := map[string]any{"command": tt.command}
			if tt.limit != nil {
				params["max_output"] = tt.limit
			}
			b := setup(t)
			out, err := b.run(t.Context(), params)
			require.NoError(t, err)
			require.Equal(t, tt.stdout, out["stdout"])
			require.Len(t, out["stderr"], tt.stderrLen)
			require.Equal(t, tt.truncated, out["truncated"])
			require.Equal(t, tt.events, b.emitted())
			require.NotContains(t, out, "json")
		})
	}
}

// The command's process group is reported as soon as it starts, so the
// engine can record it on the running step: it is the group the command
// leads.
func TestProcessStarted(t *testing.T) {
	t.Parallel()

	b := setup(t)
	call := b.call(map[string]any{"command": []any{"sh", "-c", "echo $$"}})
	var groups []int
	call.ProcessStarted = func(pgid int) {
		// Not yet reaped: the process is there to ask.
		got, err := syscall.Getpgid(pgid)
		require.NoError(t, err)
		require.Equal(t, pgid, got, "the reported group is led by the command")
		groups = append(groups, pgid)
	}
	out, err := (&shell.Shell{}).Run(t.Context(), call)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(out["stdout"].(string)))
	require.NoError(t, err)
	require.Equal(t, []int{pid}, groups, "called once, before Run returned, with the command's group")
}
