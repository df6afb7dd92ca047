package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/skeinhq/skein/internal/schedule"
)

// copyDir copies a testdata folder of workflows to a folder of the test's.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644))
	}
	return dst
}

// eventually polls cond (another process's doing) for at most d.
func (s *served) eventually(what string, d time.Duration, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s did not happen within %s:\n%s", what, d, s.log())
		}
		time.Sleep(20 * time.Millisecond) // polling a real process: nothing to wait on
	}
}

// logged returns the server's log entries with the message.
func (s *served) logged(msg string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range s.logs {
		if l["msg"] == msg {
			out = append(out, l)
		}
	}
	return out
}

// TestKillNineTakeover is acceptance 6: the server is killed (SIGKILL)
// while a run's second node runs; the next server on the folder takes the
// run over by itself and finishes it, and the node that completed before
// is not run again.
func TestKillNineTakeover(t *testing.T) {
	t.Parallel()
	s := serve(t, serveOpts{})
	log, marker := filepath.Join(s.tmp, "log"), filepath.Join(s.tmp, "marker")
	id := s.start("gate", map[string]any{"log": log, "marker": marker})
	s.until(id, "wait_marker running", func(doc map[string]any) bool {
		st := step(doc, "wait_marker")
		return st != nil && st["status"] == "running"
	})
	s.stop(syscall.SIGKILL)

	s2 := serve(t, serveOpts{dir: s.dir, flows: s.flows})
	s2.until(id, "taken over", func(doc map[string]any) bool {
		return doc["generation"] == float64(2) && doc["status"] == "running"
	})
	p := s2.admin("POST", "/api/runs/"+id+"/resume", nil, http.StatusConflict)
	require.Equal(t, "run_owned", p["code"], "the new server owns it")
	require.NoError(t, os.WriteFile(marker, nil, 0o644))
	doc := s2.ended(id)
	require.Equal(t, "completed", doc["status"])
	require.Equal(t, "passed", doc["outputs"].(map[string]any)["text"])
	require.Equal(t, true, step(doc, "count")["cached"], "the completed step is reused")
	require.Equal(t, false, step(doc, "wait_marker")["cached"], "the step that was running runs again")
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Equal(t, "ran\n", string(data), "count ran once in all")
	require.Len(t, s2.logged("run taken over"), 1)

	m := s2.do("GET", "/metrics", s2.token, nil)
	require.Equal(t, http.StatusOK, m.status)
	require.Contains(t, string(m.body), `skein_takeovers_total{outcome="resumed"} 1`)
	require.Equal(t, http.StatusUnauthorized, s2.do("GET", "/metrics", "", nil).status, "deny by default")
}

// TestScheduleAcrossRestart is acceptance 4 with the real binary and the
// wall clock: a schedule firing every second for ten seconds, the server
// restarted in the middle. Each fire time has one run at most, and every
// second of the span either has its run or was reported missed (while no
// server ran) — none doubled, none lost silently.
func TestScheduleAcrossRestart(t *testing.T) {
	t.Parallel()
	flows := copyDir(t, "testdata/schedflows")
	s := serve(t, serveOpts{flows: flows})
	runs := func(srv *served) []map[string]any {
		page := srv.admin("GET", "/api/runs?workflow=tick&limit=500", nil, http.StatusOK)
		var out []map[string]any
		for _, r := range page["runs"].([]any) {
			out = append(out, r.(map[string]any))
		}
		return out
	}
	s.eventually("four fires", 30*time.Second, func() bool { return len(runs(s)) >= 4 })
	require.Equal(t, 0, s.stop(syscall.SIGTERM), s.log())

	s2 := serve(t, serveOpts{dir: s.dir, flows: flows})
	var ats []time.Time
	s2.eventually("fires over ten seconds", 60*time.Second, func() bool {
		ats = ats[:0]
		for _, r := range runs(s2) {
			doc := s2.admin("GET", "/api/runs/"+r["execution_id"].(string), nil, http.StatusOK)
			trig := step(doc, "every")
			if trig == nil {
				return false // just recorded: its trigger step comes next
			}
			at, err := time.Parse(time.RFC3339, trig["output"].(map[string]any)["scheduled_at"].(string))
			require.NoError(t, err)
			require.Equal(t, schedule.RunID("tick", "every", at), r["execution_id"], "a fire's run id is derived from it")
			ats = append(ats, at)
		}
		sort.Slice(ats, func(i, j int) bool { return ats[i].Before(ats[j]) })
		return len(ats) > 1 && ats[len(ats)-1].Sub(ats[0]) >= 10*time.Second
	})
	sched := s2.admin("GET", "/api/schedules", nil, http.StatusOK)["schedules"].([]any)
	require.Len(t, sched, 1)
	sc := sched[0].(map[string]any)
	require.Equal(t, "@every 1s", sc["cron"])
	require.NotEmpty(t, sc["last_run_id"])
	metrics := string(s2.do("GET", "/metrics", s2.token, nil).body)
	require.Equal(t, 0, s2.stop(syscall.SIGTERM), s2.log())

	lost := 0
	for i := 1; i < len(ats); i++ {
		gap := ats[i].Sub(ats[i-1])
		require.Positive(t, gap, "fire %s twice", ats[i])
		require.Zero(t, gap%time.Second, "fires on whole seconds")
		lost += int(gap/time.Second) - 1
	}
	missed := 0
	for _, srv := range []*served{s, s2} {
		for _, l := range srv.logged("schedule missed fire times") {
			latest, err := time.Parse(time.RFC3339Nano, l["latest"].(string))
			require.NoError(t, err)
			if !latest.After(ats[len(ats)-1]) { // of the fires counted
				missed += int(l["missed"].(float64))
			}
		}
		require.Empty(t, srv.logged("schedule could not start a run"))
	}
	t.Logf("fires %d over %s, lost %d, missed %d", len(ats), ats[len(ats)-1].Sub(ats[0]), lost, missed)
	require.Equal(t, lost, missed, "every second without a run was reported missed:\n%s\n%s", s.log(), s2.log())
	require.Contains(t, metrics, `skein_runs_started_total{source="schedule",workflow="tick"}`)
	require.True(t, strings.Contains(metrics, `skein_schedule_fires_total{outcome="fired",trigger="every",workflow="tick"}`), metrics)
}

// TestTracesOverOTLP: with OTEL_EXPORTER_OTLP_ENDPOINT set, skein serve
// sends a span per run and per node by OTLP/HTTP (here to a collector the
// test plays), at the latest when it shuts down.
func TestTracesOverOTLP(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var spans []*tracepb.Span
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.URL.Path != "/v1/traces" {
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil)
	}))
	defer collector.Close()

	s := serve(t, serveOpts{env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL}})
	id := s.start("quick", map[string]any{"who": "Ada"})
	require.Equal(t, "completed", s.ended(id)["status"])
	require.Equal(t, 0, s.stop(syscall.SIGTERM), s.log())

	mu.Lock()
	defer mu.Unlock()
	var names []string
	var run *tracepb.Span
	for _, sp := range spans {
		names = append(names, sp.Name)
		if sp.Name == "run quick" {
			run = sp
		}
	}
	require.NotNil(t, run, "a span for the run: %v", names)
	children := 0
	for _, sp := range spans {
		if string(sp.ParentSpanId) == string(run.SpanId) {
			children++
			require.Contains(t, []string{"node start", "node greet"}, sp.Name)
		}
	}
	require.Equal(t, 2, children, "a span per node: %v", names)
}

// TestMetricsAddr: with --metrics-addr, GET /metrics answers there without
// a token, and only /metrics does; on --addr it still needs one.
func TestMetricsAddr(t *testing.T) {
	t.Parallel()
	s := serve(t, serveOpts{args: []string{"--metrics-addr", "127.0.0.1:0"}})
	s.ended(s.start("quick", nil))
	lines := s.logged("serving metrics without a token (--metrics-addr)")
	require.Len(t, lines, 1)
	addr := lines[0]["addr"].(string)

	res, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, string(body), `skein_runs_started_total{source="api",workflow="quick"} 1`)

	res, err = http.Get("http://" + addr + "/api/runs")
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusNotFound, res.StatusCode, "the metrics address serves nothing but /metrics")

	require.Equal(t, http.StatusUnauthorized, s.do("GET", "/metrics", "", nil).status, "on --addr, /metrics needs a token")
	require.Equal(t, http.StatusOK, s.do("GET", "/metrics", s.token, nil).status)
}
