package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/node/nodetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	// The shared transports keep idle connections (and their goroutines)
	// by design; close them before looking for leaks.
	transports.Lock()
	for _, t := range transports.m {
		t.CloseIdleConnections()
	}
	transports.Unlock()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// event is one call.Emit.
type event struct {
	kind string
	data map[string]any
}

// bundle is what a test needs: a server with the routes below, and the
// events the last call emitted.
type bundle struct {
	srv    *httptest.Server
	mu     sync.Mutex
	events []event
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{}
	b.srv = httptest.NewServer(testRoutes())
	t.Cleanup(b.srv.Close)
	return b
}

// url is the test server's URL for path.
func (b *bundle) url(path string) string { return b.srv.URL + path }

// call makes a call of node fetch in run run1 with the given parameters.
func (b *bundle) call(params map[string]any) *node.Call {
	return &node.Call{
		RunID: "run1", NodeID: "fetch", Visit: 1, Attempt: 1,
		Params:         params,
		IdempotencyKey: "run1/fetch/1",
		Emit: func(kind string, data map[string]any) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.events = append(b.events, event{kind, data})
		},
		Redact:   func(s string) string { return s },
		Eval:     func(string) (any, error) { return nil, errors.New("the http kind evaluates no expressions") },
		Now:      time.Now,
		Services: &node.Services{},
	}
}

func (b *bundle) emitted() []event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]event(nil), b.events...)
}

// run runs the http kind once. It fails the test if Run returns an error
// that is not a *node.Error.
func run(t *testing.T, call *node.Call) (map[string]any, *node.Error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return runCtx(t, ctx, call)
}

func runCtx(t *testing.T, ctx context.Context, call *node.Call) (map[string]any, *node.Error) {
	t.Helper()
	k, ok := node.Default.New(Kind)
	require.True(t, ok, "the http kind is registered with a constructor")
	// The kind gets its parameters coerced, as the engine gives them.
	params, err := nodetest.Params(&Spec, call.Params)
	var out map[string]any
	if err == nil {
		c := *call
		c.Params = params
		out, err = k.Run(ctx, &c)
	}
	if err == nil {
		return out, nil
	}
	var ne *node.Error
	require.ErrorAs(t, err, &ne, "Run returns node errors")
	require.Nil(t, out, "a failed call has no output")
	return nil, ne
}

// testRoutes serves what the tests ask for.
func testRoutes() nethttp.Handler {
	mux := nethttp.NewServeMux()
	write := func(ctype, body string) nethttp.HandlerFunc {
		return func(w nethttp.ResponseWriter, _ *nethttp.Request) {
			w.Header().Set("Content-Type", ctype)
			w.Header().Add("X-Request-Id", "first")
			w.Header().Add("X-Request-Id", "second")
			io.WriteString(w, body)
		}
	}
	mux.Handle("/json", write("application/json; charset=utf-8", `{"id": 12345678901234567, "ok": true, "ratio": 0.5, "tags": ["a"]}`))
	mux.Handle("/problem", write("application/problem+json", `{"title": "gone"}`))
	mux.Handle("/json-as-text", write("text/plain", ` [1, 2.5, {"x": null}] `))
	mux.Handle("/number-as-text", write("text/plain", `42`))
	mux.Handle("/bad-json", write("application/json", `{"oops`))
	mux.Handle("/text", write("text/plain; charset=utf-8", "hello, world"))
	mux.Handle("/html", write("text/html", "<p>[hi]</p>"))
	mux.Handle("/big", write("text/plain", strings.Repeat("a", 100)))
	mux.Handle("/big-json", write("application/json", `{"data": "`+strings.Repeat("x", 100)+`"}`))
	mux.Handle("/runes", write("text/plain", "ééééé")) // two bytes each

	// /echo answers with what it received.
	mux.HandleFunc("/echo", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		body, _ := io.ReadAll(r.Body)
		user, pass, basic := r.BasicAuth()
		_, hasKey := r.Header["Idempotency-Key"]
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"method":          r.Method,
			"query":           r.URL.Query(),
			"body":            string(body),
			"content_type":    r.Header.Get("Content-Type"),
			"has_key":         hasKey,
			"idempotency_key": r.Header.Get("Idempotency-Key"),
			"authorization":   r.Header.Get("Authorization"),
			"basic":           basic,
			"user":            user,
			"password":        pass,
			"user_agent":      r.Header.Get("User-Agent"),
			"x_trace":         r.Header.Values("X-Trace"),
			"x_one":           r.Header.Get("X-One"),
			"host":            r.Host,
		})
	})

	// /status/{code} answers with that status; ?ra= sets Retry-After,
	// ?size= sends that many bytes, else a small JSON body.
	mux.HandleFunc("/status/{code}", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		code, _ := strconv.Atoi(r.PathValue("code"))
		if ra := r.URL.Query().Get("ra"); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		if n, _ := strconv.Atoi(r.URL.Query().Get("size")); n > 0 {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(code)
			io.WriteString(w, strings.Repeat("e", n))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error": "status %d"}`, code)
	})

	// /answer?body=JSON answers 200 with that JSON body.
	mux.HandleFunc("/answer", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, r.URL.Query().Get("body"))
	})
	// /refuse answers 403 with credentials, and a secret, in its headers.
	mux.HandleFunc("/refuse", func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		w.Header().Set("Set-Cookie", "session=abc123")
		w.Header().Set("Authorization", "Bearer abc")
		w.Header().Set("X-Echo", "your token is s3cret-value")
		w.Header().Set("X-Api-Key", "k-1")
		w.Header().Set("X-Request-Id", "req-7")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(nethttp.StatusForbidden)
		io.WriteString(w, `{"error": "forbidden"}`)
	})

	// /hops/{n} redirects n times, then answers "arrived".
	mux.HandleFunc("/hops/{n}", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n == 0 {
			io.WriteString(w, "arrived")
			return
		}
		nethttp.Redirect(w, r, "/hops/"+strconv.Itoa(n-1), nethttp.StatusFound)
	})
	mux.HandleFunc("/loop", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		nethttp.Redirect(w, r, "/loop", nethttp.StatusFound)
	})
	// /to?target=URL&code=N redirects to target (with 302 unless code).
	mux.HandleFunc("/to", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		code := nethttp.StatusFound
		if c, _ := strconv.Atoi(r.URL.Query().Get("code")); c != 0 {
			code = c
		}
		nethttp.Redirect(w, r, r.URL.Query().Get("target"), code)
	})

	// /block answers only when the request is given up.
	mux.HandleFunc("/block", func(_ nethttp.ResponseWriter, r *nethttp.Request) {
		<-r.Context().Done()
	})
	return mux
}

func TestRunResponseBody(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name   string
		method string
		path   string
		want   any
	}{
		{"JSON content type is parsed, whole numbers stay exact", "GET", "/json",
			map[string]any{"id": 12345678901234567, "ok": true, "ratio": 0.5, "tags": []any{"a"}}},
		{"a +json content type is parsed", "GET", "/problem", map[string]any{"title": "gone"}},
		{"an array is parsed whatever the content type", "GET", "/json-as-text", []any{1, 2.5, map[string]any{"x": nil}}},
		{"a bare number under text/plain stays text", "GET", "/number-as-text", "42"},
		{"broken JSON stays text", "GET", "/bad-json", `{"oops`},
		{"text stays text", "GET", "/text", "hello, world"},
		{"HTML stays text", "GET", "/html", "<p>[hi]</p>"},
		{"HEAD has an empty body", "HEAD", "/json", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := run(t, b.call(map[string]any{"method": tt.method, "url": b.url(tt.path)}))
			require.Nil(t, err)
			require.Equal(t, 200, out["status"])
			require.Equal(t, tt.want, out["body"])
			require.Equal(t, false, out["truncated"])
			headers, ok := out["headers"].(map[string]any)
			require.True(t, ok, "headers is a map, got %T", out["headers"])
			require.Equal(t, "first", headers["x-request-id"], "headers keep the first value under a lower-case name")
			require.Contains(t, headers, "content-type")
		})
	}
}

func TestRunRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name   string
		params map[string]any
		want   map[string]any // fields of the echo
	}{
		{"GET sends no idempotency key",
			map[string]any{},
			map[string]any{"method": "GET", "has_key": false, "body": "", "user_agent": "skein"}},
		{"POST json",
			map[string]any{"method": "POST", "json": map[string]any{"a": 1, "b": []any{true, nil}}},
			map[string]any{"method": "POST", "content_type": "application/json", "body": `{"a":1,"b":[true,null]}`,
				"has_key": true, "idempotency_key": "run1/fetch/1"}},
		{"PUT text body",
			map[string]any{"method": "PUT", "body": "hello"},
			map[string]any{"method": "PUT", "content_type": "text/plain; charset=utf-8", "body": "hello",
				"idempotency_key": "run1/fetch/1"}},
		{"PATCH form",
			map[string]any{"method": "PATCH", "form": map[string]any{"name": "Ada Lovelace", "tags": []any{"x", "y"}, "n": 3, "gone": nil}},
			map[string]any{"method": "PATCH", "content_type": "application/x-www-form-urlencoded",
				"body": "n=3&name=Ada+Lovelace&tags=x&tags=y", "idempotency_key": "run1/fetch/1"}},
		{"DELETE without a body still carries the key",
			map[string]any{"method": "DELETE"},
			map[string]any{"method": "DELETE", "body": "", "idempotency_key": "run1/fetch/1"}},
		{"the workflow's own idempotency key and content type win",
			map[string]any{"method": "POST", "json": []any{1},
				"headers": map[string]any{"idempotency-key": "mine", "Content-Type": "application/vnd.api+json"}},
			map[string]any{"idempotency_key": "mine", "content_type": "application/vnd.api+json", "body": "[1]"}},
		{"query is merged into the URL's query",
			map[string]any{"url": "/echo?keep=1&page=1", "query": map[string]any{"page": 2, "tags": []any{"a", "b"}, "flag": true}},
			map[string]any{"query": map[string]any{"keep": []any{"1"}, "page": []any{"2"}, "tags": []any{"a", "b"}, "flag": []any{"true"}}}},
		{"headers: a list sends the header once per value, numbers become text",
			map[string]any{"headers": map[string]any{"X-Trace": []any{"a", "b"}, "x-one": 1, "User-Agent": "robot/1", "Host": "api.example"}},
			map[string]any{"x_trace": []any{"a", "b"}, "x_one": "1", "user_agent": "robot/1", "host": "api.example"}},
		{"bearer auth",
			map[string]any{"auth": map[string]any{"type": "bearer", "token": "t0ken"}},
			map[string]any{"authorization": "Bearer t0ken"}},
		{"basic auth",
			map[string]any{"auth": map[string]any{"type": "Basic", "username": "ada", "password": "s3cret"}},
			map[string]any{"basic": true, "user": "ada", "password": "s3cret"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			params := map[string]any{"url": b.url("/echo")}
			for k, v := range tt.params {
				params[k] = v
			}
			if u, ok := params["url"].(string); ok && strings.HasPrefix(u, "/") {
				params["url"] = b.url(u)
			}
			out, err := run(t, b.call(params))
			require.Nil(t, err)
			got, ok := out["body"].(map[string]any)
			require.True(t, ok, "the echo is JSON, got %#v", out["body"])
			for k, want := range tt.want {
				require.Equal(t, want, got[k], "echo field %s", k)
			}
		})
	}
}

func TestRunExpectStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name    string
		status  int
		expect  any // nil: parameter left out
		wantErr string
	}{
		{"200 by default", 200, nil, ""},
		{"204 by default", 204, nil, ""},
		{"a listed status", 201, []any{201}, ""},
		{"a listed 404", 404, []any{200, 404}, ""},
		{"a class", 418, []any{"4xx"}, ""},
		{"a 2xx that is not listed fails", 200, []any{201}, "answered 200 OK, not one of expect_status 201"},
		{"a 404 by default fails", 404, nil, "answered 404 Not Found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			params := map[string]any{"url": b.url("/status/" + strconv.Itoa(tt.status))}
			if tt.expect != nil {
				params["expect_status"] = tt.expect
			}
			out, err := run(t, b.call(params))
			if tt.wantErr == "" {
				require.Nil(t, err)
				require.Equal(t, tt.status, out["status"])
				return
			}
			require.NotNil(t, err)
			require.Equal(t, node.CategoryHTTPStatus, err.Category)
			require.Equal(t, "http_"+strconv.Itoa(tt.status), err.Code)
			require.Contains(t, err.Message, tt.wantErr)
		})
	}
}

func TestRunStatusError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	clock := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	httpDate := clock.Add(30 * time.Second).Format(nethttp.TimeFormat)
	tests := []struct {
		name       string
		path       string
		code       string
		permanent  bool
		retryAfter time.Duration
		body       any
	}{
		{"404 is permanent", "/status/404?token=s3cret", "http_404", true, 0, map[string]any{"error": "status 404"}},
		{"400 is permanent", "/status/400", "http_400", true, 0, map[string]any{"error": "status 400"}},
		{"408 may be retried", "/status/408", "http_408", false, 0, map[string]any{"error": "status 408"}},
		{"429 waits for Retry-After", "/status/429?ra=7", "http_429", false, 7 * time.Second, map[string]any{"error": "status 429"}},
		{"503 with Retry-After in seconds", "/status/503?ra=2", "http_503", false, 2 * time.Second, map[string]any{"error": "status 503"}},
		{"503 with Retry-After as a date", "/status/503?ra=" + strings.ReplaceAll(httpDate, " ", "+"), "http_503", false, 30 * time.Second, map[string]any{"error": "status 503"}},
		{"503 with an unreadable Retry-After", "/status/503?ra=soon", "http_503", false, 0, map[string]any{"error": "status 503"}},
		{"500 without Retry-After", "/status/500", "http_500", false, 0, map[string]any{"error": "status 500"}},
		{"a long error body is cut to 2 KiB", "/status/502?size=5000", "http_502", false, 0, strings.Repeat("e", 2048)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			call := b.call(map[string]any{"url": b.url(tt.path)})
			call.Now = func() time.Time { return clock }
			_, err := run(t, call)
			require.NotNil(t, err)
			status, _ := strconv.Atoi(strings.TrimPrefix(tt.code, "http_"))
			base := b.url(tt.path[:strings.IndexAny(tt.path+"?", "?")])
			require.Equal(t, node.CategoryHTTPStatus, err.Category)
			require.Equal(t, tt.code, err.Code)
			require.Equal(t, "GET "+base+" answered "+strconv.Itoa(status)+" "+nethttp.StatusText(status), err.Message)
			require.Equal(t, tt.permanent, err.Permanent, "permanent")
			require.Equal(t, tt.retryAfter, err.RetryAfter, "RetryAfter")
			require.Equal(t, status, err.Details["status"])
			require.Equal(t, base, err.Details["url"], "the URL in details has no query")
			require.Equal(t, tt.body, err.Details["body"])
			require.IsType(t, int64(0), err.Details["duration_ms"])
			if tt.retryAfter > 0 {
				require.Equal(t, tt.retryAfter.Milliseconds(), err.Details["retry_after_ms"])
			} else {
				require.NotContains(t, err.Details, "retry_after_ms")
			}
			require.NotContains(t, fmt.Sprint(err.Message, err.Details), "s3cret", "query secrets stay out of the error")
		})
	}
}

// TestStatusErrorHeaders: a failed response's error carries its headers,
// credentials and secrets masked, and the time the request took.
func TestStatusErrorHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	call := b.call(map[string]any{"url": b.url("/refuse")})
	call.Redact = func(s string) string { return strings.ReplaceAll(s, "s3cret-value", "***") }
	_, err := run(t, call)
	require.NotNil(t, err)
	require.Equal(t, "http_403", err.Code)
	headers, ok := err.Details["headers"].(map[string]any)
	require.True(t, ok, "details.headers: %#v", err.Details)
	require.Equal(t, "req-7", headers["x-request-id"], "other headers are kept, under lower-case names")
	require.Equal(t, "application/json", headers["content-type"])
	require.Equal(t, "***", headers["set-cookie"], "a session cookie is a credential")
	require.Equal(t, "***", headers["authorization"])
	require.Equal(t, "***", headers["x-api-key"])
	require.Equal(t, "***", headers["x-echo"], "a header that holds a secret is masked whole")
	require.NotContains(t, fmt.Sprint(err.Details), "s3cret")
	require.NotContains(t, fmt.Sprint(err.Details), "abc123")
	require.IsType(t, int64(0), err.Details["duration_ms"], "the time the request took")

	// After redirects, the error names where the answer came from.
	_, err = run(t, b.call(map[string]any{"url": b.url("/to?target=/refuse")}))
	require.NotNil(t, err)
	require.Equal(t, b.url("/to"), err.Details["url"])
	require.Equal(t, b.url("/refuse"), err.Details["final_url"])
}

// TestBusinessErrorWarns: a 2xx answer whose JSON body says the API
// refused (status >= 400, ok or success false, GraphQL errors) succeeds
// and records a warning naming the node and what the body said.
func TestBusinessErrorWarns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want string // "" for no warning
	}{
		{"status 500", `{"status": 500, "message": "db down"}`, `node fetch: the API answered "status": 500 (message: db down)`},
		{"ok false", `{"ok": false, "error": "channel_not_found"}`, `node fetch: the API answered "ok": false (error: channel_not_found)`},
		{"success false", `{"success": false}`, `node fetch: the API answered "success": false`},
		{"GraphQL errors", `{"data": null, "errors": [{"message": "Cannot query field"}]}`, `node fetch: the API answered GraphQL errors: Cannot query field`},
		{"status 200", `{"status": 200, "ok": true}`, ""},
		{"empty errors", `{"data": {}, "errors": []}`, ""},
		{"a list", `[{"ok": false}]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			out, err := run(t, b.call(map[string]any{"url": b.url("/answer?body=" + url.QueryEscape(tt.body))}))
			require.Nil(t, err, "the node succeeds")
			require.Equal(t, 200, out["status"])
			var warnings []event
			for _, ev := range b.emitted() {
				if ev.kind == "warning" {
					warnings = append(warnings, ev)
				}
			}
			if tt.want == "" {
				require.Empty(t, warnings)
				return
			}
			require.Len(t, warnings, 1)
			require.Equal(t, "api_warning", warnings[0].data["category"])
			require.Contains(t, warnings[0].data["message"], tt.want)
			require.Equal(t, 200, warnings[0].data["status"])
		})
	}
}

func TestRunRetryThenSuccess(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		if hits.Add(1) == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(nethttp.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	b := &bundle{srv: srv}

	_, err := run(t, b.call(map[string]any{"url": srv.URL}))
	require.NotNil(t, err)
	require.Equal(t, "http_503", err.Code)
	require.False(t, err.Permanent, "a 503 may be retried")
	require.Equal(t, 2*time.Second, err.RetryAfter)

	out, err := run(t, b.call(map[string]any{"url": srv.URL}))
	require.Nil(t, err)
	require.Equal(t, 200, out["status"])
	require.Equal(t, "ok", out["body"])
	require.Equal(t, int32(2), hits.Load())
}

func TestRunTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := runCtx(t, ctx, b.call(map[string]any{"url": b.url("/block?key=s3cret")}))
	require.NotNil(t, err)
	require.Equal(t, node.CategoryTimeout, err.Category)
	require.Equal(t, "timeout", err.Code)
	require.False(t, err.Permanent, "a timeout may be retried")
	require.Contains(t, err.Message, "GET "+b.url("/block")+": timed out after")
	require.NotContains(t, err.Message, "s3cret")
	require.Equal(t, b.url("/block"), err.Details["url"], "without its query")
	require.IsType(t, int64(0), err.Details["duration_ms"], "the time the request took")
}

func TestRunCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := runCtx(t, ctx, b.call(map[string]any{"url": b.url("/block")}))
	require.NotNil(t, err)
	require.Equal(t, node.CategoryCancelled, err.Category)
}

func TestRunConnectionRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	b := &bundle{}
	_, nerr := run(t, b.call(map[string]any{"url": "http://" + addr + "/x"}))
	require.NotNil(t, nerr)
	require.Equal(t, node.CategoryConnection, nerr.Category)
	require.Equal(t, "connection_refused", nerr.Code)
	require.False(t, nerr.Permanent, "the server may come up")
	require.Equal(t, "GET http://"+addr+"/x: connection refused", nerr.Message)
	require.Equal(t, "http://"+addr+"/x", nerr.Details["url"])
	require.IsType(t, int64(0), nerr.Details["duration_ms"], "the time the attempt took")
}

func TestRunDNSFailure(t *testing.T) {
	t.Parallel()
	b := &bundle{}
	_, err := run(t, b.call(map[string]any{"url": "http://no-such-host.invalid/"}))
	require.NotNil(t, err)
	require.Equal(t, node.CategoryConnection, err.Category)
	require.Equal(t, "dns", err.Code)
	require.Contains(t, err.Message, "cannot resolve host no-such-host.invalid")
}

func TestRunRedirects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name   string
		params map[string]any
		status int
		body   any
		header string // the location header expected, if any
	}{
		{"followed by default", map[string]any{"url": "/hops/3"}, 200, "arrived", ""},
		{"ten are followed", map[string]any{"url": "/hops/10"}, 200, "arrived", ""},
		{"not followed on request: the 302 is the answer", map[string]any{"url": "/hops/3", "follow_redirects": false}, 302, nil, "/hops/2"},
		{"a 307 re-sends the POST with its body and key",
			map[string]any{"url": "/to?code=307&target=/echo", "method": "POST", "body": "again"}, 200,
			map[string]any{"method": "POST", "body": "again", "idempotency_key": "run1/fetch/1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			params := map[string]any{}
			for k, v := range tt.params {
				params[k] = v
			}
			params["url"] = b.url(tt.params["url"].(string))
			out, err := run(t, b.call(params))
			require.Nil(t, err)
			require.Equal(t, tt.status, out["status"])
			if tt.header != "" {
				require.Equal(t, tt.header, out["headers"].(map[string]any)["location"])
			}
			switch want := tt.body.(type) {
			case nil:
			case map[string]any:
				got := out["body"].(map[string]any)
				for k, v := range want {
					require.Equal(t, v, got[k], "echo field %s", k)
				}
			default:
				require.Equal(t, want, out["body"])
			}
		})
	}

	t.Run("more than ten fail", func(t *testing.T) {
		t.Parallel()
		for _, path := range []string{"/hops/11", "/loop"} {
			_, err := run(t, b.call(map[string]any{"url": b.url(path)}))
			require.NotNil(t, err, path)
			require.Equal(t, "too_many_redirects", err.Code)
			require.True(t, err.Permanent)
			require.Contains(t, err.Message, "stopped after 10 redirects")
		}
	})
}

func TestRunBodyCap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		path      string
		maxBody   any
		body      any
		truncated bool
	}{
		{"a longer body is cut", "/big", 16, strings.Repeat("a", 16), true},
		{"the cap may be given as text", "/big", "16", strings.Repeat("a", 16), true},
		{"a body as long as the cap is whole", "/big", 100, strings.Repeat("a", 100), false},
		{"a cut JSON body is text", "/big-json", 12, `{"data": "xx`, true},
		{"a cut does not split a character", "/runes", 5, "éé", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			out, err := run(t, b.call(map[string]any{"url": b.url(tt.path), "max_body": tt.maxBody}))
			require.Nil(t, err)
			require.Equal(t, tt.body, out["body"])
			require.Equal(t, tt.truncated, out["truncated"])
			events := b.emitted()
			if !tt.truncated {
				require.Empty(t, events)
				return
			}
			require.Len(t, events, 1)
			require.Equal(t, "output_truncated", events[0].kind)
			require.Equal(t, "body", events[0].data["port"])
			limit, err2 := (node.Param{Type: node.Int}).Coerce(tt.maxBody)
			require.NoError(t, err2)
			require.Equal(t, int64(limit.(int)), events[0].data["limit_bytes"])
			require.Equal(t, b.url(tt.path), events[0].data["url"])
		})
	}
}

func TestRunInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		params   map[string]any
		services *node.Services
		category string
		message  string
	}{
		{"no url", map[string]any{"url": " "}, nil, node.CategoryValidation, "url is empty"},
		{"url is a list, read as its JSON text", map[string]any{"url": []any{"x"}}, nil, node.CategoryValidation, `url "[\"x\"]" must start with http:// or https://`},
		{"not http", map[string]any{"url": "ftp://example.com/f?key=s3cret"}, nil, node.CategoryValidation, `url "ftp://example.com/f" must start with http:// or https://`},
		{"no scheme", map[string]any{"url": "example.com/x"}, nil, node.CategoryValidation, "must start with http:// or https://"},
		{"no host", map[string]any{"url": "http:///path"}, nil, node.CategoryValidation, "has no host"},
		{"unparseable, secrets kept out", map[string]any{"url": "http://ada:s3cret@exa mple.com/%zz?token=s3cret"}, nil, node.CategoryValidation, `url "http://exa mple.com/%zz" is not valid`},
		{"unknown method", map[string]any{"url": "http://example.com", "method": "FETCH"}, nil, node.CategoryValidation, `parameter method: must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, not "FETCH"`},
		{"a method in lower case", map[string]any{"url": "http://example.com", "method": "post"}, nil, node.CategoryValidation, `not "post"`},
		{"two bodies", map[string]any{"url": "http://example.com", "json": 1, "body": "x"}, nil, node.CategoryValidation, "set at most one of json, body or form, not json and body"},
		{"form is not a map", map[string]any{"url": "http://example.com", "form": "a=b"}, nil, node.CategoryValidation, `parameter form: must be a map, not the string "a=b"`},
		{"query is not a map", map[string]any{"url": "http://example.com", "query": "a=b"}, nil, node.CategoryValidation, `parameter query: must be a map, not the string "a=b"`},
		{"nested query value", map[string]any{"url": "http://example.com", "query": map[string]any{"a": map[string]any{}}}, nil, node.CategoryValidation, "query.a is an object {}; values must be text, numbers or booleans"},
		{"bad header name", map[string]any{"url": "http://example.com", "headers": map[string]any{"X Bad": "1"}}, nil, node.CategoryValidation, `header name "X Bad" is not valid`},
		{"header injection", map[string]any{"url": "http://example.com", "headers": map[string]any{"X-A": "1\r\nX-B: 2"}}, nil, node.CategoryValidation, "line break"},
		{"unknown auth", map[string]any{"url": "http://example.com", "auth": map[string]any{"type": "digest"}}, nil, node.CategoryValidation, `auth type "digest" is not bearer or basic`},
		{"bearer without token", map[string]any{"url": "http://example.com", "auth": map[string]any{"type": "bearer"}}, nil, node.CategoryValidation, "auth.token is empty"},
		{"auth without type", map[string]any{"url": "http://example.com", "auth": map[string]any{"token": "x"}}, nil, node.CategoryValidation, "auth needs a type"},
		{"bad expect_status", map[string]any{"url": "http://example.com", "expect_status": []any{99}}, nil, node.CategoryValidation, "expect_status holds the number 99"},
		{"empty expect_status", map[string]any{"url": "http://example.com", "expect_status": []any{}}, nil, node.CategoryValidation, "expect_status is empty, so no status would count as success"},
		{"bad follow_redirects", map[string]any{"url": "http://example.com", "follow_redirects": "sometimes"}, nil, node.CategoryValidation, `parameter follow_redirects: must be true or false, not "sometimes"`},
		{"zero max_body", map[string]any{"url": "http://example.com", "max_body": 0}, nil, node.CategoryValidation, "max_body is 0"},
		{"fractional max_body", map[string]any{"url": "http://example.com", "max_body": 1.5}, nil, node.CategoryValidation, "parameter max_body: must be a whole number, not 1.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := &bundle{}
			call := b.call(tt.params)
			if tt.services != nil {
				call.Services = tt.services
			}
			_, err := run(t, call)
			require.NotNil(t, err)
			require.Equal(t, tt.category, err.Category)
			require.True(t, err.Permanent, "a bad parameter is not retried")
			require.Contains(t, err.Message, tt.message)
			require.NotContains(t, err.Message, "s3cret")
		})
	}
}

func TestSpecCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		params map[string]any
		want   []string // params named by the errors
	}{
		{"plain", map[string]any{"url": "http://x", "json": map[string]any{}, "auth": map[string]any{"type": "bearer", "token": "t"}, "expect_status": []any{200, "4xx"}}, nil},
		{"templates are let through", map[string]any{"url": "http://x", "auth": map[string]any{"type": "{{ inputs.t }}"}, "expect_status": []any{"{{ inputs.s }}"}, "max_body": "{{ inputs.n }}"}, nil},
		{"two bodies", map[string]any{"json": 1, "form": map[string]any{}}, []string{"body"}},
		{"unknown auth", map[string]any{"auth": map[string]any{"type": "digest"}}, []string{"auth"}},
		{"basic without username", map[string]any{"auth": map[string]any{"type": "basic"}}, []string{"auth"}},
		{"auth without type", map[string]any{"auth": map[string]any{"token": "t"}}, []string{"auth"}},
		{"bad status", map[string]any{"expect_status": []any{200, 1000, "6xx"}}, []string{"expect_status"}},
		{"no status", map[string]any{"expect_status": []any{}}, []string{"expect_status"}},
		{"negative max_body", map[string]any{"max_body": -1}, []string{"max_body"}},
		{"negative max_body as text", map[string]any{"max_body": "-1"}, []string{"max_body"}},
		{"a url that is not http", map[string]any{"url": "example.com/x"}, []string{"url"}},
		{"a url with a template is let through", map[string]any{"url": "{{ inputs.base }}/x"}, nil},
		{"a header value that is a map", map[string]any{"url": "http://x", "headers": map[string]any{"X-A": map[string]any{"k": "v"}}}, []string{"headers"}},
		{"a bad header name", map[string]any{"url": "http://x", "headers": map[string]any{"X Bad": "1"}}, []string{"headers"}},
		{"a query value that is a list of lists", map[string]any{"url": "http://x", "query": map[string]any{"a": []any{[]any{1}}}}, []string{"query"}},
		{"a form value that is a map", map[string]any{"url": "http://x", "form": map[string]any{"a": map[string]any{}}}, []string{"form"}},
		{"an empty bearer token", map[string]any{"url": "http://x", "auth": map[string]any{"type": "bearer", "token": ""}}, []string{"auth"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, e := range Spec.Check(tt.params) {
				if !e.Warning {
					got = append(got, e.Param)
				}
			}
			require.Equal(t, tt.want, got)
		})
	}
}

// A credential written in the file as it is gets a warning (every run
// records the node's parameters, and masks only secrets' values); one a
// template gives, from a secret or an input, gets none.
func TestSpecWarnsOfWrittenCredentials(t *testing.T) {
	t.Parallel()
	warned := func(p map[string]any) map[string]string {
		got := map[string]string{}
		for _, e := range Spec.Check(p) {
			require.True(t, e.Warning, "%s: %s is an error", e.Param, e.Message)
			got[e.Param] = e.Message
		}
		return got
	}
	got := warned(map[string]any{"url": "https://ada:hunter2@api.example/x",
		"auth":    map[string]any{"type": "bearer", "token": "tok-123"},
		"headers": map[string]any{"authorization": "Bearer tok-123", "X-Trace": "1"}})
	require.Equal(t, map[string]string{
		"url":     `the password in url is written in the file, so every run records it unmasked; keep it in a secret (secrets: [API_TOKEN]) and write auth: {type: basic, username: …, password: "{{ secrets.API_TOKEN }}"}`,
		"auth":    `the auth token is written in the file, so every run records it unmasked; keep it in a secret (secrets: [API_TOKEN]) and write token: "{{ secrets.API_TOKEN }}"`,
		"headers": `header authorization is written in the file, so every run records it unmasked; keep it in a secret (secrets: [API_TOKEN]) and write authorization: "Bearer {{ secrets.API_TOKEN }}"`,
	}, got)
	require.Contains(t, warned(map[string]any{"url": "http://x", "auth": map[string]any{"type": "basic", "username": "ada", "password": "pw"}})["auth"], "the auth password is written")
	require.Empty(t, warned(map[string]any{"url": "https://ada:{{ secrets.PW }}@api.example/x",
		"auth":    map[string]any{"type": "bearer", "token": "{{ secrets.TOKEN }}"},
		"headers": map[string]any{"Authorization": "Bearer {{ secrets.TOKEN }}"}}))
	require.Empty(t, warned(map[string]any{"url": "https://ada@api.example/x"}), "a user name without a password")
}

func TestRunUntrustedCertificate(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(testRoutes())
	t.Cleanup(srv.Close)
	b := &bundle{srv: srv}
	_, err := run(t, b.call(map[string]any{"url": b.url("/text")}))
	require.NotNil(t, err)
	require.Equal(t, node.CategoryConnection, err.Category)
	require.Equal(t, "tls", err.Code)
	require.True(t, err.Permanent, "retrying does not mend a certificate")
	require.Contains(t, err.Message, "GET "+b.url("/text")+": TLS: ")
}
