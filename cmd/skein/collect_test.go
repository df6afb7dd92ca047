package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunCollectsABigWorkflowBeforeAndAfterReadingIt: `skein run` of a
// 600-node workflow collects twice before it runs (the forced collections
// GODEBUG=gctrace=1 tells of): once before reading the file, to free the
// room it gives the heap in huge pages, and once after, for the garbage
// of reading it; of a 3-node one, it does not; of the foreach example,
// once after reading it (a run whose size its file does not tell). Every
// run completes, with its output.
func TestRunCollectsABigWorkflowBeforeAndAfterReadingIt(t *testing.T) {
	t.Parallel()
	chain := func(nodes int) string {
		var b strings.Builder
		b.WriteString("version: 1\nname: chain\nnodes:\n  - {id: start, type: trigger.manual}\n")
		edges := "edges:\n  - {from: start, to: n1}\n"
		for i := 1; i < nodes; i++ {
			fmt.Fprintf(&b, "  - {id: n%d, type: set, values: {i: \"{{ %d }}\"}}\n", i, i)
			if i > 1 {
				edges += fmt.Sprintf("  - {from: n%d, to: n%d}\n", i-1, i)
			}
		}
		return b.String() + edges
	}
	for _, tc := range []struct {
		name   string
		yaml   string // the workflow, or "" for file
		file   string
		output string // in the run's output
		forced int
	}{
		{name: "3 nodes", yaml: chain(3), output: `"i": 2`, forced: 0},
		{name: "600 nodes", yaml: chain(600), output: `"i": 599`, forced: 2},
		{name: "a foreach", file: filepath.Join("..", "..", "examples", "foreach.yaml"), output: "backup.tar: archive", forced: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			file := tc.file
			if tc.yaml != "" {
				file = filepath.Join(dir, "flow.yaml")
				require.NoError(t, os.WriteFile(file, []byte(tc.yaml), 0o644))
			}
			cmd := exec.Command(bin, "run", "--dir", filepath.Join(dir, "runs"), file)
			cmd.Env = append(slices.DeleteFunc(os.Environ(), func(v string) bool {
				return strings.HasPrefix(v, "GOGC=") || strings.HasPrefix(v, "GOMEMLIMIT=") || strings.HasPrefix(v, "GODEBUG=")
			}), "GODEBUG=gctrace=1")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, "%s\n%s", out, stderr.String())
			require.Contains(t, string(out), tc.output, "the run's output")
			require.Equal(t, tc.forced, strings.Count(stderr.String(), "(forced)"), stderr.String())
		})
	}
}
