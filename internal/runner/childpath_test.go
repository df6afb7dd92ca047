package runner_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
)

// A child workflow swapped for a symlink that leads out of the parent's
// folder after the parent was loaded (and validated) is refused when the
// subworkflow node starts it: the node fails with subworkflow_path, naming
// the parent's file and line, and the file outside never runs.
func TestChildWorkflowSymlinkedOutIsRefusedAtRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	outside := t.TempDir()
	marker := filepath.Join(outside, "ran")
	child := "version: 1\nname: child\nnodes:\n  - {id: touch, type: shell, command: [touch, " + marker + "]}\n"
	require.NoError(t, os.WriteFile(filepath.Join(outside, "child.yaml"), []byte(child), 0o644))
	b.write(t, "child.yaml", "version: 1\nname: child\nnodes:\n  - {id: one, type: set, values: {x: 1}}\n")
	parent := b.write(t, "parent.yaml", "version: 1\nname: parent\nnodes:\n  - id: sub\n    type: subworkflow\n    workflow: child.yaml\n")
	w, err := b.r.Load(parent)
	require.NoError(t, err)

	require.NoError(t, os.Remove(filepath.Join(b.dir, "child.yaml")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "child.yaml"), filepath.Join(b.dir, "child.yaml")))
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))
	step := res.Engine.Steps[len(res.Engine.Steps)-1]
	require.NotNil(t, step.Error)
	require.Equal(t, "subworkflow_path", step.Error.Code, step.Error.Message)
	require.Contains(t, step.Error.Message, parent+`:6: node "sub": child workflow "child.yaml" leads through a symlink to `)
	require.Contains(t, step.Error.Message, "or declare its folder in files: [folder]")
	require.NoFileExists(t, marker, "the workflow outside did not run")
}
