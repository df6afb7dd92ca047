package cli_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeliveryPromises: --deny-private-networks refuses a delivery to a
// loopback address as it refuses an http node's request; a resumed run
// delivers again with its new generation in the webhook-id
// (docs/workflows.md, Delivery).
func TestDeliveryPromises(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ids []string
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ids = append(ids, r.Header.Get("webhook-id"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), ids...)
	}
	dir := t.TempDir()
	gate := filepath.Join(dir, "open")
	flow := filepath.Join(dir, "told.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: told
secrets: [DELIVERY_SECRET]
nodes:
  - {id: gate, type: shell, command: [test, -f, "`+gate+`"]}
delivery:
  url: "`+rc.URL+`/done"
  secret: "{{ secrets.DELIVERY_SECRET }}"
  retries: 0
`), 0o644))
	env := map[string]string{"SKEIN_SECRET_DELIVERY_SECRET": "whsec_" + base64.StdEncoding.EncodeToString([]byte("a delivery secret of 32 bytes...."))}
	store := filepath.Join(dir, "store")

	r := skeinIn(t, dir, env, "run", "--dir", store, "--deny-private-networks", flow)
	require.Equal(t, 1, r.code, r.stderr)
	id := runID(t, r.stdout)
	require.Empty(t, got(), "nothing reached the loopback receiver")
	events := skeinIn(t, dir, env, "runs", "events", "--dir", store, id)
	require.Equal(t, 0, events.code, events.stderr)
	require.Contains(t, events.stdout, `"delivery_failed"`)
	require.Contains(t, events.stdout, "private")

	r = skeinIn(t, dir, env, "resume", "--dir", store, id)
	require.Equal(t, 1, r.code, r.stderr)
	require.Equal(t, []string{"skein_" + id + "_2"}, got(), "the second execution's delivery")
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	r = skeinIn(t, dir, env, "resume", "--dir", store, id)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, []string{"skein_" + id + "_2", "skein_" + id + "_3"}, got())
}

// TestDeliveryURLReadsTheTrigger: a run started by hand fired with its
// inputs, and its delivery's URL reads them as trigger, as its nodes do.
func TestDeliveryURLReadsTheTrigger(t *testing.T) {
	t.Parallel()
	queries := make(chan string, 1)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries <- r.URL.RawQuery
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	dir := t.TempDir()
	flow := filepath.Join(dir, "told.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: told
secrets: [DELIVERY_SECRET]
inputs:
  q: {type: string}
nodes:
  - {id: a, type: set, values: {seen: "{{ trigger.q }}"}}
delivery:
  url: "`+rc.URL+`/done?t={{ trigger.q }}&i={{ inputs.q }}"
  secret: "{{ secrets.DELIVERY_SECRET }}"
  retries: 0
`), 0o644))
	env := map[string]string{"SKEIN_SECRET_DELIVERY_SECRET": "whsec_" + base64.StdEncoding.EncodeToString([]byte("a delivery secret of 32 bytes...."))}
	r := skeinIn(t, dir, env, "run", "--dir", filepath.Join(dir, "store"), flow, "-i", "q=zz")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "t=zz&i=zz", <-queries)
}
