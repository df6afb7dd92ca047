package mcp_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// examples/mcp-files.yaml runs end to end, from the repository root as its
// header says, against the installed filesystem server. Not parallel: it
// changes the working directory.
func TestExampleMCPFiles(t *testing.T) {
	servers(t) // skips (or fails on CI) without the npm servers
	dir := t.TempDir()
	t.Chdir(filepath.Join("..", ".."))

	w, ds := workflow.Load(filepath.Join("examples", "mcp-files.yaml"), node.Default)
	require.False(t, ds.HasErrors(), ds.Error())
	require.Len(t, w.MCPServers, 1)
	marker := newMarker(t)
	w.MCPServers[0].Env = map[string]string{markerVar: marker}

	r := execute(t, w, map[string]any{"dir": dir, "note": "written, then read back"}, nil, marker)
	require.Equal(t, engine.RunCompleted, r.res.Status, "%+v", r.res.Error)
	require.Equal(t, dir+"/mcp-files-note.txt holds the note: written, then read back", r.res.Outputs["result"])
	require.Equal(t, "Successfully wrote to mcp-files-note.txt", r.res.Outputs["written"])
	require.Equal(t, "true", r.step(t, "intact").Directives["_route"])
	require.Equal(t, engine.StatusSkipped, r.step(t, "corrupted").Status)

	data, err := os.ReadFile(filepath.Join(dir, "mcp-files-note.txt"))
	require.NoError(t, err)
	require.Equal(t, "written, then read back", string(data))
	require.Len(t, r.rec.ofType("tool_call"), 3)
}
