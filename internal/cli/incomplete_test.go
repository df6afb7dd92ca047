package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A run that fails after its checked nodes passed is INCOMPLETE, never
// PASSED: skein run exits 1 (the run failed), and so do skein runs verdict
// and skein check of it; FAILED keeps exit 3.
func TestIncompleteVerdictExits1(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wf := filepath.Join(dir, "late.yaml")
	require.NoError(t, os.WriteFile(wf, []byte(`version: 1
name: late
nodes:
  - {id: start, type: trigger.manual}
  - id: order
    type: set
    values: {total: 30}
    checks:
      - {name: positive, type: expr, expr: "order.total > 0"}
  - id: ship
    type: shell
    command: ["false"]
edges:
  - {from: start, to: order}
  - {from: order, to: ship}
`), 0o644))
	r := skein(t, "run", "--dir", dir, wf, "-o", "json")
	require.Equal(t, 1, r.code, r.stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Equal(t, "INCOMPLETE", doc["verdict"].(map[string]any)["status"])
	id := doc["execution_id"].(string)

	v := skein(t, "runs", "verdict", "--dir", dir, id)
	require.Equal(t, 1, v.code, v.stdout+v.stderr)
	require.True(t, strings.HasPrefix(v.stdout, "INCOMPLETE"), v.stdout)
	c := skein(t, "check", "--dir", dir, id)
	require.Equal(t, 1, c.code, c.stdout+c.stderr)
}
