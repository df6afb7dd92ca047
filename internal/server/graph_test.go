package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// graphEdges returns a graph document's edges as "from→to" strings.
func graphEdges(t *testing.T, g map[string]any) []string {
	t.Helper()
	var out []string
	for _, e := range g["edges"].([]any) {
		m := e.(map[string]any)
		out = append(out, m["from"].(string)+"→"+m["to"].(string))
	}
	return out
}

// TestRunGraphIsTheVersionItRan: the graph of a run is the workflow as the
// run executed it — for a run started by `skein run` of a file the server
// does not serve, and for a served file edited after the run.
func TestRunGraphIsTheVersionItRan(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), ".skein")
	other := filepath.Join(t.TempDir(), "elsewhere.yaml")
	require.NoError(t, os.WriteFile(other, []byte(`version: 1
name: elsewhere
nodes:
  - {id: start, type: trigger.manual}
  - {id: a, type: template, text: one}
  - {id: b, type: template, text: two}
edges:
  - {from: start, to: a}
  - {from: a, to: b}
`), 0o644))
	out, err := exec.Command(bin, "run", other, "--dir", dir, "-o", "json").Output()
	require.NoError(t, err)
	var ran struct {
		ExecutionID string `json:"execution_id"`
	}
	require.NoError(t, json.Unmarshal(out, &ran), "%s", out)

	s := serve(t, serveOpts{dir: dir})
	g := s.admin("GET", "/api/runs/"+ran.ExecutionID+"/graph", nil, http.StatusOK)
	require.ElementsMatch(t, []string{"start→a", "a→b"}, graphEdges(t, g), "an unserved workflow's run is drawn with its edges")

	// A served workflow edited after its run: the run keeps its graph.
	id := s.start("quick", nil)
	s.ended(id)
	before := graphEdges(t, s.admin("GET", "/api/runs/"+id+"/graph", nil, http.StatusOK))
	src, err := os.ReadFile(filepath.Join(s.flows, "quick.yaml"))
	require.NoError(t, err)
	edited := strings.Replace(string(src), "edges:\n", "edges:\n  - {from: start, to: extra}\n", 1)
	edited = strings.Replace(edited, "nodes:\n", "nodes:\n  - {id: extra, type: template, text: new}\n", 1)
	require.NoError(t, os.WriteFile(filepath.Join(s.flows, "quick.yaml"), []byte(edited), 0o644))
	s.eventually("the edited file is served", 60*time.Second, func() bool {
		w := s.do("GET", "/api/workflows/quick", s.token, nil)
		return w.status == http.StatusOK && len(graphEdges(t, w.json(t)["graph"].(map[string]any))) == len(before)+1
	})
	require.Equal(t, before, graphEdges(t, s.admin("GET", "/api/runs/"+id+"/graph", nil, http.StatusOK)))

	// An unknown run is a 404 problem.
	require.Equal(t, http.StatusNotFound, s.do("GET", "/api/runs/nope/graph", s.token, nil).status)
}
