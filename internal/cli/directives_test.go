package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfidenceAndChecksOfAFailedNode: runs show gives a step's
// confidence, and a node that failed has its checks not run (⊘), which
// leaves the verdict INCOMPLETE rather than FAILED.
func TestConfidenceAndChecksOfAFailedNode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := filepath.Join(dir, "flow.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: flow
nodes:
  - id: guess
    type: shell
    command: [sh, -c, 'echo "{\"_confidence\": 0.4, \"guess\": \"maybe\"}"']
  - id: fetch
    type: shell
    command: [sh, -c, 'exit 3']
    on_error: continue
    checks:
      - {name: said done, type: contains, target: stdout, value: done}
edges:
  - {from: guess, to: fetch}
`), 0o644))
	skeinDir := filepath.Join(dir, ".skein")
	r := skein(t, "run", "--dir", skeinDir, flow)
	require.Contains(t, r.stdout, "\nINCOMPLETE · 0 passed, 1 not run (fetch › said done: the node failed)\n")
	id := regexp.MustCompile(`run ([0-9a-f]{12})`).FindStringSubmatch(r.stdout)
	require.NotNil(t, id, r.stdout)

	v := skein(t, "runs", "verdict", "--dir", skeinDir, id[1])
	require.Contains(t, v.stdout, "⊘ fetch › said done (contains): the node's last visit (visit 1) failed: command \"sh\" exited with status 3")

	show := skein(t, "runs", "show", "--dir", skeinDir, id[1])
	require.Equal(t, 0, show.code, show.stderr)
	require.Regexp(t, `guess\s+shell\s+1\s+0\s+success · confidence 0\.40`, show.stdout)
}
