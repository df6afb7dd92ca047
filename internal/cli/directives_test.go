package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/rundoc"
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
	require.Regexp(t, `guess\s+shell\s+1\s+0\s+✓ success · confidence 0\.40`, show.stdout)

	// The run document has them, as schema/run.schema.json describes.
	js := skein(t, "runs", "show", "--dir", skeinDir, "-o", "json", id[1])
	require.Equal(t, 0, js.code, js.stderr)
	data, err := os.ReadFile("../../schema/run.schema.json")
	require.NoError(t, err)
	sdoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(rundoc.SchemaID, sdoc))
	schema, err := c.Compile(rundoc.SchemaID)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(js.stdout)))
	require.NoError(t, err)
	require.NoError(t, schema.Validate(inst), js.stdout)
	var doc struct {
		Steps []struct {
			Node       string   `json:"node"`
			Confidence *float64 `json:"confidence_score"`
		} `json:"steps"`
		Verdict struct {
			Nodes []struct {
				Checks []struct {
					Verdict string `json:"verdict"`
				} `json:"checks"`
			} `json:"nodes"`
		} `json:"verdict"`
	}
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &doc))
	for _, s := range doc.Steps {
		if s.Node == "guess" {
			require.NotNil(t, s.Confidence)
			require.Equal(t, 0.4, *s.Confidence)
		}
	}
	require.Equal(t, "not_run", doc.Verdict.Nodes[0].Checks[0].Verdict)
}
