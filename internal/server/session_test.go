package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/auth"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/server"
)

// sessionServer serves testdata/flows with token authentication and
// returns its URL and an admin token.
func sessionServer(t *testing.T) (string, string) {
	t.Helper()
	url, tok, _ := tokenServer(t, true)
	return url, tok
}

// tokenServer is sessionServer that also returns the server's runner;
// cleanStop requires the server to stop without an error (a test that
// closes the runner's store under it does not).
func tokenServer(t *testing.T, cleanStop bool) (string, string, *runner.Runner) {
	t.Helper()
	r, err := runner.Open(runner.Config{Dir: filepath.Join(t.TempDir(), ".skein")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	tok, _, err := r.Tokens().Create(t.Context(), auth.Admin, "session test")
	require.NoError(t, err)
	srv, err := server.New(server.Config{Runner: r, Workflows: copyFlows(t), Auth: r.Tokens(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Grace: time.Second})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; cleanStop {
			require.NoError(t, err)
		}
	})
	return "http://" + ln.Addr().String(), tok, r
}

func call(t *testing.T, method, url, body string, hdr map[string]string, cookies ...*http.Cookie) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

// TestSession: the web viewer's sign-in keeps the token in an HttpOnly,
// SameSite=Strict cookie that authenticates API requests; a request that
// changes something must also carry the session's CSRF token.
func TestSession(t *testing.T) {
	t.Parallel()
	base, tok := sessionServer(t)

	// The page is served without a token; the API is not.
	page := call(t, "GET", base+"/", "", nil)
	require.Equal(t, http.StatusOK, page.StatusCode)
	require.Contains(t, page.Header.Get("Content-Type"), "text/html")
	require.Contains(t, page.Header.Get("Content-Security-Policy"), "default-src 'none'")
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/assets/app.js", "", nil).StatusCode)
	require.Equal(t, http.StatusUnauthorized, call(t, "GET", base+"/assets/../api/runs", "", nil).StatusCode)
	require.Equal(t, http.StatusUnauthorized, call(t, "GET", base+"/api/runs", "", nil).StatusCode)
	require.Equal(t, http.StatusUnauthorized, call(t, "GET", base+"/api/session", "", nil).StatusCode)

	// A wrong token signs nobody in.
	bad := call(t, "POST", base+"/api/session", `{"token": "skn_000000000000_nope"}`, nil)
	require.Equal(t, http.StatusUnauthorized, bad.StatusCode)
	require.Empty(t, bad.Cookies())

	in := call(t, "POST", base+"/api/session", `{"token": "`+tok+`"}`, nil)
	require.Equal(t, http.StatusOK, in.StatusCode)
	var cookie *http.Cookie
	for _, c := range in.Cookies() {
		if c.Name == "skein_session" {
			cookie = c
		}
	}
	require.NotNil(t, cookie, "sign-in sets the session cookie")
	require.True(t, cookie.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, cookie.SameSite)
	require.False(t, cookie.Secure, "over plain HTTP the cookie could not be sent back if it were Secure")
	// Behind a TLS proxy (docs/deploy.md), which says so, it is Secure.
	for _, h := range []map[string]string{{"X-Forwarded-Proto": "https"}, {"Forwarded": `for=192.0.2.60;proto=https;by=203.0.113.43`}} {
		proxied := call(t, "POST", base+"/api/session", `{"token": "`+tok+`"}`, h)
		require.Equal(t, http.StatusOK, proxied.StatusCode)
		require.NotEmpty(t, proxied.Cookies())
		require.True(t, proxied.Cookies()[0].Secure, "%v", h)
	}
	data, err := io.ReadAll(in.Body)
	require.NoError(t, err)
	require.NotContains(t, string(data), tok, "the answer does not repeat the token")
	csrf := call(t, "GET", base+"/api/session", "", nil, cookie)
	require.Equal(t, http.StatusOK, csrf.StatusCode)
	body, err := io.ReadAll(csrf.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), `"scope":"admin"`)
	token := between(string(body), `"csrf":"`, `"`)
	require.Len(t, token, 64)

	// The cookie reads.
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/api/runs", "", nil, cookie).StatusCode)
	// It does not change anything without the CSRF token, or with another
	// (its first character changed: "00" put in its place was the token
	// itself for one token in 256).
	other := "1" + token[1:]
	if token[0] == '1' {
		other = "0" + token[1:]
	}
	for _, h := range []map[string]string{nil, {"X-Skein-CSRF": other}} {
		res := call(t, "POST", base+"/api/workflows/quick/runs", "{}", h, cookie)
		require.Equal(t, http.StatusForbidden, res.StatusCode)
		b, _ := io.ReadAll(res.Body)
		require.Contains(t, string(b), `"code":"csrf"`)
	}
	// With it, it does.
	require.Equal(t, http.StatusAccepted, call(t, "POST", base+"/api/workflows/quick/runs", "{}", map[string]string{"X-Skein-CSRF": token}, cookie).StatusCode)
	// A bearer token needs no CSRF token (a program, not a browser).
	require.Equal(t, http.StatusAccepted, call(t, "POST", base+"/api/workflows/quick/runs", "{}", map[string]string{"Authorization": "Bearer " + tok}).StatusCode)

	// Signing out clears the cookie.
	out := call(t, "DELETE", base+"/api/session", "", nil, cookie)
	require.Equal(t, http.StatusNoContent, out.StatusCode)
	require.Equal(t, -1, out.Cookies()[0].MaxAge)
}

func between(s, from, to string) string {
	_, after, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, to)
	return v
}

// TestStoreDownIsNotAnInvalidToken: while the store cannot be read, a
// request with a token is answered 503 unavailable with Retry-After, not
// 401: the token may be fine. /readyz, without a token, says not ready and
// nothing of why.
func TestStoreDownIsNotAnInvalidToken(t *testing.T) {
	t.Parallel()
	base, tok, r := tokenServer(t, false)
	bearer := map[string]string{"Authorization": "Bearer " + tok}
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/api/runs", "", bearer).StatusCode, "the store answers")

	require.NoError(t, r.Close()) // the database is gone
	res := call(t, "GET", base+"/api/runs", "", bearer)
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.Equal(t, "1", res.Header.Get("Retry-After"))
	var p struct{ Code string }
	require.NoError(t, json.NewDecoder(res.Body).Decode(&p))
	require.Equal(t, "unavailable", p.Code)

	res = call(t, "GET", base+"/readyz", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.Equal(t, "1", res.Header.Get("Retry-After"))
	var ready struct{ Code, Detail string }
	require.NoError(t, json.NewDecoder(res.Body).Decode(&ready))
	require.Equal(t, "not_ready", ready.Code)
	require.Equal(t, "not ready", ready.Detail, "the reason is logged, not told to an anonymous caller")
	res = call(t, "GET", base+"/api/runs", "", map[string]string{"Authorization": "Bearer not-a-token"})
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "a token that is not one is refused without the store")
}

// TestBodyOfTheWrongTypeSaysWhatToSend: a request body whose field has the
// wrong JSON type is refused naming the field and what it takes, not the
// server's Go types.
func TestBodyOfTheWrongTypeSaysWhatToSend(t *testing.T) {
	t.Parallel()
	base, tok := sessionServer(t)
	res := call(t, "POST", base+"/api/runs/nope/cancel", `{"let_finish": "yes"}`, map[string]string{"Authorization": "Bearer " + tok})
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	var p struct{ Code, Detail string }
	require.NoError(t, json.NewDecoder(res.Body).Decode(&p))
	require.Equal(t, "bad_request", p.Code)
	require.Equal(t, "field let_finish must be true or false, not string", p.Detail)
}
