package queue_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
)

// TestSubworkflowsNestAsDeepOnWorkers: subworkflows nest up to
// engine.MaxDepth levels below the run, whether the run is queued (its
// children run in the worker that runs their node) or local; one level
// more fails the node that would start it, with the same words.
func TestSubworkflowsNestAsDeepOnWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	startWorker(t, b.url)
	// level<n>.yaml runs level<n+1>.yaml; the last one only says where it is.
	last := engine.MaxDepth + 1
	for n := 1; n <= last; n++ {
		src := fmt.Sprintf("version: 1\nname: level%d\nnodes:\n", n)
		if n == last {
			src += fmt.Sprintf("  - {id: here, type: set, values: {level: %d}}\noutputs:\n  level: \"{{ here.level }}\"\n", n)
		} else {
			src += fmt.Sprintf("  - {id: next, type: subworkflow, workflow: level%d.yaml}\noutputs:\n  level: \"{{ next.level }}\"\n", n+1)
		}
		b.file(t, fmt.Sprintf("level%d.yaml", n), src)
	}
	parent := func(first int) string {
		return fmt.Sprintf("version: 1\nname: top\nnodes:\n  - {id: next, type: subworkflow, workflow: level%d.yaml}\noutputs:\n  level: \"{{ next.level }}\"\n", first)
	}
	const tooDeep = "subworkflows nest deeper than 10 levels"

	// MaxDepth levels below the run: the deepest child answers.
	run := b.start(t, parent(2), nil)
	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	require.EqualValues(t, last, done.Outputs["level"])
	// One more: the node that would start it fails, and with it each
	// level above.
	run = b.start(t, parent(1), nil)
	done = b.wait(t, run.ID)
	require.Equal(t, "failed", string(done.Status))
	require.NotNil(t, done.Error)
	require.Contains(t, done.Error.Message, tooDeep)

	// The same files, run by `skein run`.
	local := func(first int) (string, error) {
		file := filepath.Join(b.dir, "local"+strconv.Itoa(first)+".yaml")
		require.NoError(t, os.WriteFile(file, []byte(parent(first)), 0o600))
		cmd := exec.Command(skeinBin(t), "run", "--dir", t.TempDir(), file)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := local(2)
	require.NoError(t, err, out)
	out, err = local(1)
	require.Error(t, err)
	require.Contains(t, out, tooDeep)
}
