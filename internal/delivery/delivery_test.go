package delivery_test

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/delivery"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var secret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("a delivery secret of 32 bytes..."))

// receiver answers with the statuses given, in turn (the last one after
// that), and checks each request's Standard Webhooks signature.
type receiver struct {
	t        *testing.T
	statuses []int
	mu       sync.Mutex
	got      []http.Header
	bodies   []string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(rc.t, err)
	require.NoError(rc.t, wh.Verify(body, r.Header), "every attempt is signed")
	require.Equal(rc.t, "application/json", r.Header.Get("Content-Type"))
	rc.mu.Lock()
	n := len(rc.got)
	rc.got = append(rc.got, r.Header.Clone())
	rc.bodies = append(rc.bodies, string(body))
	rc.mu.Unlock()
	w.WriteHeader(rc.statuses[min(n, len(rc.statuses)-1)])
}

// now waits for nothing: the backoff is reported, not slept.
func now(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- time.Now()
	return ch
}

func TestSend(t *testing.T) {
	t.Parallel()
	policy := delivery.Policy{Retries: 3, Backoff: time.Second, Timeout: 5 * time.Second}
	tests := []struct {
		name     string
		statuses []int
		ok       bool
		attempts []int // the status of each attempt
	}{
		{"first attempt", []int{200}, true, []int{200}},
		{"a failure then success", []int{503, 204}, true, []int{503, 204}},
		{"rate limited, then success", []int{429, 408, 200}, true, []int{429, 408, 200}},
		{"refused: no retry", []int{400}, false, []int{400}},
		{"always failing: bounded", []int{500}, false, []int{500, 500, 500, 500}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := &receiver{t: t, statuses: tc.statuses}
			srv := httptest.NewServer(rc)
			defer srv.Close()
			var seen []delivery.Attempt
			s := &delivery.Sender{Client: srv.Client(), After: now}
			err := s.Send(t.Context(), srv.URL, secret, delivery.Message{ID: "run_1", Body: []byte(`{"type":"run.completed"}`)}, policy,
				func(a delivery.Attempt) { seen = append(seen, a) })
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, delivery.ErrGaveUp)
			}
			var statuses []int
			for i, a := range seen {
				statuses = append(statuses, a.Status)
				require.Equal(t, i+1, a.N)
				if i < len(seen)-1 {
					want := time.Second << i
					require.InDelta(t, float64(want), float64(a.Retry), float64(want)/5, "attempt %d waits about %s", a.N, want)
				} else {
					require.Zero(t, a.Retry, "no wait after the last attempt")
				}
			}
			require.Equal(t, tc.attempts, statuses)
			for _, h := range rc.got {
				require.Equal(t, "run_1", h.Get("webhook-id"), "one id across attempts")
			}
		})
	}
}

func TestSendStopsWithItsContext(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	never := func(time.Duration) <-chan time.Time { cancel(); return nil }
	s := &delivery.Sender{Client: srv.Client(), After: never}
	err := s.Send(ctx, srv.URL, secret, delivery.Message{ID: "m", Body: []byte(`{}`)}, delivery.Policy{Retries: 5, Backoff: time.Hour, Timeout: time.Second}, nil)
	require.ErrorIs(t, err, context.Canceled)
}

func TestSendNeedsAStandardSecret(t *testing.T) {
	t.Parallel()
	err := (&delivery.Sender{}).Send(t.Context(), "http://127.0.0.1:1", "whsec_!!!", delivery.Message{ID: "m"}, delivery.Policy{}, nil)
	require.ErrorContains(t, err, "not a Standard Webhooks secret")
}

// TestSendGoesOn: a delivery another process began goes on with its
// attempt count and backoff, after the wait it was due.
func TestSendGoesOn(t *testing.T) {
	t.Parallel()
	rc := &receiver{t: t, statuses: []int{503}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	var waits []time.Duration
	after := func(d time.Duration) <-chan time.Time { waits = append(waits, d); return now(d) }
	var seen []delivery.Attempt
	s := &delivery.Sender{Client: srv.Client(), After: after}
	err := s.Send(t.Context(), srv.URL, secret, delivery.Message{ID: "run_1", Body: []byte(`{}`)},
		delivery.Policy{Retries: 3, Backoff: time.Second, Timeout: 5 * time.Second, Made: 2, Wait: 1500 * time.Millisecond},
		func(a delivery.Attempt) { seen = append(seen, a) })
	require.ErrorIs(t, err, delivery.ErrGaveUp)
	require.Len(t, seen, 2, "attempts 3 and 4 of 4")
	require.Equal(t, 3, seen[0].N)
	require.Equal(t, 4, seen[1].N)
	require.Equal(t, 1500*time.Millisecond, waits[0], "the wait it was due first")
	require.InDelta(t, float64(4*time.Second), float64(seen[0].Retry), float64(time.Second), "the third attempt's backoff: 4s")
}

// TestSendOnce: with Once, a failed attempt that is to be retried returns
// when, without waiting.
func TestSendOnce(t *testing.T) {
	t.Parallel()
	rc := &receiver{t: t, statuses: []int{503, 200}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	s := &delivery.Sender{Client: srv.Client(), After: func(time.Duration) <-chan time.Time { t.Fatal("Once does not wait"); return nil }}
	p := delivery.Policy{Retries: 3, Backoff: time.Second, Timeout: 5 * time.Second, Once: true}
	err := s.Send(t.Context(), srv.URL, secret, delivery.Message{ID: "run_1", Body: []byte(`{}`)}, p, nil)
	var later *delivery.LaterError
	require.ErrorAs(t, err, &later)
	require.Equal(t, 1, later.Attempt.N)
	require.InDelta(t, float64(time.Second), float64(later.Attempt.Retry), float64(time.Second)/5)
	p.Made = 1
	require.NoError(t, s.Send(t.Context(), srv.URL, secret, delivery.Message{ID: "run_1", Body: []byte(`{}`)}, p, nil))
	require.Len(t, rc.got, 2)
}
