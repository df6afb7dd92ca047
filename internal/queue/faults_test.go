package queue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/faultproxy"
	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/skeinbin"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// The fault tests run real `skein worker` and `skein serve` processes
// against Postgres, and kill, pause and cut them off as a machine would.

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// skeinBin builds the skein binary, once for the package's tests.
func skeinBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "skein-faults-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "skein")
		binErr = skeinbin.Build(binPath)
	})
	require.NoError(t, binErr)
	return binPath
}

func removeSkeinBin() {
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
}

// output collects a process's stdout and stderr.
type output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// proc is a skein process a test started; it is killed when the test ends.
type proc struct {
	cmd  *exec.Cmd
	out  *output
	done chan struct{}
}

func startSkein(t *testing.T, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(skeinBin(t), args...)
	p := &proc{cmd: cmd, out: &output{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("skein %s (pid %d):\n%s", args[0], cmd.Process.Pid, p.out.String())
		}
	})
	return p
}

// startWorker starts `skein worker` on the database of url.
func startWorker(t *testing.T, url string, flags ...string) *proc {
	t.Helper()
	args := append([]string{"worker", "--db", url, "--dir", t.TempDir(), "--concurrency", "4", "--rescue-after", "1s"}, flags...)
	return startSkein(t, args...)
}

// kill kills the process (SIGKILL: no drain, no last word).
func (p *proc) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Kill())
	p.wait(t)
}

func (p *proc) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("pid %d did not end", p.cmd.Process.Pid)
	}
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// service is the outside service the workflows' http nodes call. It
// records the Idempotency-Key of each call to /call and holds the first
// until released; /after answers when afterRelease is closed.
type service struct {
	*httptest.Server
	mu           sync.Mutex
	keys         []string
	calls        chan int
	afters       chan struct{}
	release      chan struct{}
	afterRelease chan struct{}
	// answerFirst and answerAfter let the held calls answer.
	answerFirst, answerAfter func()
}

func newService(t *testing.T) *service {
	s := &service{calls: make(chan int, 16), afters: make(chan struct{}, 16),
		release: make(chan struct{}), afterRelease: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/call", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.keys = append(s.keys, r.Header.Get("Idempotency-Key"))
		n := len(s.keys)
		s.mu.Unlock()
		s.calls <- n
		if n == 1 {
			select {
			case <-s.release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"call": %d}`, n)
	})
	mux.HandleFunc("/after", func(w http.ResponseWriter, r *http.Request) {
		s.afters <- struct{}{}
		select {
		case <-s.afterRelease:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok": true}`)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	s.answerFirst = sync.OnceFunc(func() { close(s.release) })
	s.answerAfter = sync.OnceFunc(func() { close(s.afterRelease) })
	t.Cleanup(func() { // before Close: handlers still holding a call return
		s.answerFirst()
		s.answerAfter()
	})
	return s
}

func (s *service) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("waited 30 s for %s", what)
		var zero T
		return zero
	}
}

func eventsOf(t *testing.T, b *bundle, runID, typ, nodeID string) []store.Event {
	t.Helper()
	evs, err := b.st.Events(context.Background(), runID, 0, 10_000)
	require.NoError(t, err)
	var out []store.Event
	for _, ev := range evs {
		if ev.Type == typ && ev.Node == nodeID {
			out = append(out, ev)
		}
	}
	return out
}

// TestFaultKilledWorker: a worker killed while its node runs is lost;
// the node runs again on another worker with attempt + 1 and the same
// idempotency key.
func TestFaultKilledWorker(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	svc := newService(t)
	first := startWorker(t, b.url)
	run := b.start(t, fmt.Sprintf(`version: 1
name: killed
nodes:
  - {id: call, type: http, method: POST, url: "%s/call", json: {order: 1042}, retries: 2, retry_backoff: 0s}
`, svc.URL), nil)
	require.Equal(t, 1, recv(t, svc.calls, "the first attempt's call"))
	first.kill(t)
	startWorker(t, b.url)

	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	keys := svc.Keys()
	require.Len(t, keys, 2, "the service was called once per attempt")
	require.Equal(t, keys[0], keys[1], "the second attempt sent the same idempotency key")
	require.Equal(t, run.ID+"/call/1", keys[0])
	steps := b.steps(t, run.ID)
	require.Len(t, steps["call"], 1)
	require.Equal(t, "success", string(steps["call"][0].Status))
	require.Equal(t, 2, steps["call"][0].Attempts)
	require.EqualValues(t, 2, steps["call"][0].Output["body"].(map[string]any)["call"])
	retries := eventsOf(t, b, run.ID, engine.EventRetry, "call")
	require.Len(t, retries, 1)
	require.EqualValues(t, 2, retries[0].Data["attempt"])
	require.Contains(t, retries[0].Data["error"], "stopped answering while it ran attempt 1 of node call")
}

// TestFaultKilledWorkerMidChain: a worker runs a chain by local
// continuation (each node takes the next one's job as it is recorded) and
// is killed while a node of it runs. No node it completed runs again; the
// node it was running counts as lost and runs again on the other worker,
// which finishes the run.
func TestFaultKilledWorkerMidChain(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	l := newLedger(t)
	first := startWorker(t, b.url)
	run := b.start(t, fmt.Sprintf(`version: 1
name: chain
nodes:
  - {id: one, type: http, method: POST, url: "%[1]s/call"}
  - {id: two, type: http, method: POST, url: "%[1]s/call"}
  - {id: three, type: set, values: {n: 3}}
  - {id: hold, type: http, method: POST, url: "%[1]s/held", retries: 2, retry_backoff: 0s}
  - {id: five, type: http, method: POST, url: "%[1]s/call"}
  - {id: six, type: set, values: {n: "{{ three.n + 3 }}"}}
edges:
  - {from: one, to: two}
  - {from: two, to: three}
  - {from: three, to: hold}
  - {from: hold, to: five}
  - {from: five, to: six}
`, l.URL), nil)
	require.Equal(t, run.ID+"/hold/1", recv(t, l.held, "hold's first attempt"))
	ctx := context.Background()
	lost := b.ranOn(t, run.ID, "one")
	// The running node's job was taken by local continuation; the jobs of
	// the continued nodes recorded before it are gone (completed).
	var by string
	require.NoError(t, b.st.Pool().QueryRow(ctx, `SELECT COALESCE(metadata->>'continued_by', '') FROM river_job
		WHERE args->>'run' = $1 AND args->>'node' = 'hold'`, run.ID).Scan(&by))
	require.Equal(t, lost, by, "node hold was taken by local continuation on the first worker")
	var left int
	require.NoError(t, b.st.Pool().QueryRow(ctx, `SELECT count(*) FROM river_job
		WHERE args->>'run' = $1 AND args->>'node' IN ('two', 'three')`, run.ID).Scan(&left))
	require.Zero(t, left, "the jobs of the continued nodes recorded are deleted")
	first.kill(t)
	l.Release()
	startWorker(t, b.url)

	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	calls := l.Calls()
	for _, n := range []string{"one", "two", "five"} {
		require.Equal(t, 1, calls[run.ID+"/"+n+"/1"], "node %s was called once", n)
	}
	require.Equal(t, 2, calls[run.ID+"/hold/1"], "hold was called once per attempt")
	for _, n := range []string{"one", "two", "three", "five", "six"} {
		require.Len(t, eventsOf(t, b, run.ID, engine.EventNodeFinished, n), 1, "node %s finished once", n)
	}
	steps := b.steps(t, run.ID)
	for _, n := range []string{"one", "two", "three"} {
		require.Equal(t, lost, steps[n][0].RanOn.Worker, "node %s ran on the first worker", n)
		require.Equal(t, 1, steps[n][0].Attempts)
	}
	for _, n := range []string{"hold", "five", "six"} {
		require.NotEqual(t, lost, steps[n][0].RanOn.Worker, "node %s ran on the other worker", n)
	}
	require.Equal(t, 2, steps["hold"][0].Attempts)
	require.EqualValues(t, 6, steps["six"][0].Output["n"])
	retries := eventsOf(t, b, run.ID, engine.EventRetry, "hold")
	require.Len(t, retries, 1)
	require.Contains(t, retries[0].Data["error"], "stopped answering while it ran attempt 1 of node hold")
}

// TestFaultKilledWorkerMidCommitGroup: four nodes of a fan-out end on one
// worker together while the test holds their run's row, so their outcomes
// form one commit group: one of them leads its transaction, blocked on the
// row, the others wait to be recorded with it. The worker is killed there.
// Nothing of the group was committed, so the four nodes count as lost and
// run again on the other worker (attempt 2, the same idempotency key); the
// node completed before the group, and the merge after it, run once.
func TestFaultKilledWorkerMidCommitGroup(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	l := newLedger(t)
	first := startWorker(t, b.url)
	var nodes, edges strings.Builder
	for i := range 4 {
		fmt.Fprintf(&nodes, "  - {id: b%d, type: http, method: POST, url: \"%s/held\", retries: 2, retry_backoff: 0s}\n", i, l.URL)
		fmt.Fprintf(&edges, "  - {from: one, to: b%d}\n  - {from: b%d, to: join}\n", i, i)
	}
	run := b.start(t, fmt.Sprintf(`version: 1
name: group
nodes:
  - {id: one, type: http, method: POST, url: "%s/call"}
%s  - {id: join, type: merge}
  - {id: total, type: set, values: {n: "{{ len(join.inputs) }}"}}
edges:
%s  - {from: join, to: total}
`, l.URL, nodes.String(), edges.String()), nil)
	ctx := context.Background()
	for range 4 {
		recv(t, l.held, "a fan-out node's call")
	}
	// Each node's start is recorded (they have effects outside the run)
	// before the test takes the run's row.
	require.Eventually(t, func() bool {
		steps := b.steps(t, run.ID)
		for i := range 4 {
			s := steps[fmt.Sprintf("b%d", i)]
			if len(s) != 1 || s[0].Status != "running" {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "the fan-out nodes recorded as running")
	lost := b.ranOn(t, run.ID, "b0")

	hold, err := b.st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = hold.Rollback(ctx) }()
	_, err = hold.Exec(ctx, `SELECT 1 FROM runs WHERE id = $1 FOR UPDATE`, run.ID)
	require.NoError(t, err)
	l.Release()
	for range 4 {
		recv(t, l.answered, "a fan-out node's answer")
	}
	// The group's transaction waits for the row the test holds.
	b.killWhileLocked(t, first, hold, "%FROM runs%", "a transaction of the worker waiting for the run's row")

	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	calls := l.Calls()
	require.Equal(t, 1, calls[run.ID+"/one/1"], "the node completed before the group was called once")
	steps := b.steps(t, run.ID)
	require.EqualValues(t, 4, steps["total"][0].Output["n"], "the merge had the four outputs")
	require.Equal(t, lost, steps["one"][0].RanOn.Worker)
	require.Equal(t, 1, steps["one"][0].Attempts)
	for _, n := range []string{"one", "join", "total"} {
		require.Len(t, eventsOf(t, b, run.ID, engine.EventNodeFinished, n), 1, "node %s finished once", n)
	}
	for i := range 4 {
		n := fmt.Sprintf("b%d", i)
		require.Equal(t, 2, calls[run.ID+"/"+n+"/1"], "node %s was called once per attempt", n)
		require.Equal(t, 2, steps[n][0].Attempts, "node %s: its first attempt's outcome was lost with the group", n)
		require.NotEqual(t, lost, steps[n][0].RanOn.Worker, "node %s ran again on the other worker", n)
		require.Len(t, eventsOf(t, b, run.ID, engine.EventNodeFinished, n), 1, "node %s finished once", n)
		retries := eventsOf(t, b, run.ID, engine.EventRetry, n)
		require.Len(t, retries, 1)
		require.Contains(t, retries[0].Data["error"], "stopped answering while it ran attempt 1 of node "+n)
	}
}

// TestFaultKilledWorkerMidSharedCommit: the nodes of three runs end on
// one worker together while the test holds the steps table: the first
// outcome's transaction waits for it, the others wait to share the
// worker's next transaction (commit.go). The worker is killed there. A
// transaction whose COMMIT had gone out with its writes (they are
// pipelined) commits once the table is free, the worker gone or not;
// nothing of the others was committed, so their nodes count as lost and
// run again on the other worker (attempt 2, the same idempotency key).
// Every run completes, each node is called once per attempt its step
// counts and finishes once, the nodes before and after run once.
func TestFaultKilledWorkerMidSharedCommit(t *testing.T) {
	t.Parallel()
	const runs = 3
	b := setup(t, 0)
	l := newLedger(t)
	first := startWorker(t, b.url)
	src := fmt.Sprintf(`version: 1
name: shared
nodes:
  - {id: one, type: http, method: POST, url: "%[1]s/call"}
  - {id: held, type: http, method: POST, url: "%[1]s/held", retries: 2, retry_backoff: 0s}
  - {id: after, type: set, values: {status: "{{ held.status }}"}}
edges:
  - {from: one, to: held}
  - {from: held, to: after}
`, l.URL)
	ids := make([]string, runs)
	for i := range ids {
		ids[i] = b.start(t, src, nil).ID
	}
	for range runs {
		recv(t, l.held, "a held node's call")
	}
	// Each held node's start is recorded before the test takes the table.
	require.Eventually(t, func() bool {
		for _, id := range ids {
			s := b.steps(t, id)["held"]
			if len(s) != 1 || s[0].Status != "running" {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "the held nodes recorded as running")
	lost := b.ranOn(t, ids[0], "one")

	hold := b.lockSteps(t)
	l.Release()
	for range runs {
		recv(t, l.answered, "a held node's answer")
	}
	b.killWhileLocked(t, first, hold, "%", "the worker's transaction waiting for the steps table")

	for _, id := range ids {
		done := b.wait(t, id)
		require.Equal(t, "completed", string(done.Status), "%v", done.Error)
		calls := l.Calls()
		steps := b.steps(t, id)
		held := steps["held"][0]
		require.Equal(t, 1, calls[id+"/one/1"], "run %s: the node completed before was called once", id)
		require.Equal(t, held.Attempts, calls[id+"/held/1"], "run %s: the held node was called once per attempt", id)
		require.EqualValues(t, 200, steps["after"][0].Output["status"], "run %s", id)
		for _, n := range []string{"one", "held", "after"} {
			require.Len(t, eventsOf(t, b, id, engine.EventNodeFinished, n), 1, "run %s: node %s finished once", id, n)
		}
		retries := eventsOf(t, b, id, engine.EventRetry, "held")
		switch held.Attempts {
		case 1: // its transaction's COMMIT had gone out
			require.Equal(t, lost, held.RanOn.Worker, "run %s", id)
			require.Empty(t, retries, "run %s", id)
		case 2: // waited for the worker's next transaction: lost with it
			require.NotEqual(t, lost, held.RanOn.Worker, "run %s: the held node ran again on the other worker", id)
			require.Len(t, retries, 1, "run %s", id)
			require.Contains(t, retries[0].Data["error"], "stopped answering while it ran attempt 1 of node held")
		default:
			t.Fatalf("run %s: %d attempts of the held node", id, held.Attempts)
		}
	}
}

// lockSteps holds the steps table until the returned transaction ends
// (at the test's end at the latest): reads go on, every write of a step
// waits.
func (b *bundle) lockSteps(t *testing.T) pgx.Tx {
	t.Helper()
	return lockTable(t, b.st, "steps")
}

// lockTable holds a table of st's database until the returned
// transaction ends (at the test's end at the latest): reads go on, every
// write waits.
func lockTable(t *testing.T, st *postgres.Store, table string) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	hold, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = hold.Rollback(ctx) })
	_, err = hold.Exec(ctx, `LOCK TABLE `+table+` IN EXCLUSIVE MODE`)
	require.NoError(t, err)
	return hold
}

// killWhileLocked waits until a transaction waits for a lock that hold
// has (its statement LIKE query), kills first, lets hold go and starts
// another worker.
func (b *bundle) killWhileLocked(t *testing.T, first *proc, hold pgx.Tx, query, what string) {
	t.Helper()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, b.st.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE $1 AND pid <> pg_backend_pid()`, query).Scan(&n))
		return n > 0
	}, 30*time.Second, 10*time.Millisecond, what)
	first.kill(t)
	require.NoError(t, hold.Rollback(ctx))
	startWorker(t, b.url)
}

// TestFaultKilledWorkerMidPureNodes: a worker killed while the
// transaction that records a node, and runs the pure nodes it released
// (pure.go), waits to write: none of it committed. The node's attempt is
// lost and runs again on the other worker, and the pure nodes after it
// run there, each finishing once; the node before, and the one after,
// are called once.
func TestFaultKilledWorkerMidPureNodes(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	l := newLedger(t)
	first := startWorker(t, b.url)
	run := b.start(t, fmt.Sprintf(`version: 1
name: pure
nodes:
  - {id: one, type: http, method: POST, url: "%[1]s/call"}
  - {id: held, type: http, method: POST, url: "%[1]s/held", retries: 2, retry_backoff: 0s}
  - {id: p1, type: set, values: {n: 1}}
  - {id: p2, type: set, values: {n: "{{ p1.n + 1 }}"}}
  - {id: p3, type: set, values: {n: "{{ p2.n + 1 }}"}}
  - {id: last, type: http, method: POST, url: "%[1]s/call"}
edges:
  - {from: one, to: held}
  - {from: held, to: p1}
  - {from: p1, to: p2}
  - {from: p2, to: p3}
  - {from: p3, to: last}
`, l.URL), nil)
	require.Equal(t, run.ID+"/held/1", recv(t, l.held, "held's first attempt"))
	lost := b.ranOn(t, run.ID, "one")
	// The steps table, locked by the test, holds back the writes of the
	// transaction that records held and runs p1…p3.
	hold := b.lockSteps(t)
	l.Release()
	recv(t, l.answered, "held's answer")
	b.killWhileLocked(t, first, hold, "%", "the worker's transaction waiting for the steps table")

	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	calls := l.Calls()
	require.Equal(t, 1, calls[run.ID+"/one/1"], "the node before was called once")
	require.Equal(t, 2, calls[run.ID+"/held/1"], "held was called once per attempt")
	require.Equal(t, 1, calls[run.ID+"/last/1"], "the node after was called once")
	steps := b.steps(t, run.ID)
	require.Equal(t, 2, steps["held"][0].Attempts, "held's first outcome was lost with its transaction")
	require.EqualValues(t, 3, steps["p3"][0].Output["n"])
	for _, n := range []string{"p1", "p2", "p3"} {
		require.Equal(t, 1, steps[n][0].Attempts, "node %s", n)
		require.NotEqual(t, lost, steps[n][0].RanOn.Worker, "node %s ran on the other worker", n)
		require.Len(t, eventsOf(t, b, run.ID, engine.EventNodeStarted, n), 1, "node %s started once", n)
		require.Len(t, eventsOf(t, b, run.ID, engine.EventNodeFinished, n), 1, "node %s finished once", n)
	}
}

// TestFaultJobHandedOutAgain: River hands out again the job of a killed
// worker (its rescuer does, after a day; here the test does, before the
// worker's lease ran out): the worker that takes it does not run the node
// again under the same attempt; it records the attempt lost, and the node
// runs again with attempt + 1.
func TestFaultJobHandedOutAgain(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	svc := newService(t)
	first := startWorker(t, b.url, "--rescue-after", "1h")
	run := b.start(t, fmt.Sprintf(`version: 1
name: again
nodes:
  - {id: call, type: http, method: POST, url: "%s/call", retries: 1, retry_backoff: 0s}
`, svc.URL), nil)
	require.Equal(t, 1, recv(t, svc.calls, "the first attempt's call"))
	first.kill(t)
	// What River's rescuer does to a job stuck running.
	tag, err := b.st.Pool().Exec(context.Background(),
		`UPDATE river_job SET state = 'available', scheduled_at = now() WHERE kind = 'skein_task' AND state = 'running'`)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
	startWorker(t, b.url)

	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	require.Len(t, svc.Keys(), 2, "the node ran once per attempt")
	steps := b.steps(t, run.ID)
	require.Equal(t, 2, steps["call"][0].Attempts)
	require.EqualValues(t, 2, steps["call"][0].Output["body"].(map[string]any)["call"])
}

// TestFaultPausedWorker: a worker paused past its lease loses its node to
// another worker; resumed, it finishes the node but cannot record the
// stale result over the one recorded since.
func TestFaultPausedWorker(t *testing.T) {
	t.Parallel()
	b, svc, paused, run := pausedMidCall(t)

	// The paused worker comes back and gets its answer: it tries to
	// record the first attempt while the run still runs.
	paused.signal(t, syscall.SIGCONT)
	svc.answerFirst()
	require.Eventually(t, func() bool {
		return strings.Contains(paused.out.String(), "dropped a stale result: the attempt was recorded without this worker")
	}, 30*time.Second, 10*time.Millisecond, "the resumed worker did not report its stale result")
	svc.answerAfter()
	requireSecondAttempt(t, b, run.ID, paused)
}

// TestFaultPausedWorkerAfterItsRunEnded: the same, the worker resumed
// only once the run ended: its result is dropped, and it says so.
func TestFaultPausedWorkerAfterItsRunEnded(t *testing.T) {
	t.Parallel()
	b, svc, paused, run := pausedMidCall(t)
	svc.answerAfter()
	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)

	paused.signal(t, syscall.SIGCONT)
	svc.answerFirst()
	require.Eventually(t, func() bool {
		return strings.Contains(paused.out.String(), "dropped a stale result: the run ended without this worker")
	}, 30*time.Second, 10*time.Millisecond, "the resumed worker did not report its stale result")
	requireSecondAttempt(t, b, run.ID, paused)
}

// pausedMidCall starts a run whose node call is taken by a worker that
// is then paused (SIGSTOP) while the call waits for its answer; another
// worker runs the node again and reaches the node after it, whose
// answer waits too.
func pausedMidCall(t *testing.T) (*bundle, *service, *proc, *store.Run) {
	t.Helper()
	b := setup(t, 0)
	svc := newService(t)
	paused := startWorker(t, b.url)
	run := b.start(t, fmt.Sprintf(`version: 1
name: paused
nodes:
  - {id: call, type: http, method: POST, url: "%[1]s/call", retries: 2, retry_backoff: 0s}
  - {id: after, type: http, method: GET, url: "%[1]s/after"}
edges:
  - {from: call, to: after}
`, svc.URL), nil)
	require.Equal(t, 1, recv(t, svc.calls, "the first attempt's call"))
	paused.signal(t, syscall.SIGSTOP)
	startWorker(t, b.url)
	require.Equal(t, 2, recv(t, svc.calls, "the second attempt's call, on the other worker"))
	recv(t, svc.afters, "the node after it")
	return b, svc, paused, run
}

// requireSecondAttempt checks that the run completed with the second
// attempt's result of call, recorded once, and that the paused worker
// lives on.
func requireSecondAttempt(t *testing.T, b *bundle, runID string, paused *proc) {
	t.Helper()
	done := b.wait(t, runID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	steps := b.steps(t, runID)
	require.Len(t, steps["call"], 1, "one step")
	require.Equal(t, "success", string(steps["call"][0].Status))
	require.Equal(t, 2, steps["call"][0].Attempts)
	require.EqualValues(t, 2, steps["call"][0].Output["body"].(map[string]any)["call"], "the step holds the second attempt's result")
	finished := eventsOf(t, b, runID, engine.EventNodeFinished, "call")
	require.Len(t, finished, 1, "one result of the node: %v", finished)
	select {
	case <-paused.done:
		t.Fatal("the resumed worker died")
	default:
	}
}

// supervise keeps a worker running in each of n slots, starting a new one
// when one dies (as systemd's Restart=always would), until the test ends.
// Each death is sent on the returned channel.
func supervise(t *testing.T, url string, n int) <-chan struct{} {
	t.Helper()
	deaths := make(chan struct{}, 64)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		first := startWorker(t, url)
		wg.Go(func() {
			p := first
			for {
				select {
				case <-p.done:
				case <-stop:
					return
				}
				deaths <- struct{}{}
				select {
				case <-stop:
					return
				default:
				}
				p = startWorker(t, url)
			}
		})
	}
	// Registered after the workers' own cleanups, so it runs before them:
	// no worker is started while they are killed.
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
	})
	return deaths
}

// TestFaultPoisonNode: a node that kills the worker running it, every
// time (as the kernel's out-of-memory killer kills a worker whose node
// eats the machine's memory), fails after its retries, and the run fails
// saying so; other runs on the queue complete meanwhile.
func TestFaultPoisonNode(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	deaths := supervise(t, b.url, 2)
	poison := b.start(t, `version: 1
name: poison
nodes:
  - {id: hog, type: shell, command: [sh, -c, "kill -KILL $PPID; sleep 5"], retries: 2, retry_backoff: 0s}
`, nil)
	recv(t, deaths, "the first crash")
	steady := b.start(t, `version: 1
name: steady
nodes:
  - {id: a, type: set, values: {n: 1}, retries: 2, retry_backoff: 0s}
  - {id: b, type: set, values: {n: "{{ a.n + 1 }}"}, retries: 2, retry_backoff: 0s}
  - {id: c, type: set, values: {n: "{{ b.n + 1 }}"}, retries: 2, retry_backoff: 0s}
edges:
  - {from: a, to: b}
  - {from: b, to: c}
`, nil)
	ok := b.wait(t, steady.ID)
	require.Equal(t, "completed", string(ok.Status), "%v", ok.Error)
	require.EqualValues(t, 3, b.steps(t, steady.ID)["c"][0].Output["n"])

	failed := b.wait(t, poison.ID)
	require.Equal(t, "failed", string(failed.Status))
	require.True(t, ok.FinishedAt.Before(*failed.FinishedAt), "the other run completed while the poison node was retried")
	require.NotNil(t, failed.Error)
	require.Equal(t, queue.CodeWorkerLost, failed.Error.Code)
	require.Contains(t, failed.Error.Message, "stopped answering while it ran attempt 3 of node hog")
	steps := b.steps(t, poison.ID)
	require.Len(t, steps["hog"], 1)
	require.Equal(t, "failed", string(steps["hog"][0].Status))
	require.Equal(t, 3, steps["hog"][0].Attempts, "1 attempt + 2 retries")
	require.Len(t, eventsOf(t, b, poison.ID, engine.EventRetry, "hog"), 2)
	crashes := 1
	for done := false; !done; {
		select {
		case <-deaths:
			crashes++
		default:
			done = true
		}
	}
	require.Equal(t, 3, crashes, "the node ran once per attempt, crashing its worker each time")
}

// TestFaultDatabaseRestarts: the database (a server of the test's own)
// stops mid-run and starts again. The server's /readyz says 503 while it
// is down and 200 after; workers and the server's own worker reconnect,
// and the runs complete, each node run once.
func TestFaultDatabaseRestarts(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewServer(t)
	b := setupAt(t, pg.URL(), 0)
	const chain = `version: 1
name: chain
nodes:
  - {id: n1, type: shell, command: [sleep, "0.2"]}
  - {id: n2, type: shell, command: [sleep, "0.2"]}
  - {id: n3, type: shell, command: [sleep, "0.2"]}
  - {id: n4, type: shell, command: [sleep, "0.2"]}
  - {id: n5, type: shell, command: [sleep, "0.2"]}
  - {id: n6, type: shell, command: [sleep, "0.2"]}
edges:
  - {from: n1, to: n2}
  - {from: n2, to: n3}
  - {from: n3, to: n4}
  - {from: n4, to: n5}
  - {from: n5, to: n6}
`

	worker := startWorker(t, pg.URL(), "--rescue-after", "30s")
	addr := freeAddr(t)
	flows := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(flows, "chain.yaml"), []byte(chain), 0o600))
	server := startSkein(t, "serve", "--db", pg.URL(), "--queue", "--worker", "--no-auth", "--addr", addr,
		"--workflows", flows, "--dir", t.TempDir())
	ready := func() int {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	require.Eventually(t, func() bool { return ready() == http.StatusOK }, 30*time.Second, 20*time.Millisecond, "the server never got ready")

	var ids []string
	for range 3 {
		ids = append(ids, b.start(t, chain, nil).ID)
	}
	// One through the API: the server follows it across the outage.
	resp, err := http.Post("http://"+addr+"/api/workflows/chain/runs", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	var doc struct {
		ID string `json:"execution_id"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	_ = resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	ids = append(ids, doc.ID)
	// Mid-run: every run has a node done, none has ended.
	require.Eventually(t, func() bool {
		for _, id := range ids {
			if s := b.steps(t, id); len(s["n1"]) == 0 || s["n1"][0].Status != "success" {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond)

	pg.Stop(t)
	require.Eventually(t, func() bool { return ready() == http.StatusServiceUnavailable }, 60*time.Second, 20*time.Millisecond,
		"/readyz did not say the server is not ready while the database is down")
	for _, p := range []*proc{worker, server} {
		require.Eventually(t, func() bool { return strings.Contains(p.out.String(), "lost the database; reconnecting") },
			10*time.Second, 10*time.Millisecond, "the worker did not notice the database went away")
	}
	pg.Start(t)
	require.Eventually(t, func() bool { return ready() == http.StatusOK }, 30*time.Second, 20*time.Millisecond,
		"/readyz did not say ready again once the database was back")

	for _, id := range ids {
		var run *store.Run
		require.Eventually(t, func() bool {
			r, err := b.st.Run(context.Background(), id)
			run = r
			return err == nil && (r.Status == "completed" || r.Status == "failed" || r.Status == "cancelled")
		}, 60*time.Second, 20*time.Millisecond, "run %s did not end after the database came back", id)
		require.Equal(t, "completed", string(run.Status), "%v", run.Error)
		steps := b.steps(t, id)
		for i := 1; i <= 6; i++ {
			n := fmt.Sprintf("n%d", i)
			require.Len(t, steps[n], 1, n)
			require.Equal(t, 1, steps[n][0].Attempts, "%s ran once: the outage was shorter than the workers' lease", n)
		}
	}
	for _, p := range []*proc{worker, server} {
		require.Eventually(t, func() bool { return strings.Contains(p.out.String(), "reconnected to the database") },
			10*time.Second, 10*time.Millisecond)
	}
	require.Eventually(t, func() bool {
		return strings.Contains(server.out.String(), `"msg":"run ended","run":"`+doc.ID+`","workflow":"chain","status":"completed"`)
	}, 60*time.Second, 10*time.Millisecond, "the server did not follow its run to the end")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// ledger is the outside service of TestFaultNetworkCut: it counts the
// calls of each Idempotency-Key (the side effects of each node) and holds
// the calls to /held until released.
type ledger struct {
	*httptest.Server
	mu       sync.Mutex
	calls    map[string]int
	held     chan string // a call to /held arrived
	answered chan string // a call to /held was answered
	release  chan struct{}
	// Release answers the held calls.
	Release func()
}

func newLedger(t *testing.T) *ledger {
	l := &ledger{calls: map[string]int{}, held: make(chan string, 64), answered: make(chan string, 64), release: make(chan struct{})}
	count := func(r *http.Request) {
		l.mu.Lock()
		l.calls[r.Header.Get("Idempotency-Key")]++
		l.mu.Unlock()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/call", func(w http.ResponseWriter, r *http.Request) {
		count(r)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok": true}`)
	})
	mux.HandleFunc("/held", func(w http.ResponseWriter, r *http.Request) {
		count(r)
		key := r.Header.Get("Idempotency-Key")
		l.held <- key
		select {
		case <-l.release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok": true}`)
		w.(http.Flusher).Flush()
		l.answered <- key
	})
	l.Server = httptest.NewServer(mux)
	t.Cleanup(l.Close)
	open := sync.OnceFunc(func() { close(l.release) })
	l.Release = open
	t.Cleanup(open) // before Close: held calls return
	return l
}

// Calls is how often each key was called.
func (l *ledger) Calls() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.calls))
	for k, n := range l.calls {
		out[k] = n
	}
	return out
}

// TestFaultNetworkCut: the network between the workers and Postgres is
// cut (a proxy drops every byte, answers nothing and holds new
// connections) for twice the workers' lease, while each run has a node
// whose side effect completes during the cut. Once the network is back,
// every run completes and no side effect ran twice: the nodes done before
// the cut are not run again, and the ones that finished during it are
// recorded, not run again.
func TestFaultNetworkCut(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	proxy, via := b.proxied(t)
	const lease = time.Second
	for range 2 {
		startWorker(t, via, "--rescue-after", lease.String())
	}
	svc := newLedger(t)
	const runs = 4
	var ids []string
	for range runs {
		ids = append(ids, b.start(t, fmt.Sprintf(`version: 1
name: cut
nodes:
  - {id: before, type: http, method: POST, url: "%[1]s/call", retries: 2, retry_backoff: 0s}
  - {id: during, type: http, method: POST, url: "%[1]s/held", retries: 2, retry_backoff: 0s}
  - {id: after, type: http, method: POST, url: "%[1]s/call", retries: 2, retry_backoff: 0s}
edges:
  - {from: before, to: during}
  - {from: during, to: after}
`, svc.URL), nil).ID)
	}
	for range runs {
		recv(t, svc.held, "a run's node that is held")
	}

	proxy.Cut()
	svc.Release()
	for range runs {
		recv(t, svc.answered, "the answer to a held node, during the cut")
	}
	// The cut lasts until the lease of every worker that registered ran
	// out twice over, by the database's clock (on a loaded machine a worker
	// may not have registered before the cut; it cannot during it).
	require.Eventually(t, func() bool {
		var late, all int
		require.NoError(t, b.st.Pool().QueryRow(context.Background(), `SELECT
			count(*) FILTER (WHERE seen_at < now() - 2 * lease_ms::float8 * interval '1 millisecond'), count(*)
			FROM skein_queue_workers`).Scan(&late, &all))
		return all > 0 && late == all
	}, time.Minute, 20*time.Millisecond, "the workers' leases did not run out during the cut")
	proxy.Restore()

	for _, id := range ids {
		done := b.wait(t, id)
		require.Equal(t, "completed", string(done.Status), "%v", done.Error)
		steps := b.steps(t, id)
		for _, n := range []string{"before", "during", "after"} {
			require.Len(t, steps[n], 1, n)
			require.Equal(t, "success", string(steps[n][0].Status), n)
			require.Equal(t, 1, steps[n][0].Attempts, "%s of run %s ran once", n, id)
		}
	}
	calls := svc.Calls()
	require.Len(t, calls, 3*runs, "one key per node of each run: %v", calls)
	for key, n := range calls {
		require.Equal(t, 1, n, "the side effect of %s ran %d times", key, n)
	}
}

// TestFaultCommitAnswerLost: the connection breaks after the COMMIT of
// the transaction that recorded a node and took the next one by local
// continuation reached the database, before its answer came back. The
// worker learns that the COMMIT went through and runs the node it took:
// the run completes, each node run once, none counted lost.
func TestFaultCommitAnswerLost(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	proxy, via := b.proxied(t)
	// The answer lost is the COMMIT's (its CommandComplete message) on the
	// first connection that takes a job (the statement's text is sent the
	// first time a connection prepares it).
	lost := proxy.LoseAnswer([]byte(queue.TakeSQL), []byte("COMMIT\x00"))
	worker := startWorker(t, via)
	run := b.start(t, `version: 1
name: lost-answer
nodes:
  - {id: n1, type: shell, command: [echo, one]}
  - {id: n2, type: shell, command: [echo, two]}
  - {id: n3, type: shell, command: [echo, three]}
edges:
  - {from: n1, to: n2}
  - {from: n2, to: n3}
`, nil)
	done := b.wait(t, run.ID)
	recv(t, lost, "the COMMIT's answer lost")
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	steps := b.steps(t, run.ID)
	for _, n := range []string{"n1", "n2", "n3"} {
		require.Len(t, steps[n], 1, n)
		require.Equal(t, "success", string(steps[n][0].Status), n)
		require.Equal(t, 1, steps[n][0].Attempts, "%s ran once", n)
	}
	require.Contains(t, worker.out.String(), "a COMMIT that did not answer went through")
}

// TestFaultStartAnswerLost: the connection breaks after the COMMIT of a
// run's start reached the database, before its answer came back. The
// starter learns that the COMMIT went through: the start succeeds, with
// one run, which a worker completes (told it failed, its caller would
// start the run again, a second one).
func TestFaultStartAnswerLost(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	proxy, via := b.proxied(t)
	st, err := postgres.Open(context.Background(), via)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	logs := &output{}
	starter, err := queue.New(queue.Config{Store: st, Registry: b.reg, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	// The answer lost is the COMMIT's of the first transaction on a
	// connection that inserts a run (the statement's text is sent the
	// first time a connection prepares it).
	lost := proxy.LoseAnswer([]byte("INSERT INTO runs (id, "), []byte("COMMIT\x00"))
	src := `version: 1
name: start-lost
nodes:
  - {id: a, type: shell, command: [echo, one]}
`
	file := filepath.Join(t.TempDir(), "flow.yaml")
	require.NoError(t, os.WriteFile(file, []byte(src), 0o600))
	w, ds := workflow.Load(file, b.reg)
	require.False(t, ds.HasErrors(), "%v", ds)
	run, err := starter.Start(context.Background(), queue.StartRequest{RunID: "start-lost", Workflow: w, Source: []byte(src)})
	require.NoError(t, err, "the start went through; its caller is told so")
	recv(t, lost, "the COMMIT's answer lost")
	require.Contains(t, logs.String(), "a COMMIT that did not answer went through")
	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	runs, err := b.st.ListRuns(context.Background(), store.RunFilter{Workflow: "start-lost"})
	require.NoError(t, err)
	require.Len(t, runs, 1, "one run")
	require.Len(t, b.steps(t, run.ID)["a"], 1)
}

// proxied starts a fault proxy to the bundle's database and returns it
// with the database's URL through it.
func (b *bundle) proxied(t *testing.T) (*faultproxy.Proxy, string) {
	t.Helper()
	u, err := url.Parse(b.url)
	require.NoError(t, err)
	proxy := faultproxy.New(t, u.Host)
	u.Host = proxy.Addr()
	return proxy, u.String()
}

// steadyFlow is a run that a worker still serving runs completes.
const steadyFlow = `version: 1
name: steady
nodes:
  - {id: a, type: set, values: {n: 1}}
  - {id: b, type: set, values: {n: "{{ a.n + 1 }}"}}
edges:
  - {from: a, to: b}
`

// completes waits for a run of steadyFlow and checks it completed.
func (b *bundle) completes(t *testing.T, id string) *store.Run {
	t.Helper()
	done := b.wait(t, id)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	require.EqualValues(t, 2, b.steps(t, id)["b"][0].Output["n"])
	return done
}

// faultyMCP is the command of the misbehaving MCP server of internal/mcp's
// tests (node and a script of its own, no packages). Without node the test
// is skipped, or fails when CI=true.
func faultyMCP(t *testing.T) (nodeBin, script string) {
	t.Helper()
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not in PATH: the MCP fault tests need Node.js")
		}
		t.Skip("node is not in PATH")
	}
	script, err = filepath.Abs("../mcp/testdata/faulty.js")
	require.NoError(t, err)
	return nodeBin, script
}

// TestFaultHungMCPServer: an MCP server on a worker that never answers —
// a tool call, or its handshake — fails its node when the node's timeout
// runs out, with code timeout; the worker serves other runs meanwhile and
// after.
func TestFaultHungMCPServer(t *testing.T) {
	t.Parallel()
	nodeBin, script := faultyMCP(t)
	cases := []struct {
		name, flag, tool, message string
	}{
		{name: "a tool call", tool: "hang", message: `tools/call "hang" did not finish`},
		{name: "the handshake", flag: "--hang-at-start", tool: "echo", message: `MCP server "faulty": gave up waiting for it to start`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, 0)
			worker := startWorker(t, b.url)
			args := fmt.Sprintf("[%q]", script)
			if tc.flag != "" {
				args = fmt.Sprintf("[%q, %q]", script, tc.flag)
			}
			hung := b.start(t, fmt.Sprintf(`version: 1
name: hung
mcp_servers:
  faulty: {command: %q, args: %s}
nodes:
  - {id: call, type: mcp, server: faulty, tool: %s, arguments: {message: hi}, timeout: 3s}
`, nodeBin, args, tc.tool), nil)
			require.Eventually(t, func() bool {
				return len(eventsOf(t, b, hung.ID, engine.EventNodeStarted, "call")) == 1
			}, 30*time.Second, 10*time.Millisecond, "the node did not start")
			meanwhile := b.start(t, steadyFlow, nil)
			b.completes(t, meanwhile.ID)

			failed := b.wait(t, hung.ID)
			require.Equal(t, "failed", string(failed.Status))
			step := b.steps(t, hung.ID)["call"][0]
			require.Equal(t, "failed", string(step.Status))
			require.NotNil(t, step.Error)
			require.Equal(t, "timeout", step.Error.Code, "%v", step.Error)
			require.Equal(t, node.CategoryTimeout, step.Error.Category)
			require.Contains(t, step.Error.Message, tc.message)
			require.GreaterOrEqual(t, step.FinishedAt.Sub(*step.StartedAt), 3*time.Second, "the node ran its whole timeout")

			b.completes(t, b.start(t, steadyFlow, nil).ID)
			select {
			case <-worker.done:
				t.Fatal("the worker died")
			default:
			}
		})
	}
}

// TestFaultMemoryBudget: a node whose expression would build more than an
// evaluation may (expr's budgets: MemoryBudget elements, ByteBudget bytes
// of strings) fails with its budget error, without taking the worker's
// memory; the worker serves the next run.
func TestFaultMemoryBudget(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, expr, message string
	}{
		{name: "elements", expr: "map(1..100000000, #)", message: "memory budget exceeded: the expression built more than 1000000 elements"},
		{name: "bytes", expr: `repeat(repeat("x", 1000), 1000000)`, message: "memory budget exceeded: repeat() would take the bytes this evaluation built past 33554432"},
		{name: "doubling", expr: `reduce(1..64, #acc + #acc, "x")`, message: "memory budget exceeded: a string concatenation (+)"},
	}
	b := setup(t, 0)
	worker := startWorker(t, b.url)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hog := b.start(t, fmt.Sprintf(`version: 1
name: hog
nodes:
  - {id: hog, type: set, values: {big: %q}}
`, "{{ "+tc.expr+" }}"), nil)
			failed := b.wait(t, hog.ID)
			require.Equal(t, "failed", string(failed.Status))
			step := b.steps(t, hog.ID)["hog"][0]
			require.Equal(t, "failed", string(step.Status))
			require.NotNil(t, step.Error)
			t.Logf("%s/%s: %s", step.Error.Category, step.Error.Code, step.Error.Message)
			require.Contains(t, step.Error.Message, tc.message)
			require.Contains(t, step.Error.Message, "parameter values (line 4)")
			b.completes(t, b.start(t, steadyFlow, nil).ID)
		})
	}
	select {
	case <-worker.done:
		t.Fatal("the worker died")
	default:
	}
}

// ranOn returns the worker that ran (or runs) the first step of node in
// run runID.
func (b *bundle) ranOn(t *testing.T, runID, node string) string {
	t.Helper()
	steps := b.steps(t, runID)[node]
	require.NotEmpty(t, steps, "node %s has no step", node)
	require.NotNil(t, steps[0].RanOn, "node %s ran nowhere", node)
	return steps[0].RanOn.Worker
}
