package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/server"
)

// TestIdleStreamKeepsAlive: an event stream with nothing to send (its run
// waits for a signal) sends a comment line each KeepAlive (15 s by
// default, docs/api.md), so that proxies keep it open, and goes on with
// the run's events after it.
func TestIdleStreamKeepsAlive(t *testing.T) {
	t.Parallel()
	r, err := runner.Open(runner.Config{Dir: filepath.Join(t.TempDir(), ".skein")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	flows := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(flows, "waits.yaml"), []byte(`version: 1
name: waits
nodes:
  - {id: approve, type: wait, until: signal}
  - {id: after, type: set, values: {by: "{{ approve.data.by }}"}}
edges:
  - {from: approve, to: after}
`), 0o644))
	srv, err := server.New(server.Config{Runner: r, Workflows: flows, KeepAlive: time.Millisecond, ParkAfter: -1, Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	resp, err := http.Post(ts.URL+"/api/workflows/waits/runs", "application/json", nil)
	require.NoError(t, err)
	var started struct {
		ID string `json:"execution_id"`
	}
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&started))
	_ = resp.Body.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", ts.URL+"/api/runs/"+started.ID+"/events", nil)
	require.NoError(t, err)
	stream, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer stream.Body.Close()
	sc := bufio.NewScanner(stream.Body)
	alive := 0
	for alive < 2 && sc.Scan() {
		if sc.Text() == ": keep-alive" {
			alive++
		}
	}
	require.Equal(t, 2, alive, "the idle stream sent its comments: %v", sc.Err())

	sig, err := http.Post(ts.URL+"/api/runs/"+started.ID+"/signals/approve", "application/json", strings.NewReader(`{"by": "Ada"}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, sig.StatusCode)
	_ = sig.Body.Close()
	ended := false
	for !ended && sc.Scan() {
		ended = sc.Text() == "event: end"
	}
	require.True(t, ended, "the stream goes on to the run's end: %v", sc.Err())
}
