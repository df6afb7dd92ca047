package main_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"io"
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

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
)

var deliverySecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("the delivery secret of the cmd.."))

// downReceiver takes deliveries, checking their signatures: it answers 503
// until up is set, then 204.
type downReceiver struct {
	t        *testing.T
	mu       sync.Mutex
	up       bool
	upAfter  int // when > 0: up from the attempt after this many
	ids      []string
	statuses []int
	bodies   []map[string]any
}

func (rc *downReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	wh, err := standardwebhooks.NewWebhook(deliverySecret)
	require.NoError(rc.t, err)
	require.NoError(rc.t, wh.Verify(data, r.Header), "the delivery is signed")
	var body map[string]any
	require.NoError(rc.t, json.Unmarshal(data, &body))
	rc.mu.Lock()
	defer rc.mu.Unlock()
	status := http.StatusServiceUnavailable
	if rc.up || (rc.upAfter > 0 && len(rc.statuses) >= rc.upAfter) {
		status = http.StatusNoContent
	}
	rc.ids = append(rc.ids, r.Header.Get("webhook-id"))
	rc.statuses = append(rc.statuses, status)
	rc.bodies = append(rc.bodies, body)
	w.WriteHeader(status)
}

func (rc *downReceiver) seen() (ids []string, statuses []int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.ids...), append([]int(nil), rc.statuses...)
}

// serveWithEnv starts `skein serve` with env added and args on a free
// loopback port; it returns its URL and process (SIGTERM at the test's end).
func serveWithEnv(t *testing.T, env []string, args ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--no-auth"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	cmd.Stdout = io.Discard
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		var line struct{ Msg, URL string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return line.URL, cmd
		}
	}
	t.Fatalf("skein serve did not say where it listens")
	return "", nil
}

const deliveredWorkflow = `version: 1
name: delivered
secrets: [DELIVERY_SECRET, TOKEN]
delivery:
  url: RECEIVER
  secret: "{{ secrets.DELIVERY_SECRET }}"
  retries: 10
  retry_backoff: 300ms
nodes:
  - {id: a, type: template, text: "token {{ secrets.TOKEN }}"}
outputs:
  said: "{{ a.text }}"
`

// runEvents returns the events of a run (skein runs events) with args
// naming the store (--dir or --db).
func runEvents(t *testing.T, id string, args ...string) []map[string]any {
	t.Helper()
	p := run(t, append([]string{"runs", "events", id}, args...)...)
	require.Equal(t, 0, p.code, p.stderr)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(p.stdout), "\n") {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		out = append(out, ev)
	}
	return out
}

// TestDeliverySurvivesAKill: a delivery whose receiver is down is
// retried; the process delivering it (skein serve, or skein run) is killed
// (SIGKILL) between two attempts; a new `skein serve` on the same folder
// goes on with it — the attempt count goes on, the webhook-id is the same
// — and the receiver, once up, takes it once.
func TestDeliverySurvivesAKill(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"serve", "run"} {
		t.Run(by, func(t *testing.T) {
			t.Parallel()
			rc := &downReceiver{t: t}
			recv := httptest.NewServer(rc)
			t.Cleanup(recv.Close)
			dir, wfs := t.TempDir(), t.TempDir()
			file := filepath.Join(wfs, "delivered.yaml")
			require.NoError(t, os.WriteFile(file, []byte(strings.Replace(deliveredWorkflow, "RECEIVER", recv.URL, 1)), 0o644))
			env := []string{"DELIVERY_SECRET=" + deliverySecret, "TOKEN=tok-very-secret"}

			var first *exec.Cmd
			if by == "serve" {
				var base string
				base, first = serveWithEnv(t, env, "--dir", dir, "--workflows", wfs)
				resp, err := http.Post(base+"/api/workflows/delivered/runs", "application/json", strings.NewReader(`{}`))
				require.NoError(t, err)
				_ = resp.Body.Close()
				require.Equal(t, http.StatusAccepted, resp.StatusCode)
			} else {
				first = exec.Command(bin, "run", "--dir", dir, file)
				first.Env = append(os.Environ(), env...)
				first.Stdout, first.Stderr = io.Discard, io.Discard
				require.NoError(t, first.Start())
				t.Cleanup(func() { _ = first.Process.Kill(); _ = first.Wait() })
			}
			eventually(t, 30*time.Second, func() bool { _, st := rc.seen(); return len(st) >= 1 }, "the receiver saw no attempt")
			ids, _ := rc.seen()
			id := strings.TrimSuffix(strings.TrimPrefix(ids[0], "skein_"), "_1")
			attemptsOf := func(evs []map[string]any) int {
				n := 0
				for _, ev := range evs {
					if ev["type"] == "delivery_attempt" {
						n++
					}
				}
				return n
			}
			// Killed once two attempts are on record (an attempt in flight
			// at the kill may reach the receiver without being recorded).
			eventually(t, 30*time.Second, func() bool { return attemptsOf(runEvents(t, id, "--dir", dir)) >= 2 }, "no retry was recorded")
			require.NoError(t, first.Process.Signal(syscall.SIGKILL))
			_ = first.Wait()
			recorded := attemptsOf(runEvents(t, id, "--dir", dir))
			rc.mu.Lock()
			rc.up = true
			rc.mu.Unlock()

			serveWithEnv(t, env, "--dir", dir, "--workflows", wfs)
			var evs []map[string]any
			eventually(t, 60*time.Second, func() bool {
				evs = runEvents(t, id, "--dir", dir)
				return len(evs) > 0 && evs[len(evs)-1]["type"] == "delivery_succeeded"
			}, "the new server did not deliver run %s", id)

			ids, statuses := rc.seen()
			require.Equal(t, 1, countOf(statuses, http.StatusNoContent), "one success: %v", statuses)
			require.Equal(t, http.StatusNoContent, statuses[len(statuses)-1])
			for _, got := range ids {
				require.Equal(t, "skein_"+id+"_1", got, "one webhook-id across the attempts of both processes")
			}
			rc.mu.Lock()
			data := rc.bodies[len(rc.bodies)-1]["data"].(map[string]any)
			rc.mu.Unlock()
			require.Equal(t, map[string]any{"said": "token ***"}, data["outputs"], "secret values are masked")

			var attempts []float64
			for _, ev := range evs {
				if ev["type"] == "delivery_attempt" {
					attempts = append(attempts, ev["data"].(map[string]any)["attempt"].(float64))
				}
				require.NotContains(t, mustJSON(t, ev), "tok-very-secret")
			}
			require.GreaterOrEqual(t, len(attempts), recorded+1, "the new server made attempts of its own")
			require.LessOrEqual(t, len(statuses), len(attempts)+1, "at most one attempt went unrecorded: the one in flight at the kill")
			for i, n := range attempts {
				require.EqualValues(t, i+1, n, "the attempts count on across the kill: %v", attempts)
			}
			last := evs[len(evs)-1]["data"].(map[string]any)
			require.EqualValues(t, len(attempts), last["attempts"])
		})
	}
}

// TestQueuedRunDelivers: a run on the queue (skein run --queue, its nodes
// run by a `skein worker`) delivers its result when it ends: the worker
// that records its end queues the delivery, a worker makes it and, the
// receiver down at first, retries it; the receiver takes it once.
func TestQueuedRunDelivers(t *testing.T) {
	t.Parallel()
	rc := &downReceiver{t: t, upAfter: 1}
	recv := httptest.NewServer(rc)
	t.Cleanup(recv.Close)
	db := pgURL(t)
	mig := run(t, "migrate", "--db", db)
	require.Equal(t, 0, mig.code, mig.stderr)
	file := filepath.Join(t.TempDir(), "delivered.yaml")
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(deliveredWorkflow, "RECEIVER", recv.URL, 1)), 0o644))
	env := []string{"DELIVERY_SECRET=" + deliverySecret, "TOKEN=tok-very-secret"}

	wk := exec.Command(bin, "worker", "--db", db, "--dir", t.TempDir())
	wk.Env = append(os.Environ(), env...)
	out := &syncBuffer{}
	wk.Stdout, wk.Stderr = out, out
	require.NoError(t, wk.Start())
	t.Cleanup(func() { _ = wk.Process.Signal(syscall.SIGTERM); _ = wk.Wait() })

	cmd := exec.Command(bin, "run", "--db", db, "--queue", "--dir", t.TempDir(), "--output", "json", file)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.Output()
	require.NoError(t, err, string(stdout))
	var doc struct {
		ID     string `json:"execution_id"`
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal(stdout, &doc), string(stdout))
	require.Equal(t, "completed", string(doc.Status))

	var evs []map[string]any
	eventually(t, 60*time.Second, func() bool {
		evs = runEvents(t, doc.ID, "--db", db)
		return len(evs) > 0 && (evs[len(evs)-1]["type"] == "delivery_succeeded" || evs[len(evs)-1]["type"] == "delivery_failed")
	}, "the queued run %s was not delivered:\n%s", doc.ID, out)
	require.Equal(t, "delivery_succeeded", evs[len(evs)-1]["type"])
	ids, statuses := rc.seen()
	require.Equal(t, []int{http.StatusServiceUnavailable, http.StatusNoContent}, statuses, "a 503, then the retry")
	for _, got := range ids {
		require.Equal(t, "skein_"+doc.ID+"_1", got, "one webhook-id across attempts")
	}
	rc.mu.Lock()
	data := rc.bodies[1]["data"].(map[string]any)
	rc.mu.Unlock()
	require.Equal(t, doc.ID, data["execution_id"])
	require.Equal(t, map[string]any{"said": "token ***"}, data["outputs"], "secret values are masked")
	var attempts []float64
	for _, ev := range evs {
		if ev["type"] == "delivery_attempt" {
			attempts = append(attempts, ev["data"].(map[string]any)["attempt"].(float64))
		}
		require.NotContains(t, mustJSON(t, ev), "tok-very-secret")
	}
	require.Equal(t, []float64{1, 2}, attempts)
	// The worker records the success, then forgets what it owed.
	eventually(t, 60*time.Second, func() bool {
		var owed int
		pgQuery(t, db, `SELECT count(*) FROM deliveries`, &owed)
		return owed == 0
	}, "run %s is still owed a delivery once delivered:\n%s", doc.ID, out)
}

// TestQueuedDeliverySurvivesAKilledWorker: the worker that retries a
// queued run's delivery (its receiver down) is killed (SIGKILL) while the
// job waits for its next attempt; another worker goes on with it — the
// attempt count goes on, the webhook-id is the same — and the receiver,
// once up, takes it once.
func TestQueuedDeliverySurvivesAKilledWorker(t *testing.T) {
	t.Parallel()
	rc := &downReceiver{t: t}
	recv := httptest.NewServer(rc)
	t.Cleanup(recv.Close)
	db := pgURL(t)
	mig := run(t, "migrate", "--db", db)
	require.Equal(t, 0, mig.code, mig.stderr)
	file := filepath.Join(t.TempDir(), "delivered.yaml")
	src := strings.Replace(strings.Replace(deliveredWorkflow, "RECEIVER", recv.URL, 1), "retry_backoff: 300ms", "retry_backoff: 2s", 1)
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	env := []string{"DELIVERY_SECRET=" + deliverySecret, "TOKEN=tok-very-secret"}
	startWorker := func() (*exec.Cmd, *syncBuffer) {
		wk := exec.Command(bin, "worker", "--db", db, "--dir", t.TempDir())
		wk.Env = append(os.Environ(), env...)
		out := &syncBuffer{}
		wk.Stdout, wk.Stderr = out, out
		require.NoError(t, wk.Start())
		t.Cleanup(func() { _ = wk.Process.Signal(syscall.SIGTERM); _ = wk.Wait() })
		return wk, out
	}
	first, _ := startWorker()

	cmd := exec.Command(bin, "run", "--db", db, "--queue", "--dir", t.TempDir(), "--output", "json", file)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.Output()
	require.NoError(t, err, string(stdout))
	var doc struct {
		ID string `json:"execution_id"`
	}
	require.NoError(t, json.Unmarshal(stdout, &doc), string(stdout))

	// Killed while its job waits for the next attempt: the first attempt
	// is on record and the job is scheduled again.
	eventually(t, 30*time.Second, func() bool {
		var attempts int
		var state string
		pgQuery(t, db, `SELECT COALESCE((SELECT d.attempts FROM deliveries d), 0),
			COALESCE((SELECT j.state::text FROM river_job j WHERE j.kind = 'skein_delivery'), '')`, &attempts, &state)
		return attempts >= 1 && state == "scheduled"
	}, "the delivery was not retried")
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	_, before := rc.seen()
	rc.mu.Lock()
	rc.up = true
	rc.mu.Unlock()
	_, out := startWorker()

	var evs []map[string]any
	eventually(t, 60*time.Second, func() bool {
		evs = runEvents(t, doc.ID, "--db", db)
		return len(evs) > 0 && evs[len(evs)-1]["type"] == "delivery_succeeded"
	}, "the second worker did not deliver run %s:\n%s", doc.ID, out)
	ids, statuses := rc.seen()
	require.Equal(t, 1, countOf(statuses, http.StatusNoContent), "one success: %v", statuses)
	for _, got := range ids {
		require.Equal(t, "skein_"+doc.ID+"_1", got, "one webhook-id across the attempts of both workers")
	}
	var attempts []float64
	for _, ev := range evs {
		if ev["type"] == "delivery_attempt" {
			attempts = append(attempts, ev["data"].(map[string]any)["attempt"].(float64))
		}
	}
	require.Len(t, attempts, len(before)+1)
	for i, n := range attempts {
		require.EqualValues(t, i+1, n, "the attempts count on across the kill: %v", attempts)
	}
}

func countOf(xs []int, x int) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
