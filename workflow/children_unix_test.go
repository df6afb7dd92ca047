//go:build unix

package workflow_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// A workflow file that is a named pipe is refused at once, named as a
// child or read itself: reading it would wait for a writer, and
// validation (and the node, and a server listing its folder) with it.
func TestChildWorkflowThatIsAPipeIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o600))
	parent := filepath.Join(dir, "parent.yaml")
	require.NoError(t, os.WriteFile(parent, []byte("version: 1\nname: parent\nnodes:\n  - {id: go, type: subworkflow, workflow: pipe.yaml}\n"), 0o644))
	_, ds := workflow.Load(parent, node.Default)
	require.Len(t, ds.Errors(), 1, ds.Error())
	d := ds.Errors()[0]
	require.Equal(t, "go", d.Node)
	require.Equal(t, 4, d.Line)
	require.Equal(t, `child workflow "pipe.yaml" cannot be read: `+filepath.Join(dir, "pipe.yaml")+` is not a file but a named pipe; name a workflow file`, d.Message)

	_, err := workflow.ReadFile(filepath.Join(dir, "pipe.yaml"))
	require.EqualError(t, err, filepath.Join(dir, "pipe.yaml")+" is not a file but a named pipe; name a workflow file")
}
