package durable_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
	"github.com/skeinhq/skein/workflow"
)

// countingSaves is a store whose SaveWorkflow counts its calls, and holds
// the first until release is closed.
type countingSaves struct {
	store.Store
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (s *countingSaves) SaveWorkflow(ctx context.Context, name string, source []byte, hash string) (store.WorkflowVersion, error) {
	if s.calls.Add(1) == 1 {
		close(s.entered)
		<-s.release
	}
	return s.Store.SaveWorkflow(ctx, name, source, hash)
}

// Runs of one workflow that start together — the first webhooks a server
// takes — store its source once: the others wait for that save, instead
// of each saving it again behind the workflow's lock. A caller whose
// context ends does not fail the save the others wait for.
func TestVersionsSavedOnceByRunsStartedTogether(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "skein.db"))
	require.NoError(t, err)
	defer st.Close()
	counting := &countingSaves{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
	src := []byte("version: 1\nname: hooks\nnodes:\n  - {id: start, type: trigger.manual}\n")
	w := &workflow.Workflow{Name: "hooks", Source: src}
	again := &workflow.Workflow{Name: "hooks", Source: src} // the same file loaded twice

	var vs durable.Versions
	first, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	versions := make([]int, 9)
	errs := make([]error, 9)
	wg.Go(func() { versions[0], errs[0] = vs.Save(first, counting, w) })
	<-counting.entered
	cancel()
	var asked sync.WaitGroup
	for i := 1; i < len(versions); i++ {
		asked.Add(1)
		wg.Go(func() {
			wf := w
			if i%2 == 0 {
				wf = again
			}
			asked.Done()
			versions[i], errs[i] = vs.Save(context.Background(), counting, wf)
		})
	}
	asked.Wait()
	close(counting.release)
	wg.Wait()

	for i := range versions {
		require.NoError(t, errs[i], "caller %d", i)
		require.Equal(t, 1, versions[i], "caller %d", i)
	}
	require.EqualValues(t, 1, counting.calls.Load(), "saves of one source started together")

	// Known now, by either copy: no more saves.
	for _, wf := range []*workflow.Workflow{w, again} {
		v, err := vs.Save(context.Background(), counting, wf)
		require.NoError(t, err)
		require.Equal(t, 1, v)
	}
	require.EqualValues(t, 1, counting.calls.Load())
}

// A copy of a workflow loaded after the first copy's save ended is not
// saved again; a source changed back is saved as a new latest version, as
// the store does.
func TestVersionsCopyLoadedLaterAndSourceChangedBack(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "skein.db"))
	require.NoError(t, err)
	defer st.Close()
	counting := &countingSaves{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
	close(counting.release)
	a := []byte("version: 1\nname: hooks\nnodes:\n  - {id: start, type: trigger.manual}\n")
	b := []byte("version: 1\nname: hooks\nnodes:\n  - {id: begin, type: trigger.manual}\n")
	var vs durable.Versions
	save := func(src []byte) int {
		v, err := vs.Save(context.Background(), counting, &workflow.Workflow{Name: "hooks", Source: src})
		require.NoError(t, err)
		return v
	}
	require.Equal(t, 1, save(a))
	require.Equal(t, 1, save(a), "a second copy of the same source")
	require.EqualValues(t, 1, counting.calls.Load(), "the copy loaded later is not saved again")
	require.Equal(t, 2, save(b))
	require.Equal(t, 3, save(a), "the source changed back is the latest version again")
}
