package runner_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/delivery"
	"github.com/skeinhq/skein/internal/runner"
)

var deliverySecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("the runner's delivery secret...."))

// receiver takes deliveries, checking their signatures; its first answer
// is a 503.
type receiver struct {
	t      *testing.T
	mu     sync.Mutex
	bodies []delivery.Body
	ids    []string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	wh, err := standardwebhooks.NewWebhook(deliverySecret)
	require.NoError(rc.t, err)
	require.NoError(rc.t, wh.Verify(data, r.Header), "the delivery is signed")
	var b delivery.Body
	require.NoError(rc.t, json.Unmarshal(data, &b))
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.bodies = append(rc.bodies, b)
	rc.ids = append(rc.ids, r.Header.Get("webhook-id"))
	if len(rc.bodies) == 1 {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// TestDeliveryRetriesAndRecords: a run's result is posted when it ends,
// signed; a failed first attempt is retried; each attempt is an event.
func TestDeliveryRetriesAndRecords(t *testing.T) {
	t.Parallel()
	rc := &receiver{t: t}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	env := map[string]string{"DELIVERY_SECRET": deliverySecret, "TOKEN": "tok-very-secret"}
	b := setupEnv(t, env)
	w, err := b.r.Load(b.write(t, "delivered.yaml", `version: 1
name: delivered
secrets: [DELIVERY_SECRET, TOKEN]
inputs:
  callback: {type: string, required: true}
delivery:
  url: "{{ inputs.callback }}/done?run={{ execution.id }}"
  secret: "{{ secrets.DELIVERY_SECRET }}"
  retry_backoff: 10ms
nodes:
  - {id: a, type: template, text: "token {{ secrets.TOKEN }}"}
  - {id: b, type: set, values: {n: 3}}
edges:
  - {from: a, to: b}
outputs:
  said: "{{ a.text }}"
  n: "{{ b.n }}"
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w, Inputs: map[string]any{"callback": srv.URL}})
	require.NoError(t, err)
	require.Equal(t, "completed", string(res.Run.Status))

	require.Len(t, rc.bodies, 2, "a 503, then the retry")
	require.Equal(t, rc.ids[0], rc.ids[1], "one delivery id across attempts")
	got := rc.bodies[1]
	require.Equal(t, "run.completed", got.Type)
	require.Equal(t, res.Run.ID, got.Data.ExecutionID)
	require.Equal(t, "delivered", got.Data.Workflow)
	require.Equal(t, "completed", string(got.Data.Status))
	require.Equal(t, map[string]any{"said": "token ***", "n": float64(3)}, got.Data.Outputs, "secret values are masked")

	evs, _, err := b.r.Events(b.ctx, res.Run.ID, 0, 0)
	require.NoError(t, err)
	var types []string
	var attempts []map[string]any
	for _, ev := range evs {
		switch ev.Type {
		case delivery.EventAttempt:
			attempts = append(attempts, ev.Data)
			fallthrough
		case delivery.EventSucceeded, delivery.EventFailed:
			types = append(types, ev.Type)
		}
	}
	require.Equal(t, []string{"delivery_attempt", "delivery_attempt", "delivery_succeeded"}, types)
	require.EqualValues(t, 503, attempts[0]["status"])
	require.NotNil(t, attempts[0]["retry_in_ms"])
	require.EqualValues(t, 204, attempts[1]["status"])
	require.Equal(t, srv.URL+"/done?run="+res.Run.ID, attempts[1]["url"])
	owed, err := b.r.Store().Deliveries(b.ctx)
	require.NoError(t, err)
	require.Empty(t, owed, "a delivery that succeeded is owed no more")
}

// TestDeliveryOnlyForItsEvents: a run whose status the delivery does not
// list is not posted, and a delivery that cannot be made is a
// delivery_failed event, not a failed run.
func TestDeliveryOnlyForItsEvents(t *testing.T) {
	t.Parallel()
	var calls int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
	}))
	t.Cleanup(srv.Close)
	b := setupEnv(t, map[string]string{"DELIVERY_SECRET": deliverySecret})
	src := `version: 1
name: picky
secrets: [DELIVERY_SECRET]
delivery:
  url: ` + srv.URL + `
  secret: "{{ secrets.DELIVERY_SECRET }}"
  events: [EVENTS]
nodes:
  - {id: a, type: template, text: hi}
`
	w, err := b.r.Load(b.write(t, "picky.yaml", replace(src, "EVENTS", "failed")))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "completed", string(res.Run.Status))
	require.Zero(t, calls, "completed is not a listed event")

	w, err = b.r.Load(b.write(t, "picky2.yaml", replace(replace(src, "EVENTS", "completed"), "name: picky", "name: picky2")))
	require.NoError(t, err)
	res, err = b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "completed", string(res.Run.Status), "a refused delivery does not change the run")
	require.Equal(t, 1, calls, "a 400 is not retried")
	evs, _, err := b.r.Events(b.ctx, res.Run.ID, 0, 0)
	require.NoError(t, err)
	last := evs[len(evs)-1]
	require.Equal(t, delivery.EventFailed, last.Type)
	require.Contains(t, last.Data["error"], "HTTP 400")
}

// setupEnv is setup with an environment of the test's own.
func setupEnv(t *testing.T, env map[string]string) *bundle {
	t.Helper()
	dir := t.TempDir()
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein"), LookupEnv: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return &bundle{ctx: t.Context(), r: r, dir: dir}
}

func replace(s, old, new string) string { return strings.ReplaceAll(s, old, new) }
