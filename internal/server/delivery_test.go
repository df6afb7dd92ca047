package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
)

// TestDeliveryOfAHookRun: a run started by a webhook posts its result to
// the workflow's delivery URL, signed; the receiver's first answer is a
// 503, the retry succeeds, and both attempts are events of the run.
func TestDeliveryOfAHookRun(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []map[string]any
	got := make(chan struct{}, 4)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		wh, err := standardwebhooks.NewWebhook(hookSecret)
		if err != nil || wh.Verify(data, r.Header) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var b map[string]any
		_ = json.Unmarshal(data, &b)
		mu.Lock()
		bodies = append(bodies, b)
		first := len(bodies) == 1
		mu.Unlock()
		got <- struct{}{}
		if first {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(recv.Close)
	s := serveHooks(t, "DELIVERY_URL="+recv.URL+"/runs", "DELIVERY_SECRET="+hookSecret)

	a := s.do("POST", "/hooks/delivered/hook", "", `{"n": 21}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusAccepted, a.status, string(a.body))
	id := a.json(t)["execution_id"].(string)
	for range 2 {
		select {
		case <-got:
		case <-time.After(30 * time.Second):
			t.Fatalf("no delivery within 30 s:\n%s", s.log())
		}
	}
	mu.Lock()
	require.Len(t, bodies, 2)
	last := bodies[1]
	mu.Unlock()
	require.Equal(t, "run.completed", last["type"])
	data := last["data"].(map[string]any)
	require.Equal(t, id, data["execution_id"])
	require.Equal(t, map[string]any{"n": float64(42)}, data["outputs"])

	// The attempts are recorded on the run, after its end.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var types []string
		for _, e := range s.readEvents(t, id, "", func(sse) bool { return false }) {
			if e.event == "delivery_attempt" || e.event == "delivery_succeeded" {
				types = append(types, e.event)
			}
		}
		if len(types) == 3 {
			require.Equal(t, []string{"delivery_attempt", "delivery_attempt", "delivery_succeeded"}, types)
			break
		}
		require.True(t, time.Now().Before(deadline), "the delivery events were not recorded: %v", types)
		time.Sleep(20 * time.Millisecond) // polling another process's store
	}
}
