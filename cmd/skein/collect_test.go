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
// of reading it; of a 3-node one, it does not. Both runs complete, with
// the last node's output.
func TestRunCollectsABigWorkflowBeforeAndAfterReadingIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		nodes  int
		forced int
	}{{3, 0}, {600, 2}} {
		t.Run(fmt.Sprint(tc.nodes), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var b strings.Builder
			b.WriteString("version: 1\nname: chain\nnodes:\n  - {id: start, type: trigger.manual}\n")
			edges := "edges:\n  - {from: start, to: n1}\n"
			for i := 1; i < tc.nodes; i++ {
				fmt.Fprintf(&b, "  - {id: n%d, type: set, values: {i: \"{{ %d }}\"}}\n", i, i)
				if i > 1 {
					edges += fmt.Sprintf("  - {from: n%d, to: n%d}\n", i-1, i)
				}
			}
			file := filepath.Join(dir, "chain.yaml")
			require.NoError(t, os.WriteFile(file, []byte(b.String()+edges), 0o644))
			cmd := exec.Command(bin, "run", "--dir", filepath.Join(dir, "runs"), file)
			cmd.Env = append(slices.DeleteFunc(os.Environ(), func(v string) bool {
				return strings.HasPrefix(v, "GOGC=") || strings.HasPrefix(v, "GOMEMLIMIT=") || strings.HasPrefix(v, "GODEBUG=")
			}), "GODEBUG=gctrace=1")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, "%s\n%s", out, stderr.String())
			require.Contains(t, string(out), fmt.Sprintf(`"i": %d`, tc.nodes-1), "the last node's output")
			require.Equal(t, tc.forced, strings.Count(stderr.String(), "(forced)"), stderr.String())
		})
	}
}
