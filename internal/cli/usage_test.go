package cli_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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

func TestVersionFlag(t *testing.T) {
	t.Parallel()
	r := skein(t, "--version")
	require.Equal(t, 0, r.code, r.stderr)
	require.True(t, strings.HasPrefix(r.stdout, "skein "), r.stdout)
	require.Equal(t, r.stdout, skein(t, "version").stdout, "--version and version agree")
}
