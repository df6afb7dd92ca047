package queue_test

import (
	"bytes"
	"context"
	"fmt"
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
	"github.com/skeinhq/skein/internal/store"
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
	require.Equal(t, "completed", done.Status, "%v", done.Error)
	keys := svc.Keys()
	require.Len(t, keys, 2, "the service was called once per attempt")
	require.Equal(t, keys[0], keys[1], "the second attempt sent the same idempotency key")
	require.Equal(t, run.ID+"/call/1", keys[0])
	steps := b.steps(t, run.ID)
	require.Len(t, steps["call"], 1)
	require.Equal(t, "success", steps["call"][0].Status)
	require.Equal(t, 2, steps["call"][0].Attempts)
	require.EqualValues(t, 2, steps["call"][0].Output["body"].(map[string]any)["call"])
	retries := eventsOf(t, b, run.ID, engine.EventRetry, "call")
	require.Len(t, retries, 1)
	require.EqualValues(t, 2, retries[0].Data["attempt"])
	require.Contains(t, retries[0].Data["error"], "stopped answering while it ran attempt 1 of node call")
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
	require.Equal(t, "completed", done.Status, "%v", done.Error)
	steps := b.steps(t, run.ID)
	require.Len(t, steps["call"], 1, "one step")
	require.Equal(t, "success", steps["call"][0].Status)
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
