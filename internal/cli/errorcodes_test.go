package cli_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/server"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// TestOneCodePerError drives each error of the runner through the three
// front ends — skein -o json, the HTTP API and the MCP server — and wants
// the same code from each, with the exit code and the status of its class.
func TestOneCodePerError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flows := t.TempDir()
	fails := writeFlowIn(t, flows, "fails.yaml", "version: 1\nname: fails\nnodes:\n  - {id: boom, type: shell, command: [sh, -c, 'exit 3']}\n")
	gone := writeFlowIn(t, flows, "gone.yaml", "version: 1\nname: gone\nnodes:\n  - {id: boom, type: shell, command: [sh, -c, 'exit 3']}\n")
	done := writeFlowIn(t, flows, "done.yaml", "version: 1\nname: done\nnodes:\n  - {id: say, type: shell, command: [echo, hi]}\n")
	waits := writeFlowIn(t, flows, "waits.yaml", "version: 1\nname: waits\nnodes:\n  - {id: say, type: shell, command: [echo, hi]}\n  - {id: hold, type: wait, until: signal}\nedges:\n  - {from: say, to: hold}\n")
	failed, goneRun, completed, waiting := startRun(t, dir, fails), startRun(t, dir, gone), startRun(t, dir, done), startRun(t, dir, waits)
	require.NoError(t, os.Remove(gone)) // its run cannot be resumed: the file is missing

	db := unreachableDB(t)
	api := serveAPI(t, runner.Config{Dir: dir})
	apiDown := serveAPI(t, runner.Config{Dir: t.TempDir(), DB: db.url, Placement: runner.PlaceLocal})
	mcp := connectMCP(t, mustServeMCP(t, "--dir", dir), "")
	mcpDown := connectMCP(t, mustServeMCP(t, "--dir", t.TempDir(), "--db", db.url), "")
	db.stop() // from here on nothing reaches the database

	tests := []struct {
		name string
		code string
		exit int // skein's exit code
		// status is the HTTP status; down: the database cannot be reached.
		status int
		down   bool
		cli    []string
		method string
		path   string
		tool   string
		args   map[string]any
		// msg, when set, is the message every front end gives.
		msg string
	}{
		{name: "missing workflow file", code: "invalid_workflow", exit: 2, status: http.StatusUnprocessableEntity,
			cli: []string{"resume", goneRun}, method: "POST", path: "/api/runs/" + goneRun + "/resume",
			tool: "resume_run", args: map[string]any{"id": goneRun}},
		{name: "unknown run", code: "not_found", exit: 2, status: http.StatusNotFound,
			cli: []string{"runs", "show", "0123456789ab"}, method: "GET", path: "/api/runs/0123456789ab",
			tool: "get_run", args: map[string]any{"id": "0123456789ab"}},
		{name: "signal to a node that is not waiting", code: "not_waiting", exit: 2, status: http.StatusConflict,
			cli: []string{"signal", waiting, "say", "--data", "{}"}, method: "POST", path: "/api/runs/" + waiting + "/signals/say",
			tool: "signal_run", args: map[string]any{"id": waiting, "node": "say"}},
		{name: "signal to an unknown node", code: "not_found", exit: 2, status: http.StatusNotFound,
			cli: []string{"signal", waiting, "nosuch", "--data", "{}"}, method: "POST", path: "/api/runs/" + waiting + "/signals/nosuch",
			tool: "signal_run", args: map[string]any{"id": waiting, "node": "nosuch"}},
		{name: "resume a completed run", code: "completed", exit: 2, status: http.StatusConflict,
			cli: []string{"resume", completed}, method: "POST", path: "/api/runs/" + completed + "/resume",
			tool: "resume_run", args: map[string]any{"id": completed}},
		{name: "cancel a run that is not running", code: "not_running", exit: 2, status: http.StatusConflict,
			cli: []string{"cancel", failed}, method: "POST", path: "/api/runs/" + failed + "/cancel",
			tool: "cancel_run", args: map[string]any{"id": failed},
			msg: "run " + failed + " is failed, not running: there is nothing to cancel"},
		{name: "signal to a failed run", code: "not_waiting", exit: 2, status: http.StatusConflict,
			cli: []string{"signal", failed, "say", "--data", "{}"}, method: "POST", path: "/api/runs/" + failed + "/signals/say",
			tool: "signal_run", args: map[string]any{"id": failed, "node": "say"},
			msg: "run " + failed + " is failed, so node say is not waiting for a signal; `skein resume " + failed + "` first"},
		{name: "unreachable database", code: "unavailable", exit: 1, status: http.StatusServiceUnavailable, down: true,
			cli: []string{"runs", "show", "0123456789ab", "--db", db.url}, method: "GET", path: "/api/runs/0123456789ab",
			tool: "get_run", args: map[string]any{"id": "0123456789ab"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Run("cli", func(t *testing.T) {
				r := skein(t, append(tt.cli, "--dir", dir, "-o", "json")...)
				var doc struct {
					Error struct{ Code, Message string }
				}
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
				require.Equal(t, tt.code, doc.Error.Code, doc.Error.Message)
				require.Equal(t, tt.exit, r.code, r.stderr)
				if tt.msg != "" {
					require.Equal(t, tt.msg, doc.Error.Message)
				}
			})
			t.Run("http", func(t *testing.T) {
				base := api
				if tt.down {
					base = apiDown
				}
				res := httpCall(t, tt.method, base+tt.path)
				var p struct{ Code, Detail string }
				require.NoError(t, json.NewDecoder(res.Body).Decode(&p))
				require.Equal(t, tt.code, p.Code, p.Detail)
				require.Equal(t, tt.status, res.StatusCode, p.Detail)
				if tt.msg != "" {
					require.Equal(t, tt.msg, p.Detail)
				}
				require.Equal(t, "application/problem+json", res.Header.Get("Content-Type"))
				if tt.status == http.StatusServiceUnavailable {
					require.Equal(t, "1", res.Header.Get("Retry-After"), "a store that is down says when to try again")
				}
			})
			t.Run("mcp", func(t *testing.T) {
				cs := mcp
				if tt.down {
					cs = mcpDown
				}
				terr := toolError(t, callTool(t, cs, tt.tool, tt.args))
				require.Equal(t, tt.code, terr.Code, terr.Message)
				if tt.msg != "" {
					require.Equal(t, tt.msg, terr.Message)
				}
			})
		})
	}
}

func writeFlowIn(t *testing.T, dir, name, src string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	return path
}

// startRun runs file with skein run in dir and returns the run's id.
func startRun(t *testing.T, dir, file string) string {
	t.Helper()
	r := skein(t, "run", "--dir", dir, "-o", "json", file)
	var doc struct {
		ID string `json:"execution_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout+r.stderr)
	require.NotEmpty(t, doc.ID, r.stdout)
	return doc.ID
}

// serveAPI serves the HTTP API (without tokens) on a runner opened with
// cfg until the test ends, and returns its URL.
func serveAPI(t *testing.T, cfg runner.Config) string {
	t.Helper()
	r, err := runner.Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	srv, err := server.New(server.Config{Runner: r, Workflows: t.TempDir(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Grace: time.Second})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String()
}

func httpCall(t *testing.T, method, url string) *http.Response {
	t.Helper()
	body := ""
	if method == "POST" {
		body = "{}"
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

// mustServeMCP serves `skein mcp --http` with args until the test ends and
// returns its URL.
func mustServeMCP(t *testing.T, args ...string) string {
	t.Helper()
	url, _ := serveMCP(t, append([]string{"mcp", "--http", "127.0.0.1:0"}, args...)...)
	return url
}

// proxiedDB is a Postgres database reached through a loopback proxy that
// the test can stop: then its URL names a closed port and the
// connections made through it are cut, as when the database goes down.
type proxiedDB struct {
	url  string
	ln   net.Listener
	mu   sync.Mutex
	conn []net.Conn
}

func unreachableDB(t *testing.T) *proxiedDB {
	t.Helper()
	u, err := url.Parse(pgtest.URL(t))
	require.NoError(t, err)
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u.Host = ln.Addr().String()
	p := &proxiedDB{url: u.String(), ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conn = append(p.conn, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	t.Cleanup(p.stop)
	return p
}

// stop closes the port and cuts every connection made through it.
func (p *proxiedDB) stop() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conn {
		_ = c.Close()
	}
	p.conn = nil
}
