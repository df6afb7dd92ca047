package queue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
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
		if out, err := exec.Command("go", "build", "-o", binPath, "../../cmd/skein").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
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

	// The paused worker comes back and gets its answer: it tries to
	// record the first attempt while the run still runs.
	paused.signal(t, syscall.SIGCONT)
	svc.answerFirst()
	require.Eventually(t, func() bool {
		return strings.Contains(paused.out.String(), "dropped a stale result")
	}, 30*time.Second, 10*time.Millisecond, "the resumed worker did not report its stale result")
	svc.answerAfter()

	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	steps := b.steps(t, run.ID)
	require.Len(t, steps["call"], 1, "one step")
	require.Equal(t, "success", string(steps["call"][0].Status))
	require.Equal(t, 2, steps["call"][0].Attempts)
	require.EqualValues(t, 2, steps["call"][0].Output["body"].(map[string]any)["call"], "the step holds the second attempt's result")
	finished := eventsOf(t, b, run.ID, engine.EventNodeFinished, "call")
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
