package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// TestServeOnPostgres: skein serve --db postgres://… --local keeps runs, API
// tokens, idempotency keys and signals in Postgres: a run started twice
// with one key is one run, an approval waits across a restart of the
// server and completes with its signal, and the CLI lists what the server
// ran.
func TestServeOnPostgres(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	s := serve(t, serveOpts{args: []string{"--db", db, "--local"}})

	first := s.do("POST", "/api/workflows/quick/runs", s.token, map[string]any{"inputs": map[string]any{"who": "Ada", "n": 1}}, "Idempotency-Key", "order-7")
	require.Equal(t, http.StatusAccepted, first.status, string(first.body))
	again := s.do("POST", "/api/workflows/quick/runs", s.token, map[string]any{"inputs": map[string]any{"who": "Ada", "n": 1}}, "Idempotency-Key", "order-7")
	require.Equal(t, http.StatusOK, again.status, string(again.body))
	quick := first.json(t)["execution_id"].(string)
	require.Equal(t, quick, again.json(t)["execution_id"], "one run for the key")
	require.Equal(t, "completed", s.ended(quick)["status"])

	id := s.start("approval", map[string]any{"text": "ship it"})
	s.until(id, "waiting", func(doc map[string]any) bool { return doc["status"] == "waiting" })
	require.Equal(t, 0, s.stop(syscall.SIGTERM), s.log())

	s2 := serve(t, serveOpts{dir: s.dir, flows: s.flows, args: []string{"--db", db, "--local"}})
	a := s2.do("POST", "/api/runs/"+id+"/signals/approve", s2.token, map[string]any{"by": "Ada"})
	require.Equal(t, http.StatusAccepted, a.status, string(a.body))
	doc := s2.ended(id)
	require.Equal(t, "completed", doc["status"], "%v", doc["error"])
	require.Equal(t, "ship it, approved by Ada", doc["outputs"].(map[string]any)["message"])

	out, err := exec.Command(bin, "runs", "list", "--db", db, "--dir", t.TempDir()).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), quick)
	require.Contains(t, string(out), id)
}

// TestServeQueuedOnPostgres: skein serve --db postgres://… runs no node
// itself (the queue is the default on Postgres): a skein worker process
// runs them; an approval waits on the worker side and completes with the
// signal the API records. The server opens the queue before it listens,
// so its first runs do not wait for it.
func TestServeQueuedOnPostgres(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	s := serve(t, serveOpts{args: []string{"--db", db}})
	s.mu.Lock()
	var opened map[string]any
	for _, line := range s.logs {
		if strings.HasPrefix(fmt.Sprint(line["msg"]), "queue opened") {
			opened = line
		}
	}
	s.mu.Unlock()
	require.NotNil(t, opened, "the queue opened before the server listened:\n%s", s.log())
	require.EqualValues(t, 0, opened["jobs_not_ended"])
	st, err := postgres.Open(t.Context(), db)
	require.NoError(t, err)
	var table *string
	require.NoError(t, st.Pool().QueryRow(t.Context(), `SELECT to_regclass('skein_queue_log')::text`).Scan(&table))
	require.NoError(t, st.Close())
	require.NotNil(t, table, "the queue's tables are made before any run")
	w := exec.Command(bin, "worker", "--db", db, "--dir", t.TempDir())
	var wout bytes.Buffer
	w.Stdout, w.Stderr = &wout, &wout
	require.NoError(t, w.Start())
	t.Cleanup(func() {
		_ = w.Process.Signal(syscall.SIGTERM)
		require.NoError(t, w.Wait(), "the worker exits 0 when it drained:\n%s", wout.String())
	})

	quick := s.start("quick", map[string]any{"who": "Ada", "n": 1})
	done := s.ended(quick)
	require.Equal(t, "completed", done["status"])
	require.Equal(t, "api", done["source"], "a queued run keeps its source")

	id := s.start("approval", map[string]any{"text": "ship it"})
	s.until(id, "its approval step waiting", func(doc map[string]any) bool {
		steps, _ := doc["steps"].([]any)
		for _, st := range steps {
			if m := st.(map[string]any); m["node"] == "approve" && m["status"] == "waiting" {
				return true
			}
		}
		return false
	})
	a := s.do("POST", "/api/runs/"+id+"/signals/approve", s.token, map[string]any{"by": "Ada"})
	require.Equal(t, http.StatusAccepted, a.status, string(a.body))
	doc := s.ended(id)
	require.Equal(t, "completed", doc["status"], "%v", doc["error"])
	require.Equal(t, "ship it, approved by Ada", doc["outputs"].(map[string]any)["message"])
	require.Equal(t, 0, s.stop(syscall.SIGTERM), s.log())
}

// TestWebhookQueuedOnPostgres: a webhook run queued for a worker reads
// the request as `trigger`, as the trigger node's output and as a run on
// SQLite do.
func TestWebhookQueuedOnPostgres(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	flows := hookedFlows(t)
	s := serve(t, serveOpts{flows: flows, args: []string{"--db", db}})
	startWorker(t, db)

	a := s.do("POST", "/hooks/hooked/hook", "", map[string]any{"n": 7}, "Content-Type", "application/json")
	require.Equal(t, http.StatusAccepted, a.status, string(a.body))
	doc := s.ended(a.json(t)["execution_id"].(string))
	require.Equal(t, "completed", doc["status"], "%v", doc["error"])
	read := step(doc, "read")["output"].(map[string]any)
	require.EqualValues(t, 7, read["from_hook"], "the trigger node's output")
	require.EqualValues(t, 7, read["from_trigger"], "`trigger` on the worker")
	require.EqualValues(t, 7, doc["outputs"].(map[string]any)["n"])
	require.Equal(t, "webhook", doc["source"], "a queued run keeps its source")

	// A delivery id makes one run on Postgres too: the same id again is
	// answered 409 delivery_replayed with the first delivery's run.
	first := s.do("POST", "/hooks/hooked/hook", "", map[string]any{"n": 8}, "Content-Type", "application/json", "Idempotency-Key", "order-8")
	require.Equal(t, http.StatusAccepted, first.status, string(first.body))
	again := s.do("POST", "/hooks/hooked/hook", "", map[string]any{"n": 9}, "Content-Type", "application/json", "Idempotency-Key", "order-8")
	require.Equal(t, http.StatusConflict, again.status, string(again.body))
	require.Equal(t, "delivery_replayed", again.json(t)["code"])
	require.Equal(t, first.json(t)["execution_id"], again.json(t)["execution_id"])
	require.EqualValues(t, 8, s.ended(first.json(t)["execution_id"].(string))["outputs"].(map[string]any)["n"], "the first delivery's body")
}

// hookedFlows are the test flows and hooked, a webhook that reads its
// trigger in a set node.
func hookedFlows(t *testing.T) string {
	t.Helper()
	flows := copyFlows(t)
	require.NoError(t, os.WriteFile(filepath.Join(flows, "hooked.yaml"), []byte(`version: 1
name: hooked
nodes:
  - {id: hook, type: trigger.webhook, path: hook, auth: {type: none}}
  - {id: read, type: set, values: {from_trigger: "{{ trigger.body.n }}", from_hook: "{{ hook.body.n }}"}}
edges:
  - {from: hook, to: read}
outputs:
  n: "{{ trigger.body.n }}"
`), 0o644))
	return flows
}

// startWorker starts a skein worker process on db, stopped (and checked to
// drain) when the test ends.
func startWorker(t *testing.T, db string) {
	t.Helper()
	w := exec.Command(bin, "worker", "--db", db, "--dir", t.TempDir())
	var wout bytes.Buffer
	w.Stdout, w.Stderr = &wout, &wout
	require.NoError(t, w.Start())
	t.Cleanup(func() {
		_ = w.Process.Signal(syscall.SIGTERM)
		require.NoError(t, w.Wait(), "the worker exits 0 when it drained:\n%s", wout.String())
	})
}

// queueJobs reads skein_queue_jobs{queue="default",state} from /metrics.
func (s *served) queueJobs(state string) float64 {
	s.t.Helper()
	m := s.do("GET", "/metrics", s.token, nil)
	require.Equal(s.t, http.StatusOK, m.status, string(m.body))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(m.body))
	require.NoError(s.t, err)
	fam := families["skein_queue_jobs"]
	require.NotNil(s.t, fam, "/metrics has skein_queue_jobs:\n%s", m.body)
	for _, metric := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range metric.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["queue"] == "default" && labels["state"] == state {
			return metric.GetGauge().GetValue()
		}
	}
	s.t.Fatalf("/metrics has no skein_queue_jobs{queue=\"default\",state=%q}:\n%s", state, m.body)
	return 0
}

// eventually polls cond (a real process's state: nothing to wait on)
// until it holds, failing after a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within a minute", what)
		}
		time.Sleep(20 * time.Millisecond) // polling another process
	}
}

// TestQueueDepthInMetrics: webhooks accepted on Postgres while no worker
// runs wait in the queue, and /metrics shows them waiting
// (skein_queue_jobs, state available) while the server holds no execution
// for them (they ended "queued"); a worker that starts drains them, and
// the depth falls to 0 as the runs complete.
func TestQueueDepthInMetrics(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	s := serve(t, serveOpts{flows: hookedFlows(t), args: []string{"--db", db}})
	require.Zero(t, s.queueJobs("available"), "no job before any webhook")

	var ids []string
	for n := range 3 {
		a := s.do("POST", "/hooks/hooked/hook", "", map[string]any{"n": n}, "Content-Type", "application/json")
		require.Equal(t, http.StatusAccepted, a.status, string(a.body))
		ids = append(ids, a.json(t)["execution_id"].(string))
	}
	eventually(t, "3 jobs waiting for a worker", func() bool { return s.queueJobs("available") == 3 })
	// The server handed the runs over and holds nothing for them.
	eventually(t, "3 executions ended queued", func() bool {
		return strings.Contains(string(s.do("GET", "/metrics", s.token, nil).body), `skein_runs_finished_total{status="queued",workflow="hooked"} 3`)
	})
	for _, id := range ids {
		require.Equal(t, "running", s.admin("GET", "/api/runs/"+id, nil, http.StatusOK)["status"], "no worker took run %s", id)
	}

	startWorker(t, db)
	for _, id := range ids {
		require.Equal(t, "completed", s.ended(id)["status"])
	}
	eventually(t, "the queue drained", func() bool { return s.queueJobs("available") == 0 && s.queueJobs("running") == 0 })
}
