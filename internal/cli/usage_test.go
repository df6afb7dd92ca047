package cli_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/cli"
)

// TestUsageErrorsExitTwo: a mistyped subcommand or a status no run can
// have is a usage error (exit 2) that says what to do, not help and 0.
func TestUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	sk := filepath.Join(t.TempDir(), ".skein")
	r := skein(t, "run", "--dir", sk, "testdata/ok.yaml", "-i", "city=Paris")
	require.Equal(t, 0, r.code, r.stderr)

	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"unknown subcommand", []string{"runs", "lst", "--dir", sk}, `unknown command "lst" for "skein runs"; did you mean "list"?`},
		{"no subcommand", []string{"runs", "--dir", sk}, "skein runs needs a subcommand"},
		{"unknown status", []string{"runs", "list", "--dir", sk, "--status", "nonsense"}, `--status "nonsense" is not a run status; use one of pending, running`},
		{"unknown top command", []string{"nosuch"}, `unknown command "nosuch"`},
		{"negative limit", []string{"runs", "list", "--dir", sk, "--limit", "-1"}, "--limit -1: give the most runs to show, or 0 for all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := skein(t, tc.args...)
			require.Equal(t, 2, r.code, r.stdout+r.stderr)
			require.Contains(t, r.stderr, tc.stderr)
		})
	}

	l := skein(t, "runs", "list", "--dir", sk, "-o", "json", "--status", "completed")
	require.Equal(t, 0, l.code, l.stderr)
	var runs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(l.stdout), &runs))
	require.Len(t, runs, 1)
	require.Equal(t, "completed", runs[0]["status"])
	require.Equal(t, "ok", runs[0]["workflow"])
}

// TestEveryGroupRefusesAnUnknownSubcommand: a word after a command that
// holds subcommands (skein lock wf.yaml) is a usage error that names the
// word, for every such command, not its help and exit 0.
func TestEveryGroupRefusesAnUnknownSubcommand(t *testing.T) {
	t.Parallel()
	groups := cli.GroupCommands()
	require.NotEmpty(t, groups)
	for _, g := range groups {
		path := strings.Join(g, " ")
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			r := skein(t, append(slices.Clone(g), "wf.yaml")...)
			require.Equal(t, 2, r.code, r.stdout+r.stderr)
			require.Contains(t, r.stderr, `unknown command "wf.yaml" for "skein `+path+`"`)
			r = skein(t, g...)
			require.Equal(t, 2, r.code, r.stdout+r.stderr)
			require.Contains(t, r.stderr, "skein "+path+" needs a subcommand")
		})
	}
}

func TestVersionFlag(t *testing.T) {
	t.Parallel()
	r := skein(t, "--version")
	require.Equal(t, 0, r.code, r.stderr)
	require.True(t, strings.HasPrefix(r.stdout, "skein "), r.stdout)
	require.Equal(t, r.stdout, skein(t, "version").stdout, "--version and version agree")
}

// TestWrongArgumentsShowTheUsageLine: a wrong number of arguments or an
// unknown flag says in words what the command takes, then its usage line
// and where its help is (exit 2), for every command; under -o json stdout
// holds the error object and stderr the same words.
func TestWrongArgumentsShowTheUsageLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string // stderr, whole
	}{
		{"run without a file", []string{"run"}, "skein: run takes 1 argument, got 0\n" +
			"usage: skein run FILE [flags]\n" +
			"run 'skein run --help' for its arguments, flags and examples\n"},
		{"runs show with two ids", []string{"runs", "show", "a", "b"}, "skein: runs show takes 1 argument, got 2\n" +
			"usage: skein runs show RUN_ID [flags]\n" +
			"run 'skein runs show --help' for its arguments, flags and examples\n"},
		{"validate without files", []string{"validate"}, "skein: validate takes at least 1 argument, got 0\n" +
			"usage: skein validate FILE|FOLDER|GLOB... [flags]\n" +
			"run 'skein validate --help' for its arguments, flags and examples\n"},
		{"signal without a node", []string{"signal", "abc"}, "skein: signal takes 2 arguments, got 1\n" +
			"usage: skein signal RUN_ID NODE [--data JSON] [flags]\n" +
			"run 'skein signal --help' for its arguments, flags and examples\n"},
		{"an unknown flag", []string{"resume", "--nope", "abc"}, "skein: unknown flag: --nope\n" +
			"usage: skein resume RUN_ID [flags]\n" +
			"run 'skein resume --help' for its arguments, flags and examples\n"},
		{"an argument to a command that takes none", []string{"migrate", "x"}, "skein: unknown command \"x\" for \"skein migrate\"\n" +
			"usage: skein migrate [flags]\n" +
			"run 'skein migrate --help' for its arguments, flags and examples\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := skein(t, tc.args...)
			require.Equal(t, 2, r.code, r.stdout+r.stderr)
			require.Equal(t, tc.want, r.stderr)
			require.Empty(t, r.stdout)
		})
	}

	r := skein(t, "run", "-o", "json")
	require.Equal(t, 2, r.code)
	var doc struct {
		Error struct{ Code, Message string }
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
	require.Equal(t, "usage", doc.Error.Code)
	require.Equal(t, "run takes 1 argument, got 0", doc.Error.Message, "the usage line is not part of the message")
	require.Contains(t, r.stderr, "usage: skein run FILE [flags]\n")
}
