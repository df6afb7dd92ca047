package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/server"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

// inproc is a server in the test's process, without authentication, with
// an in-memory span exporter and a log the test can wait on.
type inproc struct {
	t     *testing.T
	srv   *server.Server
	r     *runner.Runner
	st    store.Store
	url   string
	flows string
	spans *tracetest.InMemoryExporter
	logs  *logWaiter

	cancel context.CancelFunc
	served chan error
}

type inprocOpts struct {
	// flows is the folder of workflows to serve; default a copy of
	// testdata/flows.
	flows string
	// prepare, when set, may write runs into the store before serving.
	prepare func(st store.Store, flows string)
	// clock is the schedules' clock.
	clock clock.Clock
	// takeoverPoll is Config.TakeoverPoll.
	takeoverPoll time.Duration
}

// newInproc opens a runner on a fresh folder and serves it.
func newInproc(t *testing.T, o inprocOpts) *inproc {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	r, err := runner.Open(runner.Config{Dir: dir, Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	if o.flows == "" {
		o.flows = copyFlows(t)
	}
	p := &inproc{t: t, r: r, st: st, flows: o.flows, spans: tracetest.NewInMemoryExporter(), logs: newLogWaiter()}
	if o.prepare != nil {
		o.prepare(st, p.flows)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(p.spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	p.srv, err = server.New(server.Config{Runner: r, Workflows: p.flows, Tracer: tp, Log: slog.New(p.logs), Grace: 5 * time.Second,
		Clock: o.clock, TakeoverPoll: o.takeoverPoll})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p.url = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.served = cancel, make(chan error, 1)
	go func() { p.served <- p.srv.Serve(ctx, ln) }()
	t.Cleanup(p.stop)
	return p
}

// stop shuts the server down and waits until every execution has ended.
func (p *inproc) stop() {
	if p.cancel == nil {
		return
	}
	p.cancel()
	p.cancel = nil
	require.NoError(p.t, <-p.served)
}

func (p *inproc) do(method, path string, body string) (int, []byte) {
	p.t.Helper()
	req, err := http.NewRequest(method, p.url+path, strings.NewReader(body))
	require.NoError(p.t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(p.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(p.t, err)
	return resp.StatusCode, data
}

func (p *inproc) start(workflow, inputs string) string {
	p.t.Helper()
	status, body := p.do("POST", "/api/workflows/"+workflow+"/runs", `{"inputs": `+inputs+`}`)
	require.Equal(p.t, http.StatusAccepted, status, string(body))
	var doc map[string]any
	require.NoError(p.t, json.Unmarshal(body, &doc))
	return doc["execution_id"].(string)
}

// waitEnd follows the run's events until it ends and returns its status.
func (p *inproc) waitEnd(id string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", p.url+"/api/runs/"+id+"/events", nil)
	require.NoError(p.t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(p.t, err)
	defer resp.Body.Close()
	require.Equal(p.t, http.StatusOK, resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	end := false
	for sc.Scan() {
		line := sc.Text()
		if line == "event: end" {
			end = true
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && end {
			var doc map[string]any
			require.NoError(p.t, json.Unmarshal([]byte(data), &doc))
			return doc["status"].(string)
		}
	}
	p.t.Fatalf("the event stream of run %s ended without an end event", id)
	return ""
}

// metrics scrapes /metrics (through the handler, so also once stopped).
func (p *inproc) metrics() string {
	p.t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Host = "127.0.0.1" // a server without tokens answers its machine's programs
	p.srv.Handler().ServeHTTP(rec, req)
	require.Equal(p.t, http.StatusOK, rec.Code)
	return rec.Body.String()
}

// logWaiter is a slog handler that keeps log lines ("msg key=value …")
// and lets a test wait for one.
type logWaiter struct {
	mu      sync.Mutex
	lines   []string
	waiters []logWait
}

type logWait struct {
	prefix string
	ch     chan struct{}
}

func newLogWaiter() *logWaiter { return &logWaiter{} }

func (l *logWaiter) Enabled(context.Context, slog.Level) bool { return true }
func (l *logWaiter) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logWaiter) WithGroup(string) slog.Handler            { return l }
func (l *logWaiter) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.Key + "=" + a.Value.String()
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	kept := l.waiters[:0]
	for _, w := range l.waiters {
		if strings.HasPrefix(line, w.prefix) {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	l.waiters = kept
	return nil
}

// seen returns a channel closed once a line that begins with prefix is
// logged (at once if one was).
func (l *logWaiter) seen(prefix string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan struct{})
	for _, line := range l.lines {
		if strings.HasPrefix(line, prefix) {
			close(ch)
			return ch
		}
	}
	l.waiters = append(l.waiters, logWait{prefix, ch})
	return ch
}

func (l *logWaiter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// deadPID is the pid of a process of this host that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

func hostname(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	require.NoError(t, err)
	return h
}
