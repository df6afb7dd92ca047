package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBodiesThatAreNotUTF8 sends bodies that are not valid UTF-8 to a
// webhook and to the API's routes that take JSON: each is 400
// invalid_body, and no run is made.
func TestBodiesThatAreNotUTF8(t *testing.T) {
	t.Parallel()
	s := serveHooks(t)
	for _, tc := range []struct {
		name, path, token, body string
		header                  []string
		detail                  string
	}{
		{"webhook JSON", "/hooks/hooked/open", "", "{\"who\": \"\xff\"}", []string{"Content-Type", "application/json"}, "byte 9 is 0xff"},
		{"webhook text", "/hooks/hooked/open", "", "caf\xe9", []string{"Content-Type", "text/plain; charset=utf-8"}, "UTF-8"},
		{"webhook form", "/hooks/hooked/open", "", "name=caf%E9", []string{"Content-Type", "application/x-www-form-urlencoded"}, "UTF-8"},
		{"run inputs", "/api/workflows/hooked/runs", s.token, "{\"inputs\": {\"who\": \"\xc3\x28\"}}", nil, "UTF-8"},
		{"run inputs beyond a float", "/api/workflows/hooked/runs", s.token, `{"inputs": {"who": 1e400}}`, nil, "1e400"},
		{"chat message", "/api/chat/chat", s.token, "{\"message\": \"\xed\xa0\x80\"}", nil, "UTF-8"},
		{"workflow to validate", "/api/workflows/validate", s.token, "version: 1\nname: \xff\n", nil, "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := s.do("POST", tc.path, tc.token, tc.body, tc.header...)
			require.Equal(t, http.StatusBadRequest, a.status, string(a.body))
			require.Equal(t, "application/problem+json", a.header.Get("Content-Type"))
			p := a.json(t)
			require.Equal(t, "invalid_body", p["code"])
			require.Contains(t, p["detail"], tc.detail)
		})
	}
	all := s.admin("GET", "/api/runs", nil, http.StatusOK)["runs"].([]any)
	require.Empty(t, all, "no body that is not UTF-8 made a run")
	metrics := string(s.do("GET", "/metrics", s.token, nil).body)
	require.Contains(t, metrics, `skein_webhook_deliveries_total{outcome="bad_request",trigger="open",workflow="hooked"} 3`)
}

// TestProblemsNameNoServerPaths makes the run folders unwritable (the
// data folder's runs is a file) and starts runs by a webhook and by the
// API: the webhook's caller, who has no API token, learns no path but a
// request id; the API's caller is told the path relative to the data
// folder; the server's log has the whole path under that request id.
func TestProblemsNameNoServerPaths(t *testing.T) {
	t.Parallel()
	secrets := filepath.Join(t.TempDir(), "secrets.env")
	require.NoError(t, os.WriteFile(secrets, []byte("HOOK_SECRET="+hookSecret+"\nHOOK_TOKEN="+hookToken+"\n"), 0o600))
	s := serve(t, serveOpts{flows: copyDir(t, "testdata/hooks"), args: []string{"--secrets-file", secrets, "--run-folders", "always"}})
	runs := filepath.Join(s.dir, "runs")
	require.NoError(t, os.RemoveAll(runs))
	require.NoError(t, os.WriteFile(runs, []byte("not a folder"), 0o644))

	hook := s.do("POST", "/hooks/hooked/open", "", "hi", "Content-Type", "text/plain")
	api := s.do("POST", "/api/workflows/hooked/runs", s.token, `{"inputs": {}}`)
	for _, a := range []answer{hook, api} {
		require.GreaterOrEqual(t, a.status, 500, string(a.body))
		require.NotContains(t, string(a.body), s.dir, "an answer names no path of the server's")
		require.NotContains(t, string(a.body), filepath.Dir(s.dir))
		p := a.json(t)
		require.Equal(t, "internal", p["code"], "a run folder that cannot be made is not the database being down")
		require.Equal(t, http.StatusInternalServerError, a.status)
		id, _ := p["request_id"].(string)
		require.NotEmpty(t, id, "a request id points into the log: %s", a.body)
		var logged string
		// The log is read from the server's stderr as it comes: the line
		// may follow the answer.
		s.eventually("the log line of "+id, time.Minute, func() bool {
			for _, line := range strings.Split(s.log(), "\n") {
				if strings.Contains(line, id) {
					logged = line
				}
			}
			return logged != ""
		})
		require.Contains(t, logged, runs, "the log has the whole error, path and all")
	}
	hp := hook.json(t)
	require.NotContains(t, hp["detail"], "runs", "a webhook's caller learns no path at all")
	require.Contains(t, hp["detail"], hp["request_id"])
	require.Contains(t, api.json(t)["detail"], "cannot create run folder runs/hooked/", "a token holder is told the path within the data folder")
}
