package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// readKind outputs the text of the file its path parameter names, read
// through the call's file-access policy, or the policy's error code.
type readKind struct{}

func (readKind) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	path, _ := c.Params["path"].(string)
	data, err := c.Files.Read(path)
	if err != nil {
		return map[string]any{"code": node.AsError(err).Code}, nil
	}
	return map[string]any{"text": string(data)}, nil
}

// TestCallFiles checks that every node call gets a file-access policy: the
// one in Options, or by default the workflow's files: folders, with
// relative paths taken from the workflow's folder.
func TestCallFiles(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry()
	reg.MustRegister(node.Spec{
		Kind: "read", Category: node.Action, Description: "Test action: reads a file through Call.Files.",
		Params:  []node.Param{{Name: "path", Type: node.String, Description: "The file."}},
		Outputs: []string{"text", "code"},
	}, func() node.Kind { return readKind{} })

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "assets"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "assets", "a.txt"), []byte("declared"), 0o644))
	other := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "b.txt"), []byte("given"), 0o644))
	file := filepath.Join(dir, "f.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`version: 1
name: f
files: [./assets]
nodes:
  - {id: declared, type: read, path: assets/a.txt}
  - {id: given, type: read, path: `+filepath.Join(other, "b.txt")+`}
`), 0o644))
	w, ds := workflow.Load(file, reg)
	require.False(t, ds.HasErrors(), ds.Error())
	plan, err := engine.NewPlan(w, reg)
	require.NoError(t, err)

	tests := []struct {
		name     string
		files    *node.Files
		declared map[string]any
		given    map[string]any
	}{
		{
			name:     "default: the workflow's files:",
			declared: map[string]any{"text": "declared"},
			given:    map[string]any{"code": node.CodeFileNotAllowed},
		},
		{
			name:     "the host's policy",
			files:    node.NewFiles(w.Dir(), other),
			declared: map[string]any{"code": node.CodeFileNotAllowed},
			given:    map[string]any{"text": "given"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := engine.NewDriver(reg, nil, 4).Execute(context.Background(), plan, engine.Options{RunID: "r", Host: engine.Host{Files: tc.files}})
			require.NoError(t, err)
			require.Equal(t, engine.RunCompleted, res.Status)
			out := map[string]map[string]any{}
			for _, s := range res.Steps {
				out[s.Node] = s.Output
				delete(s.Output, "success")
			}
			require.Equal(t, tc.declared, out["declared"])
			require.Equal(t, tc.given, out["given"])
		})
	}
}
