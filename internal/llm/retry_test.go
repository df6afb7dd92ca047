package llm

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
)

// scripted answers calls from a list of errors, then succeeds.
type scripted struct {
	errs  []error
	calls int
}

func (s *scripted) call(context.Context) (*Response, error) {
	s.calls++
	if s.calls <= len(s.errs) {
		return nil, s.errs[s.calls-1]
	}
	return &Response{Text: "ok"}, nil
}

func status(code int, retryAfter string) error {
	h := http.Header{}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	return &StatusError{Status: code, Header: h, Body: []byte(`{"error":{"message":"nope"}}`)}
}

type recorder struct{ waits []time.Duration }

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.waits = append(r.waits, d)
	return ctx.Err()
}

func TestRetryPolicyDo(t *testing.T) {
	t.Parallel()
	fixed := func(n int) time.Duration { return time.Duration(n) * 100 * time.Millisecond }
	tests := []struct {
		name      string
		policy    RetryPolicy
		errs      []error
		wantCalls int
		wantWaits []time.Duration
		wantCat   string // "" for success
	}{
		{name: "success", wantCalls: 1},
		{name: "429 waits Retry-After", errs: []error{status(429, "2")}, wantCalls: 2, wantWaits: []time.Duration{2 * time.Second}},
		{name: "5xx backs off", errs: []error{status(500, ""), status(503, ""), status(529, "")}, wantCalls: 4,
			wantWaits: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}},
		{name: "at most three retries", errs: []error{status(500, ""), status(500, ""), status(500, ""), status(500, "")},
			wantCalls: 4, wantWaits: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}, wantCat: CategoryHTTP},
		{name: "MaxRetries", policy: RetryPolicy{MaxRetries: 1}, errs: []error{status(429, "1"), status(429, "1")},
			wantCalls: 2, wantWaits: []time.Duration{time.Second}, wantCat: CategoryRateLimit},
		{name: "no retries", policy: RetryPolicy{MaxRetries: -1}, errs: []error{status(500, "")}, wantCalls: 1, wantCat: CategoryHTTP},
		{name: "a long Retry-After is left to the engine", errs: []error{status(429, "3600")}, wantCalls: 1, wantCat: CategoryRateLimit},
		{name: "401 never", errs: []error{status(401, "")}, wantCalls: 1, wantCat: CategoryAuthentication},
		{name: "400 never", errs: []error{status(400, "")}, wantCalls: 1, wantCat: CategoryHTTP},
		{name: "malformed never", errs: []error{&MalformedError{Err: errors.New("bad")}}, wantCalls: 1, wantCat: CategoryMalformed},
		{name: "timeout never", errs: []error{context.DeadlineExceeded}, wantCalls: 1, wantCat: CategoryTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			p := tt.policy
			p.Sleep = rec.sleep
			p.Backoff = fixed
			s := &scripted{errs: tt.errs}
			resp, err := p.Do(context.Background(), "test", s.call)
			require.Equal(t, tt.wantCalls, s.calls, "calls")
			require.Equal(t, tt.wantWaits, rec.waits, "waits")
			if tt.wantCat == "" {
				require.NoError(t, err)
				require.Equal(t, "ok", resp.Text)
				return
			}
			var e *node.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tt.wantCat, e.Category)
			if tt.wantCalls > 1 {
				require.Equal(t, tt.wantCalls, e.Details["attempts"])
			}
		})
	}
}

func TestRetryPolicyDeadlineWhileWaiting(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	s := &scripted{errs: []error{status(429, "30")}}
	_, err := RetryPolicy{}.Do(ctx, "test", s.call) // the real sleep: the deadline cuts it short
	var e *node.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, CategoryTimeout, e.Category)
	require.Contains(t, e.Message, "while waiting to retry")
	require.Contains(t, e.Message, "rate limited")
	require.Equal(t, 1, s.calls)
}

func TestDefaultBackoff(t *testing.T) {
	t.Parallel()
	for n, base := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 10: 30 * time.Second} {
		for range 20 {
			d := DefaultBackoff(n)
			require.GreaterOrEqual(t, d, base*8/10, "retry %d", n)
			require.LessOrEqual(t, d, base*12/10, "retry %d", n)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{"seconds", map[string]string{"Retry-After": "1"}, time.Second, true},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{"milliseconds win", map[string]string{"Retry-After": "1", "Retry-After-Ms": "250"}, 250 * time.Millisecond, true},
		{"HTTP date", map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second, true},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0, true},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
		{"negative", map[string]string{"Retry-After": "-3"}, 0, false},
		{"absent", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			got, ok := retryAfterAt(h, now)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}
