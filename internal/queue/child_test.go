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
	"github.com/skeinhq/skein/workflow"
)

// TestSubworkflowsNestAsDeepOnWorkers: subworkflows nest up to
// engine.MaxDepth levels below the run, whether the run is queued (its
// children run in the worker that runs their node) or local; one level
// more fails the node that would start it, with the same words.
func TestSubworkflowsNestAsDeepOnWorkers(t *testing.T) {
	t.Parallel()
	// level<n>.yaml runs level<n+1>.yaml; the last one only says where it
	// is, and so does an earlier one when its chain is cut there.
	last := engine.MaxDepth + 1
	level := func(n, end int) string {
		src := fmt.Sprintf("version: 1\nname: level%d\nnodes:\n", n)
		if n == end {
			return src + fmt.Sprintf("  - {id: here, type: set, values: {level: %d}}\noutputs:\n  level: \"{{ here.level }}\"\n", n)
		}
		return src + fmt.Sprintf("  - {id: next, type: subworkflow, workflow: level%d.yaml}\noutputs:\n  level: \"{{ next.level }}\"\n", n+1)
	}
	files := func(b *bundle, end int) {
		for n := 1; n <= last; n++ {
			b.file(t, fmt.Sprintf("level%d.yaml", n), level(n, min(end, last)))
		}
	}
	parent := func(first int) string {
		return fmt.Sprintf("version: 1\nname: top\nnodes:\n  - {id: next, type: subworkflow, workflow: level%d.yaml}\noutputs:\n  level: \"{{ next.level }}\"\n", first)
	}
	const tooDeep = "subworkflows nest deeper than 10 levels"

	b := setup(t, 0)
	// A run that starts MaxDepth levels below it, the last cut short;
	// then the files change (the last one runs one level more) before
	// a worker runs it: the node that would start the level too many
	// fails, and with it each level above.
	files(b, engine.MaxDepth)
	late := b.start(t, parent(1), nil)
	files(b, last)
	startWorker(t, b.url)
	done := b.wait(t, late.ID)
	require.Equal(t, "failed", string(done.Status))
	require.NotNil(t, done.Error)
	require.Contains(t, done.Error.Message, tooDeep)

	// MaxDepth levels below the run: the deepest child answers.
	run := b.start(t, parent(2), nil)
	done = b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	require.EqualValues(t, last, done.Outputs["level"])

	// One more is refused when the files are validated.
	file := filepath.Join(b.dir, "flow.yaml")
	require.NoError(t, os.WriteFile(file, []byte(parent(1)), 0o600))
	_, ds := workflow.Load(file, b.reg)
	require.Len(t, ds.Errors(), 1, "%v", ds)
	require.Contains(t, ds.Error(), "makes "+tooDeep)

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
	require.Contains(t, out, tooDeep, "refused when the file is validated, before the run starts")
}
