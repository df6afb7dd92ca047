package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEvidenceScreenshot declares the everything server's image tool as the
// evidence tool: after the checked node succeeds its image is saved in the
// node's artifacts (where the judge finds it); nodes without checks get
// none.
func TestEvidenceScreenshot(t *testing.T) {
	t.Parallel()
	everything, err := filepath.Abs(filepath.Join("..", "mcp", "testdata", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	require.NoError(t, err)
	if _, err := exec.LookPath("node"); err != nil {
		aiMissing(t, "node is not in PATH")
	}
	if _, err := os.Stat(everything); err != nil {
		aiMissing(t, everything+" is missing")
	}
	dir := t.TempDir()
	flow := filepath.Join(dir, "evidence.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: evidence
mcp_servers:
  screen: {command: node, args: ["`+everything+`", stdio]}
evidence: {server: screen, tool: get-tiny-image}
nodes:
  - id: page
    type: set
    values: {title: Welcome}
    checks:
      - {name: titled, type: expr, expr: "page.title == 'Welcome'"}
  - {id: plain, type: set, values: {x: 1}}
edges:
  - {from: page, to: plain}
`), 0o644))
	r := skein(t, "run", "--dir", dir, flow)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "PASSED")
	shots, _ := filepath.Glob(filepath.Join(dir, "runs", "evidence", "*", "page", "artifacts", "evidence-1.png"))
	require.Len(t, shots, 1, "the checked node has its evidence image")
	data, err := os.ReadFile(shots[0])
	require.NoError(t, err)
	require.Equal(t, "\x89PNG", string(data[:4]))
	none, _ := filepath.Glob(filepath.Join(dir, "runs", "evidence", "*", "plain", "artifacts", "*"))
	require.Empty(t, none, "a node without checks gets no evidence")
}

// A subworkflow's own mcp_servers serve its nodes: the parent declares none.
func TestChildUsesItsOwnMCPServers(t *testing.T) {
	t.Parallel()
	everything, err := filepath.Abs(filepath.Join("..", "mcp", "testdata", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	require.NoError(t, err)
	if _, err := os.Stat(everything); err != nil {
		aiMissing(t, everything+" is missing")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "child.yaml"), []byte(`version: 1
name: child
mcp_servers:
  ev: {command: node, args: ["`+everything+`", stdio]}
nodes:
  - {id: say, type: mcp, server: ev, tool: echo, arguments: {message: from the child}}
outputs:
  said: "{{ say.text ?? say.value ?? say }}"
`), 0o644))
	parent := filepath.Join(dir, "parent.yaml")
	require.NoError(t, os.WriteFile(parent, []byte(`version: 1
name: parent
nodes:
  - {id: call, type: subworkflow, workflow: child.yaml}
outputs:
  said: "{{ call.said }}"
`), 0o644))
	r := skein(t, "run", "--output", "json", "--dir", dir, parent)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "from the child")
	_, err = os.Stat(filepath.Join(dir, "child.skein.lock"))
	require.NoError(t, err, "the child's tools are pinned in its own lock file")
	_, err = os.Stat(filepath.Join(dir, "parent.skein.lock"))
	require.ErrorIs(t, err, os.ErrNotExist, "the parent uses no server")
}
