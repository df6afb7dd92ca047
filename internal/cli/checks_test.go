package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckVerdicts runs examples/checks.yaml three ways and compares the
// run's verdict.json with a golden file; `skein check` re-evaluates a
// recorded run, and `skein runs verdict` shows it.
func TestCheckVerdicts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
		bar  string
	}{
		{"passed", nil, 0, "PASSED · 6 passed"},
		{"warnings", []string{"-i", "items=2"}, 0, "PASSED WITH WARNINGS · 5 passed, 1 warning"},
		{"failed", []string{"-i", "currency=usd"}, 3, "FAILED · 2 passed, 1 failed (order › shape), 3 skipped · stopped at order"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := skein(t, append([]string{"run", "--dir", dir, "../../examples/checks.yaml"}, tc.args...)...)
			require.Equal(t, tc.code, r.code, r.stdout+r.stderr)
			require.Contains(t, r.stdout, tc.bar)

			files, _ := filepath.Glob(filepath.Join(dir, "runs", "checks", "*", "verdict.json"))
			require.Len(t, files, 1)
			got, err := os.ReadFile(files[0])
			require.NoError(t, err)
			golden := filepath.Join("testdata", "verdicts", tc.name+".json")
			if *update {
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
			nodeFile := filepath.Join(filepath.Dir(files[0]), "order", "verdict.json")
			require.FileExists(t, nodeFile)

			id := filepath.Base(filepath.Dir(files[0]))
			id = id[len(id)-12:]
			c := skein(t, "check", "--dir", dir, id)
			require.Equal(t, tc.code, c.code, c.stderr)
			require.Contains(t, c.stdout, tc.bar)
			v := skein(t, "runs", "verdict", "--dir", dir, id)
			require.Equal(t, tc.code, v.code, "runs verdict exits like check: %s", v.stderr)
			require.Contains(t, v.stdout, "order › has lines (expr)")
		})
	}
}
