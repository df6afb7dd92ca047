package server_test

import (
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/server"
)

// hookSecret signs the test deliveries; hookToken is the bearer secret.
var (
	hookSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("a test secret of thirty-two bytes"))
	hookToken  = "tok-3f2a9c1e0b7d"
)

// serveHooks serves testdata/hooks with the hooks' secrets and more
// (NAME=value lines).
func serveHooks(t *testing.T, more ...string) *served {
	t.Helper()
	secrets := filepath.Join(t.TempDir(), "secrets.env")
	lines := append([]string{"HOOK_SECRET=" + hookSecret, "HOOK_TOKEN=" + hookToken}, more...)
	require.NoError(t, os.WriteFile(secrets, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	return serve(t, serveOpts{flows: copyDir(t, "testdata/hooks"), args: []string{"--secrets-file", secrets}})
}

// signed returns the Standard Webhooks headers of a delivery.
func signed(t *testing.T, id string, at time.Time, body string) []string {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(hookSecret)
	require.NoError(t, err)
	sig, err := wh.Sign(id, at, []byte(body))
	require.NoError(t, err)
	return []string{"webhook-id", id, "webhook-timestamp", fmt.Sprint(at.Unix()), "webhook-signature", sig}
}

// hookRuns counts the runs of workflow hooked.
func (s *served) runsOf(workflow string) int {
	s.t.Helper()
	return len(s.admin("GET", "/api/runs?workflow="+workflow, nil, http.StatusOK)["runs"].([]any))
}

func outputs(doc map[string]any) map[string]any { return doc["outputs"].(map[string]any) }

// TestHookSignatures: a delivery signed in the Standard Webhooks scheme
// starts one run with the request as its trigger; a bad signature, an old
// timestamp, missing headers and a replayed delivery id start nothing.
func TestHookSignatures(t *testing.T) {
	t.Parallel()
	s := serveHooks(t)
	body := `{"who": "Mallory", "n": 3, "items": [1, 2.5]}`
	hdr := append(signed(t, "msg_1", time.Now(), body), "Content-Type", "application/json", "Authorization", "Bearer leak", "X-Trace", "t-1")

	a := s.do("POST", "/hooks/hooked/signed?ref=main&tag=a&tag=b", "", body, hdr...)
	require.Equal(t, http.StatusAccepted, a.status, string(a.body))
	acc := a.json(t)
	id := acc["execution_id"].(string)
	require.Equal(t, "/api/runs/"+id, a.header.Get("Location"))
	require.Equal(t, map[string]any{"execution_id": id, "workflow": "hooked", "trigger": "signed", "status": "running"}, acc)

	doc := s.ended(id)
	require.Equal(t, "completed", doc["status"])
	require.Equal(t, "signed", doc["trigger"])
	out := outputs(doc)
	require.Equal(t, map[string]any{"who": "Mallory", "n": float64(3), "items": []any{float64(1), 2.5}}, out["body"])
	require.Equal(t, "POST", out["method"])
	require.Equal(t, map[string]any{"ref": "main", "tag": []any{"a", "b"}}, out["query"])
	require.Equal(t, "nobody", out["who"], "the body never sets an input")
	headers := out["headers"].(map[string]any)
	require.Equal(t, "msg_1", headers["webhook-id"])
	require.Equal(t, "t-1", headers["x-trace"])
	require.Equal(t, "application/json", headers["content-type"])
	require.NotContains(t, headers, "webhook-signature", "auth headers do not reach the run")
	require.NotContains(t, headers, "authorization")
	require.Equal(t, 1, s.runsOf("hooked"))

	for _, tc := range []struct {
		name   string
		header []string
		status int
		code   string
		detail string
	}{
		{"replayed delivery", hdr, http.StatusConflict, "delivery_replayed", "started run " + id},
		{"bad signature", append(signed(t, "msg_2", time.Now(), body+" "), "Content-Type", "application/json"), 401, "unauthorized", "does not match"},
		{"old timestamp", append(signed(t, "msg_3", time.Now().Add(-10*time.Minute), body), "Content-Type", "application/json"), 401, "unauthorized", "5 minutes"},
		{"future timestamp", append(signed(t, "msg_4", time.Now().Add(10*time.Minute), body), "Content-Type", "application/json"), 401, "unauthorized", "5 minutes"},
		{"no signature", []string{"Content-Type", "application/json", "webhook-id", "msg_5"}, 401, "unauthorized", "Standard Webhooks"},
		{"another id's signature", append(signed(t, "msg_6", time.Now(), body), "webhook-id", "msg_7", "Content-Type", "application/json"), 401, "unauthorized", "does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := s.do("POST", "/hooks/hooked/signed", "", body, tc.header...)
			require.Equal(t, tc.status, a.status, string(a.body))
			p := a.json(t)
			require.Equal(t, tc.code, p["code"])
			require.Contains(t, p["detail"], tc.detail)
			if tc.code == "unauthorized" {
				require.Equal(t, "A valid webhook signature is required", p["title"], "a webhook's auth is not an API token")
			}
			if tc.code == "delivery_replayed" {
				require.Equal(t, id, p["execution_id"])
			}
		})
	}
	require.Equal(t, 1, s.runsOf("hooked"), "nothing but the first delivery made a run")

	metrics := string(s.do("GET", "/metrics", s.token, nil).body)
	for _, line := range []string{
		`skein_webhook_deliveries_total{outcome="accepted",trigger="signed",workflow="hooked"} 1`,
		`skein_webhook_deliveries_total{outcome="duplicate",trigger="signed",workflow="hooked"} 1`,
		`skein_webhook_deliveries_total{outcome="expired",trigger="signed",workflow="hooked"} 2`,
		`skein_webhook_deliveries_total{outcome="unauthorized",trigger="signed",workflow="hooked"} 3`,
		`skein_runs_started_total{source="webhook",workflow="hooked"} 1`,
	} {
		require.Contains(t, metrics, line)
	}
}

// TestHookConcurrentDeliveries sends one delivery 50 times at once: one
// run, one 202, and 49 answers that name it.
func TestHookConcurrentDeliveries(t *testing.T) {
	t.Parallel()
	s := serveHooks(t)
	body := `{"n": 1}`
	hdr := append(signed(t, "msg_same", time.Now(), body), "Content-Type", "application/json")
	const n = 50
	answers := make([]answer, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = s.do("POST", "/hooks/hooked/signed", "", body, hdr...)
		}()
	}
	close(start)
	wg.Wait()
	ids := map[string]bool{}
	accepted := 0
	for _, a := range answers {
		switch a.status {
		case http.StatusAccepted:
			accepted++
		case http.StatusConflict:
			require.Equal(t, "delivery_replayed", a.json(t)["code"])
		default:
			t.Fatalf("status %d: %s", a.status, a.body)
		}
		ids[a.json(t)["execution_id"].(string)] = true
	}
	require.Equal(t, 1, accepted)
	require.Len(t, ids, 1, "every answer names the one run")
	for id := range ids {
		require.Equal(t, "completed", s.ended(id)["status"])
	}
	require.Equal(t, 1, s.runsOf("hooked"))
}

// TestHookBearerAndBodies: bearer secrets (in Authorization or a header
// of the hook's own), bodies by content type, the size limit, and the
// requests a hook refuses.
func TestHookBearerAndBodies(t *testing.T) {
	t.Parallel()
	s := serveHooks(t)
	bearer := "Bearer " + hookToken

	a := s.do("POST", "/hooks/hooked/by-token", "", "hello", "Content-Type", "text/plain; charset=utf-8", "Authorization", bearer)
	require.Equal(t, http.StatusAccepted, a.status, string(a.body))
	doc := s.ended(a.json(t)["execution_id"].(string))
	require.Equal(t, "webhook", doc["source"], "a run started by a webhook")
	out := outputs(doc)
	require.Equal(t, "hello", out["body"])
	require.NotContains(t, out["headers"], "authorization")

	a = s.do("PUT", "/hooks/hooked/by-header", "", "name=Ada&tag=x&tag=y", "Content-Type", "application/x-www-form-urlencoded", "X-Hook-Token", hookToken)
	require.Equal(t, http.StatusAccepted, a.status, string(a.body))
	out = outputs(s.ended(a.json(t)["execution_id"].(string)))
	require.Equal(t, map[string]any{"name": "Ada", "tag": []any{"x", "y"}}, out["body"])
	require.Equal(t, "PUT", out["method"])
	require.NotContains(t, out["headers"], "x-hook-token", "the hook's bearer header does not reach the run")

	a = s.do("POST", "/hooks/hooked/open", "", "")
	require.Equal(t, http.StatusAccepted, a.status, string(a.body))
	require.Nil(t, outputs(s.ended(a.json(t)["execution_id"].(string)))["body"], "no body is null")
	before := s.runsOf("hooked")

	for _, tc := range []struct {
		name, method, path, body string
		header                   []string
		status                   int
		code                     string
	}{
		{"no bearer", "POST", "/hooks/hooked/by-token", "x", []string{"Content-Type", "text/plain"}, 401, "unauthorized"},
		{"wrong bearer", "POST", "/hooks/hooked/by-token", "x", []string{"Content-Type", "text/plain", "Authorization", "Bearer nope"}, 401, "unauthorized"},
		{"an API token is not the hook's", "POST", "/hooks/hooked/by-token", "x", []string{"Content-Type", "text/plain", "Authorization", "Bearer " + s.token}, 401, "unauthorized"},
		{"bearer in the wrong header", "PUT", "/hooks/hooked/by-header", "x", []string{"Content-Type", "text/plain", "Authorization", bearer}, 401, "unauthorized"},
		{"wrong method", "GET", "/hooks/hooked/by-token", "", []string{"Authorization", bearer}, 405, "method_not_allowed"},
		{"no auth configured", "POST", "/hooks/hooked/bare", "", nil, 403, "forbidden"},
		{"unknown hook", "POST", "/hooks/hooked/nope", "", nil, 404, "not_found"},
		{"unknown workflow", "POST", "/hooks/nope/signed", "", nil, 404, "not_found"},
		{"required input", "POST", "/hooks/needy/hook", "", nil, 422, "invalid_inputs"},
		{"no content type", "POST", "/hooks/hooked/open", "x", nil, 415, "unsupported_media_type"},
		{"binary body", "POST", "/hooks/hooked/open", "x", []string{"Content-Type", "application/octet-stream"}, 415, "unsupported_media_type"},
		{"bad JSON", "POST", "/hooks/hooked/open", "{", []string{"Content-Type", "application/json"}, 400, "bad_request"},
		{"over max_body", "POST", "/hooks/hooked/open", strings.Repeat("x", 1025), []string{"Content-Type", "text/plain"}, 413, "too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := s.do(tc.method, tc.path, "", tc.body, tc.header...)
			require.Equal(t, tc.status, a.status, string(a.body))
			require.Equal(t, "application/problem+json", a.header.Get("Content-Type"))
			p := a.json(t)
			require.Equal(t, tc.code, p["code"])
			switch tc.code {
			case "unauthorized":
				require.Equal(t, "A valid webhook secret is required", p["title"], "a webhook's auth is not an API token")
			case "forbidden":
				require.Equal(t, "The webhook has no auth, so it takes no requests", p["title"])
			}
		})
	}
	require.Equal(t, before, s.runsOf("hooked"), "no refused request made a run")

	a = s.do("POST", "/hooks/hooked/open", "", strings.Repeat("x", 1024), "Content-Type", "text/plain")
	require.Equal(t, http.StatusAccepted, a.status, "a body of exactly max_body is taken: %s", a.body)
}

// countingReader is a body of n bytes that counts what was read of it.
type countingReader struct {
	left int64
	read atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.EOF
	}
	n := int64(len(p))
	if n > c.left {
		n = c.left
	}
	clear(p[:n])
	c.left -= n
	c.read.Add(n)
	return int(n), nil
}

// TestHook100MB sends 100 MB to a hook of 1 MiB, with and without a
// Content-Length: 413, and the server reads about the limit, not the body
// (what the client could write before the answer is bounded by the socket
// buffers).
func TestHook100MB(t *testing.T) {
	t.Parallel()
	s := serveHooks(t)
	const size = 100 << 20
	for _, known := range []bool{true, false} {
		t.Run(fmt.Sprintf("length known %v", known), func(t *testing.T) {
			body := &countingReader{left: size}
			req, err := http.NewRequest("POST", s.url+"/hooks/hooked/signed", body)
			require.NoError(t, err)
			if known {
				req.ContentLength = size
			} else {
				req.ContentLength = -1 // chunked: the server must count
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, string(data))
			require.Contains(t, string(data), `"code":"too_large"`)
			t.Logf("the client wrote %d bytes of %d", body.read.Load(), size)
			require.Less(t, body.read.Load(), int64(24<<20), "the client wrote %d bytes of 100 MB", body.read.Load())
		})
	}
	require.Equal(t, 0, s.runsOf("hooked"))
}

// TestHookRespondOnFinish: respond: on_finish answers with the run's
// outputs, or 202 when the run does not end within respond_timeout.
func TestHookRespondOnFinish(t *testing.T) {
	t.Parallel()
	s := serveHooks(t)
	a := s.do("POST", "/hooks/hooked/sync", "", `{"x": 1}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	res := a.json(t)
	require.Equal(t, "completed", res["status"])
	require.Equal(t, map[string]any{"x": float64(1)}, res["outputs"].(map[string]any)["body"])
	require.Contains(t, res, "error", "the answer has its error whatever the status: null here")
	require.Nil(t, res["error"])
	require.NotEmpty(t, a.header.Get("Location"))

	marker := filepath.Join(s.tmp, "marker")
	a = s.do("POST", "/hooks/slow/hook", "", fmt.Sprintf(`{"marker": %q}`, marker), "Content-Type", "application/json")
	require.Equal(t, http.StatusAccepted, a.status, "the run outlives respond_timeout: %s", a.body)
	id := a.json(t)["execution_id"].(string)
	require.NoError(t, os.WriteFile(marker, nil, 0o644))
	doc := s.ended(id)
	require.Equal(t, "completed", doc["status"])
	require.Equal(t, "passed", outputs(doc)["text"])
}

// TestWebhookExample serves examples/webhook.yaml as written but for the
// deploy service's address, and delivers to it.
func TestWebhookExample(t *testing.T) {
	t.Parallel()
	var got atomic.Value
	deploys := http.NewServeMux()
	deploys.HandleFunc("POST /deploys", func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		got.Store(r.Header.Get("Authorization") + " " + string(data))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"id": "d-1"}`))
	})
	svc := httptest.NewServer(deploys)
	t.Cleanup(svc.Close)

	src, err := os.ReadFile("../../examples/webhook.yaml")
	require.NoError(t, err)
	flows := t.TempDir()
	text := strings.Replace(string(src), "http://127.0.0.1:8080/deploys", svc.URL+"/deploys", 1)
	require.NoError(t, os.WriteFile(filepath.Join(flows, "webhook.yaml"), []byte(text), 0o644))
	secrets := filepath.Join(t.TempDir(), "secrets.env")
	require.NoError(t, os.WriteFile(secrets, []byte("HOOK_SECRET="+hookSecret+"\nDEPLOY_TOKEN=dt-1\n"), 0o600))
	s := serve(t, serveOpts{flows: flows, args: []string{"--secrets-file", secrets}})

	body := `{"service": "api", "version": "1.2.3"}`
	a := s.do("POST", "/hooks/webhook/deploy", "", body, append(signed(t, "msg_deploy_1", time.Now(), body), "Content-Type", "application/json")...)
	require.Equal(t, http.StatusAccepted, a.status, string(a.body))
	doc := s.ended(a.json(t)["execution_id"].(string))
	require.Equal(t, "completed", doc["status"], "%v", doc)
	require.Equal(t, "deploying api 1.2.3 as d-1", outputs(doc)["message"])
	require.Equal(t, `Bearer dt-1 {"service":"api","version":"1.2.3"}`, got.Load())
}

// TestHookReadsNoMoreThanTheLimit calls the handler in-process with a 100
// MB body of unknown length: it reads at most max_body + 1 bytes of it.
func TestHookReadsNoMoreThanTheLimit(t *testing.T) {
	t.Parallel()
	r, err := runner.Open(runner.Config{Dir: filepath.Join(t.TempDir(), ".skein")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	secrets := filepath.Join(t.TempDir(), "secrets.env")
	require.NoError(t, os.WriteFile(secrets, []byte("HOOK_SECRET="+hookSecret+"\nHOOK_TOKEN="+hookToken+"\n"), 0o600))
	srv, err := server.New(server.Config{Runner: r, Workflows: copyDir(t, "testdata/hooks"),
		Options: runner.Options{SecretsFile: secrets}, Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)

	for _, path := range []string{"/hooks/hooked/signed", "/hooks/hooked/open"} {
		body := &countingReader{left: 100 << 20}
		req := httptest.NewRequest("POST", path, body)
		req.ContentLength = -1
		req.Header.Set("Content-Type", "text/plain")
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())
		limit := int64(1 << 20)
		if strings.HasSuffix(path, "open") {
			limit = 1 << 10
		}
		require.LessOrEqual(t, body.read.Load(), limit+1, "%s read %d bytes", path, body.read.Load())
	}
}

// TestHooksFollowReloads: a hook whose path changes on disk is served at
// its new path once the folder is reloaded, not at the old one.
func TestHooksFollowReloads(t *testing.T) {
	t.Parallel()
	r, err := runner.Open(runner.Config{Dir: filepath.Join(t.TempDir(), ".skein")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	flows := t.TempDir()
	write := func(path string) {
		src := "version: 1\nname: moving\nnodes:\n  - {id: hook, type: trigger.webhook, path: " + path + ", auth: {type: none}}\n"
		require.NoError(t, os.WriteFile(filepath.Join(flows, "moving.yaml"), []byte(src), 0o644))
	}
	write("before")
	srv, err := server.New(server.Config{Runner: r, Workflows: flows, Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	status := func(path string) int {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/hooks/moving/"+path, nil))
		return rec.Code
	}
	require.Equal(t, http.StatusAccepted, status("before"))
	write("after")
	require.NoError(t, srv.Reload())
	require.Equal(t, http.StatusNotFound, status("before"))
	require.Equal(t, http.StatusAccepted, status("after"))
}

// TestBusy: with every execution slot taken, a request that would start
// another waits, then is answered 503 busy with Retry-After; once the
// slot is free the next one is taken.
func TestBusy(t *testing.T) {
	t.Parallel()
	r, err := runner.Open(runner.Config{Dir: filepath.Join(t.TempDir(), ".skein")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	srv, err := server.New(server.Config{Runner: r, Workflows: copyDir(t, "testdata/hooks"), MaxRunning: 1, Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	post := func(body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/hooks/slow/hook", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		srv.Handler().ServeHTTP(rec, req)
		return rec
	}
	marker := filepath.Join(t.TempDir(), "marker")
	first := post(fmt.Sprintf(`{"marker": %q}`, marker))
	require.Equal(t, http.StatusAccepted, first.Code, first.Body.String())

	busy := post(`{"marker": "/nonexistent"}`)
	require.Equal(t, http.StatusServiceUnavailable, busy.Code, busy.Body.String())
	require.Contains(t, busy.Body.String(), `"code":"busy"`)
	require.Equal(t, "1", busy.Header().Get("Retry-After"))

	require.NoError(t, os.WriteFile(marker, nil, 0o644))
	next := post(fmt.Sprintf(`{"marker": %q}`, marker))
	require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, next.Code, "the slot frees when the first run ends: %s", next.Body.String())
}

// TestHookSecretUnset: a workflow whose secrets are not set is served,
// but its hooks answer 503 webhook_unavailable without naming a secret;
// the server lists them under problems and its log says what to set, at
// start and on reload.
func TestHookSecretUnset(t *testing.T) {
	t.Parallel()
	secrets := filepath.Join(t.TempDir(), "secrets.env")
	require.NoError(t, os.WriteFile(secrets, nil, 0o600))
	s := serve(t, serveOpts{flows: copyDir(t, "testdata/hooks"), args: []string{"--secrets-file", secrets}})

	// problems lists the hooks of a workflow, for its file, by trigger.
	problems := func(file string) map[string]string {
		out := map[string]string{}
		for _, p := range s.admin("GET", "/api/workflows", nil, http.StatusOK)["problems"].([]any) {
			p := p.(map[string]any)
			if filepath.Base(p["file"].(string)) == file {
				out[p["node"].(string)] = p["message"].(string)
			}
		}
		return out
	}
	got := problems("hooked.yaml")
	require.ElementsMatch(t, []string{"signed", "token", "token_header", "open", "sync", "bare"}, keys(got), "no hook of the workflow can start a run")
	require.Contains(t, got["signed"], "webhook_unavailable")
	require.Contains(t, got["signed"], "HOOK_SECRET", "the operator learns what to set")
	require.Contains(t, got["signed"], "SKEIN_SECRET_")
	var served []string
	for _, w := range s.admin("GET", "/api/workflows", nil, http.StatusOK)["workflows"].([]any) {
		served = append(served, w.(map[string]any)["name"].(string))
	}
	require.Contains(t, served, "hooked", "the workflow is served")

	logged := s.logged("webhook cannot take requests; set its secret")
	var triggers []string
	for _, l := range logged {
		if l["workflow"] == "hooked" {
			triggers = append(triggers, l["trigger"].(string))
			require.Contains(t, l["err"], "HOOK_SECRET")
		}
	}
	require.ElementsMatch(t, []string{"signed", "token", "token_header", "open", "sync", "bare"}, triggers)

	body := `{"n": 1}`
	for _, tc := range []struct {
		method, path string
		header       []string
	}{
		{"POST", "/hooks/hooked/signed", append(signed(t, "msg_1", time.Now(), body), "Content-Type", "application/json")},
		{"POST", "/hooks/hooked/by-token", []string{"Content-Type", "application/json", "Authorization", "Bearer " + hookToken}},
		{"PUT", "/hooks/hooked/by-header", []string{"Content-Type", "application/json"}},
		{"POST", "/hooks/hooked/open", []string{"Content-Type", "application/json"}},
	} {
		a := s.do(tc.method, tc.path, "", body, tc.header...)
		require.Equal(t, http.StatusServiceUnavailable, a.status, "%s: %s", tc.path, a.body)
		p := a.json(t)
		require.Equal(t, "webhook_unavailable", p["code"])
		require.Equal(t, "https://skein.dev/problems/webhook_unavailable", p["type"])
		require.Equal(t, "The webhook cannot take requests until the server is configured for it", p["title"])
		for _, name := range []string{"HOOK_SECRET", "HOOK_TOKEN", "SKEIN_SECRET", "secrets.env"} {
			require.NotContains(t, string(a.body), name, "a caller learns no secret's name")
		}
	}
	require.Equal(t, 0, s.runsOf("hooked"))
	metrics := string(s.do("GET", "/metrics", s.token, nil).body)
	require.Contains(t, metrics, `skein_webhook_deliveries_total{outcome="webhook_unavailable",trigger="signed",workflow="hooked"} 1`)

	// Set the secrets, add a workflow whose secret is not set, reload.
	require.NoError(t, os.WriteFile(secrets, []byte("HOOK_SECRET="+hookSecret+"\nHOOK_TOKEN="+hookToken+"\n"), 0o600))
	late := "version: 1\nname: late\nsecrets: [LATE_SECRET]\nnodes:\n  - {id: hook, type: trigger.webhook, auth: {type: bearer, secret: \"{{ secrets.LATE_SECRET }}\"}}\n"
	require.NoError(t, os.WriteFile(filepath.Join(s.flows, "late.yaml"), []byte(late), 0o644))
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGHUP))
	s.eventually("the reload lists the new workflow's hook", 60*time.Second, func() bool { return len(problems("late.yaml")) == 1 })
	require.Contains(t, problems("late.yaml")["hook"], "LATE_SECRET")
	require.Empty(t, problems("hooked.yaml"), "the secrets are set now")
	s.eventually("the reload logs what to set", 60*time.Second, func() bool {
		for _, l := range s.logged("webhook cannot take requests; set its secret") {
			if l["workflow"] == "late" && l["trigger"] == "hook" {
				return true
			}
		}
		return false
	})
	a := s.do("POST", "/hooks/late/hook", "", body, "Content-Type", "application/json", "Authorization", "Bearer x")
	require.Equal(t, http.StatusServiceUnavailable, a.status, string(a.body))
	require.NotContains(t, string(a.body), "LATE_SECRET")
	a = s.do("POST", "/hooks/hooked/signed", "", body, append(signed(t, "msg_2", time.Now(), body), "Content-Type", "application/json")...)
	require.Equal(t, http.StatusAccepted, a.status, "the reload took the secrets: %s", a.body)

	// The secrets file is emptied after the reload: the next delivery
	// finds out, and still names nothing.
	require.NoError(t, os.WriteFile(secrets, nil, 0o600))
	a = s.do("POST", "/hooks/hooked/open", "", body, "Content-Type", "application/json")
	require.Equal(t, http.StatusServiceUnavailable, a.status, string(a.body))
	require.Equal(t, "webhook_unavailable", a.json(t)["code"])
	require.NotContains(t, string(a.body), "HOOK_")
}
