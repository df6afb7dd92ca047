package cli_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompletionScripts: skein completion prints a script for each shell.
func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		t.Run(shell, func(t *testing.T) {
			r := skein(t, "completion", shell)
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stdout, "__skein", "a %s script that calls skein back", shell)
		})
	}
	r := skein(t, "completion", "tcsh")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `unknown command "tcsh" for "skein completion"`)
}

// TestDynamicCompletion: what the shell offers after a command: run ids of
// the --dir folder with their workflow and status, workflow files, flag
// values.
func TestDynamicCompletion(t *testing.T) {
	t.Parallel()
	sk := filepath.Join(t.TempDir(), ".skein")
	r := skein(t, "run", "--dir", sk, "-o", "json", "testdata/fail.yaml")
	require.Equal(t, 1, r.code, r.stderr)
	id := decode(t, r).ID

	// complete returns the candidates and the directive cobra prints
	// last (":4" no file completion, ":8" files with these extensions…).
	complete := func(args ...string) ([]string, string) {
		t.Helper()
		r := skein(t, append([]string{"__complete"}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		return lines[:len(lines)-1], lines[len(lines)-1]
	}

	for _, cmd := range [][]string{{"runs", "show"}, {"runs", "events"}, {"runs", "verdict"}, {"check"}, {"resume"}, {"rerun"}} {
		got, directive := complete(append(cmd, "--dir", sk, id[:3])...)
		require.Len(t, got, 1, "%v", cmd)
		require.True(t, strings.HasPrefix(got[0], id+"\tfail failed "), "%v: %q", cmd, got[0])
		require.Equal(t, ":36", directive, "no files, in the order given (%v)", cmd)
	}
	for _, cmd := range []string{"cancel", "signal"} {
		got, directive := complete(cmd, "--dir", sk, id[:3])
		require.Empty(t, got, "%s does not take a failed run", cmd)
		require.Equal(t, ":36", directive)
	}
	got, _ := complete("runs", "show", "--dir", sk, "zz")
	require.Empty(t, got, "no run begins with zz")
	got, _ = complete("runs", "list", "--dir", sk, "--parent", "")
	require.Len(t, got, 1)
	got, _ = complete("runs", "show", "--dir", filepath.Join(t.TempDir(), "none"), "")
	require.Empty(t, got, "a folder without runs offers none")

	got, directive := complete("run", "")
	require.Equal(t, []string{"yaml", "yml", "json"}, got)
	require.Equal(t, ":8", directive, "workflow files by extension")
	got, _ = complete("runs", "list", "--status", "")
	require.Contains(t, got, "interrupted")
	got, _ = complete("token", "create", "--scope", "")
	require.Equal(t, []string{"read", "run", "edit", "admin"}, got)
	got, _ = complete("validate", "-o", "")
	require.Equal(t, []string{"text", "json"}, got)
}

// TestNoManCommand: the man pages are cmd/skein-man's (skein does not
// carry their libraries); skein has no man command.
func TestNoManCommand(t *testing.T) {
	t.Parallel()
	r := skein(t, "man", t.TempDir())
	require.Equal(t, 2, r.code, "a usage error")
	require.Contains(t, r.stderr, `unknown command "man"`)
}

// TestCompletionOffersTheRunsACommandTakes: resume offers the runs it can
// resume (not a completed one), cancel the runs that have not ended, signal
// the runs that wait.
func TestCompletionOffersTheRunsACommandTakes(t *testing.T) {
	t.Parallel()
	sk := filepath.Join(t.TempDir(), ".skein")
	started := func(code int, args ...string) string {
		t.Helper()
		r := skein(t, append([]string{"run", "--dir", sk, "-o", "json"}, args...)...)
		require.Equal(t, code, r.code, r.stderr)
		return decode(t, r).ID
	}
	failed := started(1, "testdata/fail.yaml")
	completed := started(0, "../../examples/hello.yaml")
	waiting := started(4, "../../examples/approval.yaml")
	cancelled := started(4, "../../examples/approval.yaml")
	r := skein(t, "cancel", "--dir", sk, cancelled)
	require.Equal(t, 0, r.code, r.stderr)

	offered := func(args ...string) []string {
		t.Helper()
		r := skein(t, append([]string{"__complete"}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		var ids []string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if id, _, ok := strings.Cut(l, "\t"); ok {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	sorted := func(ids ...string) []string { slices.Sort(ids); return ids }
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"resume: not a completed run", []string{"resume"}, sorted(failed, waiting, cancelled)},
		{"cancel: a run that has not ended", []string{"cancel"}, sorted(waiting)},
		{"signal: a run that waits", []string{"signal"}, sorted(waiting)},
		{"runs show: every run", []string{"runs", "show"}, sorted(failed, completed, waiting, cancelled)},
		{"rerun: every run", []string{"rerun"}, sorted(failed, completed, waiting, cancelled)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, offered(append(tc.args, "--dir", sk, "")...))
		})
	}
}
