package queue_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
)

// TestFaultKilledWorkerMidChild: a subworkflow node's child run runs in
// the worker that runs the node; the worker is killed while a node of the
// child (or of the child's own child) runs. The subworkflow node counts as
// lost and runs again on the other worker, which takes over the child run
// where it stopped: the child's completed node is not run again, the node
// that was running runs again (the same idempotency key), and the run
// completes with the child's outputs.
func TestFaultKilledWorkerMidChild(t *testing.T) {
	t.Parallel()
	for _, depth := range []int{1, 2} {
		t.Run(fmt.Sprintf("depth %d", depth), func(t *testing.T) {
			t.Parallel()
			b := setup(t, 0)
			l := newLedger(t)
			leaf := fmt.Sprintf(`version: 1
name: leaf
nodes:
  - {id: one, type: http, method: POST, url: "%[1]s/call"}
  - {id: hold, type: http, method: POST, url: "%[1]s/held"}
  - {id: three, type: http, method: POST, url: "%[1]s/call"}
edges:
  - {from: one, to: hold}
  - {from: hold, to: three}
outputs:
  ok: "{{ three.body.ok }}"
`, l.URL)
			b.file(t, "leaf.yaml", leaf)
			b.file(t, "mid.yaml", `version: 1
name: mid
nodes:
  - {id: before, type: http, method: POST, url: "`+l.URL+`/call"}
  - {id: inner, type: subworkflow, workflow: leaf.yaml}
edges:
  - {from: before, to: inner}
outputs:
  ok: "{{ inner.ok }}"
`)
			child := map[int]string{1: "leaf.yaml", 2: "mid.yaml"}[depth]

			first := startWorker(t, b.url)
			run := b.startParentOf(t, child, "ok")
			leafID := run.ID + ".sub1"
			if depth == 2 {
				leafID += ".inner1"
			}
			require.Equal(t, leafID+"/hold/1", recv(t, l.held, "the leaf's held node"))
			first.kill(t)
			l.Release()
			startWorker(t, b.url)

			done := b.wait(t, run.ID)
			require.Equal(t, "completed", string(done.Status), "%v", done.Error)
			require.Equal(t, true, done.Outputs["ok"])
			calls := l.Calls()
			require.Equal(t, 1, calls[leafID+"/one/1"], "the leaf's completed node ran once")
			require.Equal(t, 2, calls[leafID+"/hold/1"], "the leaf's running node ran again")
			require.Equal(t, 1, calls[leafID+"/three/1"])
			if depth == 2 {
				require.Equal(t, 1, calls[run.ID+".sub1/before/1"], "the middle run's completed node ran once")
			}
			for id, n := range calls {
				require.True(t, strings.HasPrefix(id, run.ID+"."), "call %s (%d) is of the run's children", id, n)
			}
			steps := b.steps(t, leafID)
			require.True(t, steps["one"][0].Cached, "the resumed leaf reused node one")
			require.Equal(t, 2, steps["hold"][0].Generation, "the leaf was taken over")
		})
	}
}

// TestFaultPausedWorkerMidChild: a worker paused (SIGSTOP) while a node of
// its subworkflow's child runs is judged lost, alive as its process is
// (as a worker on another machine that stopped answering is): another
// worker takes the child over, fencing the paused one off it, and
// completes the run. (A takeover refused a child whose owner's process
// was alive, or whose lease had not run out: the subworkflow node failed
// each attempt with "owned".)
func TestFaultPausedWorkerMidChild(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	l := newLedger(t)
	b.file(t, "leaf.yaml", fmt.Sprintf(`version: 1
name: leaf
nodes:
  - {id: one, type: http, method: POST, url: "%[1]s/call"}
  - {id: hold, type: http, method: POST, url: "%[1]s/held"}
edges:
  - {from: one, to: hold}
outputs:
  ok: "{{ hold.body.ok }}"
`, l.URL))
	paused := startWorker(t, b.url)
	run := b.startParentOf(t, "leaf.yaml", "ok")
	leafID := run.ID + ".sub1"
	require.Equal(t, leafID+"/hold/1", recv(t, l.held, "the leaf's held node"))
	paused.signal(t, syscall.SIGSTOP)
	startWorker(t, b.url)
	require.Equal(t, leafID+"/hold/1", recv(t, l.held, "the leaf's held node, on the other worker"))
	l.Release()

	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	require.Equal(t, true, done.Outputs["ok"])
	calls := l.Calls()
	require.Equal(t, 1, calls[leafID+"/one/1"], "the leaf's completed node ran once")
	require.Equal(t, 2, calls[leafID+"/hold/1"], "the leaf's held node ran on each worker")
}

// TestFaultKilledWorkerWhileChildWaits: a worker killed while its
// subworkflow's child waits for a signal: another worker takes the child
// over, which waits again (its completed node is not run again); the
// signal sent then reaches it, and the run completes.
func TestFaultKilledWorkerWhileChildWaits(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	l := newLedger(t)
	b.file(t, "ask.yaml", fmt.Sprintf(`version: 1
name: ask
nodes:
  - {id: one, type: http, method: POST, url: "%s/call"}
  - {id: approve, type: wait, until: signal}
  - {id: said, type: set, values: {by: "{{ approve.data.by }}"}}
edges:
  - {from: one, to: approve}
  - {from: approve, to: said}
outputs:
  by: "{{ said.by }}"
`, l.URL))
	first := startWorker(t, b.url)
	run := b.startParentOf(t, "ask.yaml", "by")
	childID := run.ID + ".sub1"
	waits := func() bool {
		steps, _ := b.st.Steps(t.Context(), childID) // not found until the child starts
		for _, s := range steps {
			if s.Node == "approve" && s.Status == engine.StatusWaiting {
				return true
			}
		}
		return false
	}
	require.Eventually(t, waits, 60*time.Second, 20*time.Millisecond, "the child's approve never waited")
	first.kill(t)
	startWorker(t, b.url)
	sig := exec.Command(skeinBin(t), "signal", "--db", b.url, "--dir", t.TempDir(), childID, "approve", "--data", `{"by": "Ada"}`)
	out, err := sig.CombinedOutput()
	require.NoError(t, err, string(out))

	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	require.Equal(t, "Ada", done.Outputs["by"])
	require.Equal(t, 1, l.Calls()[childID+"/one/1"], "the child's completed node ran once")
}

// file writes a workflow file beside the runs' workflow (a child they run).
func (b *bundle) file(t *testing.T, name, src string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(b.dir, name), []byte(src), 0o600))
}

// startParentOf starts a run whose one node, sub, runs the child workflow
// file (retries: 1, so that the attempt of a lost worker runs again
// elsewhere) and gives the child's output out as its own.
func (b *bundle) startParentOf(t *testing.T, child, out string) *store.Run {
	t.Helper()
	return b.start(t, fmt.Sprintf(`version: 1
name: parent
nodes:
  - {id: sub, type: subworkflow, workflow: %s, retries: 1, retry_backoff: 0s}
outputs:
  %s: "{{ sub.%s }}"
`, child, out, out), nil)
}
