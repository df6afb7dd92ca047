package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	var syntax *json.SyntaxError
	require.ErrorAs(t, json.Unmarshal([]byte("{x"), &map[string]any{}), &syntax)
	long := strings.Repeat("x", 5000)

	tests := []struct {
		name      string
		err       error
		category  string
		permanent bool
		contains  string
	}{
		{"401", status(401, ""), CategoryAuthentication, true, "test: authentication failed (401 Unauthorized: nope)"},
		{"403", status(403, ""), CategoryAuthentication, true, "authentication failed"},
		{"429", status(429, "1"), CategoryRateLimit, false, "rate limited"},
		{"500", status(500, ""), CategoryHTTP, false, "server error"},
		{"400", status(400, ""), CategoryHTTP, true, "request failed (400 Bad Request: nope)"},
		{"408", status(408, ""), CategoryTimeout, false, "timed out"},
		{"malformed", &MalformedError{Status: 200, Body: []byte("<html>"), Err: errors.New("the body is not JSON")}, CategoryMalformed, false, "test: malformed reply: the body is not JSON"},
		{"json syntax", fmt.Errorf("decoding: %w", syntax), CategoryMalformed, false, "malformed reply"},
		{"deadline", fmt.Errorf("post: %w", context.DeadlineExceeded), CategoryTimeout, false, "did not answer in time"},
		{"cancelled", context.Canceled, node.CategoryCancelled, false, "canceled"},
		{"connection", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, node.CategoryConnection, false, "connection refused"},
		{"other", errors.New("stream cut"), CategoryHTTP, false, "test: stream cut"},
		{"node error passes", Invalidf("bad request"), node.CategoryValidation, true, "bad request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := Classify("test", tt.err)
			require.Equal(t, tt.category, e.Category)
			require.Equal(t, tt.category, e.Code)
			require.Equal(t, tt.permanent, e.Permanent)
			require.Contains(t, e.Message, tt.contains)
		})
	}

	t.Run("details", func(t *testing.T) {
		t.Parallel()
		e := Classify("test", &StatusError{Status: 429, Header: http.Header{"Retry-After": {"3"}}, Body: []byte(long)})
		require.Equal(t, 429, e.Details["status"])
		require.Len(t, e.Details["body"], MaxErrorBody, "the body is clipped to 2 KiB")
		require.Equal(t, 3.0, e.Details["retry_after_seconds"])
		require.Equal(t, int64(3e9), int64(e.RetryAfter))
	})
	require.Nil(t, Classify("test", nil))
}

// roundTrip fakes the next step of a middleware chain.
func roundTrip(status int, contentType, body string) func(*http.Request) (*http.Response, error) {
	return func(*http.Request) (*http.Response, error) {
		h := http.Header{}
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}, nil
	}
}

func TestGuard(t *testing.T) {
	t.Parallel()
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/v1/chat/completions", nil)
	require.NoError(t, err)

	t.Run("error status", func(t *testing.T) {
		t.Parallel()
		_, err := Guard(req, roundTrip(503, "text/plain", "overloaded"))
		var se *StatusError
		require.ErrorAs(t, err, &se)
		require.Equal(t, 503, se.Status)
		require.Equal(t, "overloaded", string(se.Body))
	})
	t.Run("JSON passes", func(t *testing.T) {
		t.Parallel()
		res, err := Guard(req, roundTrip(200, "text/plain", `{"ok":true}`))
		require.NoError(t, err)
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.Equal(t, `{"ok":true}`, string(b))
		require.Equal(t, "application/json", res.Header.Get("Content-Type"))
	})
	t.Run("not JSON", func(t *testing.T) {
		t.Parallel()
		_, err := Guard(req, roundTrip(200, "application/json", `<html>proxy error</html>`))
		var me *MalformedError
		require.ErrorAs(t, err, &me)
		require.Contains(t, me.Error(), "not JSON")
		require.Equal(t, "<html>proxy error</html>", string(me.Body))
	})
	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		_, err := Guard(req, roundTrip(200, "application/json", ""))
		require.ErrorContains(t, err, "empty")
	})
	t.Run("streams pass untouched", func(t *testing.T) {
		t.Parallel()
		res, err := Guard(req, roundTrip(200, "text/event-stream; charset=utf-8", "data: {\n\n"))
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		require.Equal(t, "data: {\n\n", string(b))
	})
	t.Run("transport errors pass", func(t *testing.T) {
		t.Parallel()
		boom := errors.New("boom")
		_, err := Guard(req, func(*http.Request) (*http.Response, error) { return nil, boom })
		require.ErrorIs(t, err, boom)
	})
}

func TestAPIMessage(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"error":{"message":"OpenAI style","type":"x"}}`:                   "OpenAI style",
		`{"type":"error","error":{"type":"x","message":"Anthropic style"}}`: "Anthropic style",
		`{"error":"plain string"}`:                                          "plain string",
		`{"message":"top level"}`:                                           "top level",
		`not json`:                                                          "",
	} {
		require.Equal(t, want, apiMessage([]byte(body)), body)
	}
}
