//go:build unix

package shell_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/nodes/shell"
	"github.com/skeinhq/skein/node"
)

// argsScript returns an executable that prints each of its arguments on a
// line.
func argsScript(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "args.sh")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\n"), 0o755))
	return path
}

// TestTemplatedOptions is the argv option rule: a templated element that
// renders to text beginning with "-" fails the node unless a literal "--"
// precedes it or allow_option_args is set.
func TestTemplatedOptions(t *testing.T) {
	t.Parallel()
	script := argsScript(t)

	tests := []struct {
		name     string
		written  map[string]any // nil: the host does not know the written form
		rendered map[string]any
		refused  int    // the refused argument, or 0 when the command runs
		stdout   string // when it runs
	}{
		{
			name:     "templated option",
			written:  map[string]any{"command": []any{script, "clone", "{{ inputs.repo }}"}},
			rendered: map[string]any{"command": []any{script, "clone", "--upload-pack=x"}},
			refused:  2,
		},
		{
			name:     "templated short option",
			written:  map[string]any{"command": []any{script, "{{ inputs.v }}"}},
			rendered: map[string]any{"command": []any{script, "-x"}},
			refused:  1,
		},
		{
			// A negative number is refused too: to many programs it is an
			// option (head -5). Attach it to its option: "-n{{ n }}".
			name:     "templated negative number",
			written:  map[string]any{"command": []any{script, "-n", "{{ inputs.n }}"}},
			rendered: map[string]any{"command": []any{script, "-n", "-5"}},
			refused:  2,
		},
		{
			name:     "spaces before the template",
			written:  map[string]any{"command": []any{script, " {{ inputs.v }}"}},
			rendered: map[string]any{"command": []any{script, "--force"}},
			refused:  1,
		},
		{
			name:     "whole command from one template",
			written:  map[string]any{"command": "{{ inputs.argv }}"},
			rendered: map[string]any{"command": []any{script, "ok", "--force"}},
			refused:  2,
		},
		{
			name:     "after a literal --",
			written:  map[string]any{"command": []any{script, "clone", "--", "{{ inputs.repo }}"}},
			rendered: map[string]any{"command": []any{script, "clone", "--", "--upload-pack=x"}},
			stdout:   "clone\n--\n--upload-pack=x\n",
		},
		{
			name:     "allow_option_args",
			written:  map[string]any{"command": []any{script, "{{ inputs.flags }}"}, "allow_option_args": true},
			rendered: map[string]any{"command": []any{script, "--verbose"}, "allow_option_args": true},
			stdout:   "--verbose\n",
		},
		{
			name:     "literal options",
			written:  map[string]any{"command": []any{script, "-c", "--force"}},
			rendered: map[string]any{"command": []any{script, "-c", "--force"}},
			stdout:   "-c\n--force\n",
		},
		{
			name:     "option written with a templated value",
			written:  map[string]any{"command": []any{script, "--branch={{ inputs.b }}", "-n{{ inputs.n }}"}},
			rendered: map[string]any{"command": []any{script, "--branch=-x", "-n-5"}},
			stdout:   "--branch=-x\n-n-5\n",
		},
		{
			// "-" is an operand, often standard input, never an option.
			name:     "dash alone",
			written:  map[string]any{"command": []any{script, "{{ inputs.file }}"}},
			rendered: map[string]any{"command": []any{script, "-"}},
			stdout:   "-\n",
		},
		{
			name:     "text before the template",
			written:  map[string]any{"command": []any{script, "./{{ inputs.file }}"}},
			rendered: map[string]any{"command": []any{script, "./-rf"}},
			stdout:   "./-rf\n",
		},
		{
			name:     "templated value without a dash",
			written:  map[string]any{"command": []any{script, "{{ inputs.repo }}"}},
			rendered: map[string]any{"command": []any{script, "https://example.com/r.git"}},
			stdout:   "https://example.com/r.git\n",
		},
		{
			// The script is the program and decides how it uses "$1".
			name:     "shell true is not checked",
			written:  map[string]any{"command": []any{`printf '%s\n' "$1"`, "{{ inputs.v }}"}, "shell": true},
			rendered: map[string]any{"command": []any{`printf '%s\n' "$1"`, "--force"}, "shell": true},
			stdout:   "--force\n",
		},
		{
			name:     "written form unknown",
			rendered: map[string]any{"command": []any{script, "--force"}},
			stdout:   "--force\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			call := b.call(tt.rendered)
			call.Written = tt.written
			started := false
			call.ProcessStarted = func(int) { started = true }

			out, err := (&shell.Shell{}).Run(t.Context(), call)
			if tt.refused == 0 {
				require.NoError(t, err)
				require.Equal(t, tt.stdout, out["stdout"])
				return
			}
			e := nodeError(t, err)
			require.Equal(t, node.CategoryValidation, e.Category)
			require.Equal(t, "option_argument", e.Code)
			require.True(t, e.Permanent, "the same parameters fail the same way on every attempt")
			require.Equal(t, tt.refused, e.Details["argument"])
			for _, want := range []string{"node sh", "argument " + strconv.Itoa(tt.refused), "came from a template", `literal "--"`, "allow_option_args: true"} {
				require.Contains(t, e.Message, want)
			}
			require.NotContains(t, e.Message, "upload-pack", "the message must not repeat the value, which may be a secret")
			require.False(t, started, "the command must not start")
		})
	}
}

// TestTemplatedOptionInjection runs git clone with a repository that
// carries --upload-pack: allowed, the option runs a command of the input's
// choosing; by default the node fails and nothing runs.
func TestTemplatedOptionInjection(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	src := t.TempDir()
	require.NoError(t, exec.Command("git", "init", "-q", src).Run())

	for _, allow := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "allow_option_args"}[allow], func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			marker := filepath.Join(dir, "pwned")
			written := []any{"git", "clone", "{{ inputs.repo }}", "{{ inputs.dest }}"}
			rendered := []any{"git", "clone", "--upload-pack=touch " + marker + "; false", "file://" + src}
			b := setup(t)
			call := b.call(map[string]any{"command": rendered, "cwd": dir, "allow_option_args": allow})
			call.Written = map[string]any{"command": written, "allow_option_args": allow}

			_, err := (&shell.Shell{}).Run(t.Context(), call)
			e := nodeError(t, err)
			if allow {
				require.Equal(t, "exit_code", e.Code, "the clone fails, after running the injected command")
				require.FileExists(t, marker, "with allow_option_args the option is git's, and it ran a command")
				return
			}
			require.Equal(t, "option_argument", e.Code)
			require.True(t, strings.Contains(e.Message, "argument 2"), e.Message)
			require.NoFileExists(t, marker, "the injected command must not run")
		})
	}
}

// TestOptionWarnings is what skein validate reports from the command as
// written: a warning for each element the run could refuse, nothing where
// the run will not check.
func TestOptionWarnings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		params map[string]any
		want   []string // the warned parameters
	}{
		{"templated elements", map[string]any{"command": []any{"git", "{{ a }}", "x{{ b }}", "{{ c }}", "--", "{{ d }}"}}, []string{"command[1]", "command[3]"}},
		{"whole command templated", map[string]any{"command": "{{ inputs.argv }}"}, []string{"command"}},
		{"allow_option_args", map[string]any{"command": []any{"git", "{{ a }}"}, "allow_option_args": true}, nil},
		{"allow_option_args templated", map[string]any{"command": []any{"git", "{{ a }}"}, "allow_option_args": "{{ inputs.allow }}"}, nil},
		{"allow_option_args false", map[string]any{"command": []any{"git", "{{ a }}"}, "allow_option_args": false}, []string{"command[1]"}},
		{"allow_option_args null", map[string]any{"command": []any{"git", "{{ a }}"}, "allow_option_args": nil}, []string{"command[1]"}},
		{"shell true", map[string]any{"command": []any{`git clone -- "$1"`, "{{ a }}"}, "shell": true}, nil},
		{"shell templated", map[string]any{"command": []any{"git", "{{ a }}"}, "shell": "{{ inputs.sh }}"}, nil},
		{"templated program", map[string]any{"command": []any{"{{ inputs.tool }}", "run"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, pe := range shell.Spec.Check(tt.params) {
				require.True(t, pe.Warning, "%s should be a warning: %s", pe.Param, pe.Message)
				got = append(got, pe.Param)
			}
			require.Equal(t, tt.want, got)
		})
	}
}

// TestCheckEnv: an env written without templates is checked as the run
// checks it, so that what validate accepts the run does not refuse.
func TestCheckEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]any
		want []string // the parameters named by errors
	}{
		{"scalars", map[string]any{"A": "x", "B": 1, "C": true, "D": nil}, nil},
		{"a list value", map[string]any{"A": []any{"x"}}, []string{"env"}},
		{"a map value", map[string]any{"A": map[string]any{"k": "v"}}, []string{"env"}},
		{"a name with =", map[string]any{"A=B": "x"}, []string{"env"}},
		{"a template is let through", map[string]any{"A": "{{ inputs.a }}", "B": []any{"x"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, pe := range shell.Spec.Check(map[string]any{"command": []any{"env"}, "env": tt.env}) {
				require.False(t, pe.Warning, "%s: %s", pe.Param, pe.Message)
				got = append(got, pe.Param)
			}
			require.Equal(t, tt.want, got)
		})
	}
}
