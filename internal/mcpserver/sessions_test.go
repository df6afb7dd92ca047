package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/mcpserver"
)

const listRunsCall = `{"name":"list_runs","arguments":{}}`

// TestMCPSessionsPastTheCap: with room for three sessions, a fourth closes
// the idle session used least recently. A request naming that one is
// answered 404 Not Found, as for an expired session; the others still
// answer.
func TestMCPSessionsPastTheCap(t *testing.T) {
	t.Parallel()
	url, _ := serveMCP(t, t.TempDir(), mcpserver.HTTPConfig{MaxSessions: 3})
	a, b, c := &rawSession{url: url}, &rawSession{url: url}, &rawSession{url: url}
	for _, rs := range []*rawSession{a, b, c} {
		rs.initialize(t)
	}
	// a is used again: b is now the session used least recently.
	rep := a.call(t, "tools/call", listRunsCall)
	require.Equal(t, http.StatusOK, rep.HTTPStatus, rep.Body)

	d := &rawSession{url: url}
	d.initialize(t)

	rep = b.call(t, "tools/call", listRunsCall)
	require.Equal(t, http.StatusNotFound, rep.HTTPStatus, "the least recently used session is closed: %s", rep.Body)
	for name, rs := range map[string]*rawSession{"a": a, "c": c, "d": d} {
		rep := rs.call(t, "tools/call", listRunsCall)
		require.Equal(t, http.StatusOK, rep.HTTPStatus, "session %s: %s", name, rep.Body)
		require.Nil(t, rep.Error, "session %s: %s", name, rep.Body)
	}
}

// TestMCPSessionsAllBusy: when every session has a call in progress, a new
// session's initialize is answered 503 Service Unavailable with
// Retry-After and a JSON-RPC error saying what to do; once the calls have
// ended, a new session opens.
func TestMCPSessionsAllBusy(t *testing.T) {
	t.Parallel()
	url, _ := serveMCP(t, t.TempDir(), mcpserver.HTTPConfig{MaxSessions: 2})
	gate := filepath.Join(t.TempDir(), "gate")
	flow := writeFile(t, "gated.yaml", `version: 1
name: gated
inputs:
  gate: {type: string, required: true}
nodes:
  - {id: start, type: trigger.manual}
  - id: wait
    type: shell
    command: [sh, -c, 'while [ ! -e "$GATE" ]; do sleep 0.02; done']
    env: {GATE: "{{ inputs.gate }}"}
edges:
  - {from: start, to: wait}
`)
	sessions := []*sdk.ClientSession{connectMCP(t, url, ""), connectMCP(t, url, "")}
	type ended struct {
		res *sdk.CallToolResult
		err error
	}
	done := make(chan ended, len(sessions))
	for _, cs := range sessions {
		go func() {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_workflow",
				Arguments: map[string]any{"file": flow, "inputs": map[string]any{"gate": gate}}})
			done <- ended{res, err}
		}()
	}
	require.Eventually(t, func() bool {
		out := toolResult[map[string]any](t, callTool(t, sessions[0], "list_runs", map[string]any{"status": "running"}))
		runs, _ := out["runs"].([]any)
		return len(runs) == len(sessions)
	}, time.Minute, 20*time.Millisecond, "both runs start")

	rs := &rawSession{url: url}
	resp, body := rs.send(t, `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After is a number of seconds: %q", resp.Header.Get("Retry-After"))
	require.Positive(t, wait)
	var refusal struct {
		ID    int `json:"id"`
		Error struct {
			Message string `json:"message"`
			Data    struct {
				Code        string `json:"code"`
				MaxSessions int    `json:"max_sessions"`
				RetryAfter  int    `json:"retry_after_seconds"`
			} `json:"data"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &refusal), body)
	require.Equal(t, 7, refusal.ID, "the error answers the initialize")
	require.Contains(t, refusal.Error.Message, "each with a call in progress")
	require.Contains(t, refusal.Error.Message, "--max-sessions")
	require.Equal(t, "too_many_sessions", refusal.Error.Data.Code)
	require.Equal(t, 2, refusal.Error.Data.MaxSessions)
	require.Equal(t, wait, refusal.Error.Data.RetryAfter)
	_, err = dialMCP(url, "")
	require.ErrorContains(t, err, "Service Unavailable", "the SDK's client is refused too")

	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	for range sessions {
		e := <-done
		require.NoError(t, e.err)
		require.Equal(t, "completed", toolResult[map[string]any](t, e.res)["status"])
	}
	// The calls' answers reach the client just before the server counts
	// them ended: the first tries may still be refused.
	var cs *sdk.ClientSession
	require.Eventually(t, func() bool {
		cs, err = dialMCP(url, "")
		return err == nil
	}, time.Minute, 20*time.Millisecond, "a session opens once the calls have ended")
	t.Cleanup(func() { _ = cs.Close() })
	toolResult[map[string]any](t, callTool(t, cs, "list_runs", nil))
}

// TestMCPSessionsStayCapped opens 500 sessions from 8 clients at once with
// room for 64: the server never has more than 64 open, and the 64 it kept
// answer while the others are answered 404 Not Found.
func TestMCPSessionsStayCapped(t *testing.T) {
	t.Parallel()
	const opens, clients, capped = 500, 8, 64
	srv, url, _ := serveMCPServer(t, t.TempDir(), mcpserver.HTTPConfig{MaxSessions: capped})
	sessions := make([]*rawSession, opens)
	var (
		next atomic.Int64
		mu   sync.Mutex
		most int // the most sessions seen open
		wg   sync.WaitGroup
	)
	for range clients {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < opens; i = next.Add(1) - 1 {
				rs := &rawSession{url: url}
				rs.initialize(t)
				sessions[i] = rs
				n := srv.LiveSessions()
				mu.Lock()
				most = max(most, n)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, most, capped, "sessions open at once")
	require.Equal(t, capped, srv.LiveSessions())

	answered := 0
	for _, rs := range sessions {
		rep := rs.call(t, "ping", "")
		switch rep.HTTPStatus {
		case http.StatusOK:
			answered++
		case http.StatusNotFound:
		default:
			t.Fatalf("ping: %d %s", rep.HTTPStatus, rep.Body)
		}
	}
	require.Equal(t, capped, answered, "sessions that answer")
}

// BenchmarkMCPSessionMemory opens b.N sessions over HTTP (an initialize
// and its notification each, from one client) and reports the server's
// memory in use afterwards (heap and goroutine stacks, after a GC):
// per session when all are kept, in all when at most 64 are.
//
//	go test -run '^$' -bench MCPSessionMemory -benchtime 3000x ./internal/mcpserver
func BenchmarkMCPSessionMemory(b *testing.B) {
	for _, bc := range []struct {
		name   string
		max    func(n int) int
		metric func(delta uint64, n int) (float64, string)
	}{
		{"kept", func(n int) int { return n }, func(d uint64, n int) (float64, string) { return float64(d) / float64(n), "B/session" }},
		{"capped64", func(int) int { return 64 }, func(d uint64, _ int) (float64, string) { return float64(d) / (1 << 20), "MiB-in-use" }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv, url, stop := serveMCPServer(b, b.TempDir(), mcpserver.HTTPConfig{MaxSessions: bc.max(b.N)})
			defer stop()
			before := memoryInUse()
			b.ResetTimer()
			for range b.N {
				rs := &rawSession{url: url}
				rs.initialize(b)
			}
			b.StopTimer()
			after := memoryInUse()
			var delta uint64
			if after > before {
				delta = after - before
			}
			b.ReportMetric(bc.metric(delta, b.N))
			b.ReportMetric(float64(srv.LiveSessions()), "sessions")
		})
	}
}

func memoryInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}
