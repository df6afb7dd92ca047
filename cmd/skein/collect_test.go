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
// of reading it; of a 3-node one, it does not; of a small foreach, once
// after reading it (a run whose size its file does not tell). Every run
// completes, with the last node's output.
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
	const foreach = `version: 1
name: foreach
nodes:
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ 1..3 }}"}
  - {id: item, type: set, values: {i: "{{ loop.item }}"}}
  - {id: next, type: endloop, loop: each}
  - {id: done, type: set, values: {i: "{{ len(each.items) - 1 }}"}}
edges:
  - {from: start, to: each}
  - {from: each, to: item, on: body}
  - {from: item, to: next}
  - {from: each, to: done, on: done}
`
	for _, tc := range []struct {
		name   string
		yaml   string
		last   int
		forced int
	}{{"3 nodes", chain(3), 2, 0}, {"600 nodes", chain(600), 599, 2}, {"a foreach", foreach, 2, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			file := filepath.Join(dir, "flow.yaml")
			require.NoError(t, os.WriteFile(file, []byte(tc.yaml), 0o644))
			cmd := exec.Command(bin, "run", "--dir", filepath.Join(dir, "runs"), file)
			cmd.Env = append(slices.DeleteFunc(os.Environ(), func(v string) bool {
				return strings.HasPrefix(v, "GOGC=") || strings.HasPrefix(v, "GOMEMLIMIT=") || strings.HasPrefix(v, "GODEBUG=")
			}), "GODEBUG=gctrace=1")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, "%s\n%s", out, stderr.String())
			require.Contains(t, string(out), fmt.Sprintf(`"i": %d`, tc.last), "the last node's output")
			require.Equal(t, tc.forced, strings.Count(stderr.String(), "(forced)"), stderr.String())
		})
	}
}
