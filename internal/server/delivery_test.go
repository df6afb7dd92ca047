package server_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// TestDeliveryOwedWhileServing: a delivery a dead process left owed (a
// skein run killed while it retried), found while the server runs, is
// made at the next poll, going on from its attempts, as is one whose
// owner on another machine let its lease run out (a worker killed in the
// middle of an attempt); one owed by a live process of another machine is
// left to it.
func TestDeliveryOwedWhileServing(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ids []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ids = append(ids, r.Header.Get("webhook-id"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a served delivery's secret......"))
	var file string
	p := newInproc(t, inprocOpts{takeoverPoll: 50 * time.Millisecond, prepare: func(_ store.Store, flows string) {
		file = filepath.Join(flows, "delivered.yaml")
		require.NoError(t, os.WriteFile(file, []byte(`version: 1
name: delivered
delivery:
  url: `+recv.URL+`
  secret: `+secret+`
  retries: 3
nodes:
  - {id: a, type: template, text: hi}
`), 0o644))
	}})
	file, err := filepath.Abs(file)
	require.NoError(t, err)
	<-p.logs.seen("listening")
	fin := time.Now().UTC()
	for _, id := range []string{"deadowner", "expired", "elsewhere"} {
		require.NoError(t, p.st.CreateRun(t.Context(), &store.Run{ID: id, Workflow: "delivered", File: file, Dir: t.TempDir(),
			Status: "completed", StartedAt: fin, FinishedAt: &fin}))
	}
	dead := store.Owner{Host: hostname(t), PID: deadPID(t), Token: "dead-owner"}
	require.NoError(t, p.st.OweDelivery(t.Context(), "deadowner", 1, dead, time.Hour))
	require.NoError(t, p.st.DeliveryAttempted(t.Context(), "deadowner", 1, "dead-owner", 2, fin, time.Hour))
	// The dead owner recorded its third attempt's event, and was killed
	// before it wrote the attempt in the deliveries table.
	var made []store.Event
	for n := 1; n <= 3; n++ {
		made = append(made, store.Event{Time: fin, Type: "delivery_attempt", Data: map[string]any{"attempt": n, "status": 503}})
	}
	require.NoError(t, p.st.AppendEvents(t.Context(), "deadowner", made))
	require.NoError(t, p.st.OweDelivery(t.Context(), "expired", 1, store.Owner{Host: "another-machine", PID: 1, Token: "gone"}, -time.Second))
	require.NoError(t, p.st.OweDelivery(t.Context(), "elsewhere", 1, store.Owner{Host: "another-machine", PID: 1, Token: "alive"}, time.Hour))

	deadline := time.Now().Add(30 * time.Second)
	for {
		owed, err := p.st.Deliveries(t.Context())
		require.NoError(t, err)
		if len(owed) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the owed deliveries were not made within 30 s:\n%s", p.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.stop()
	mu.Lock()
	require.ElementsMatch(t, []string{"skein_deadowner_1", "skein_expired_1"}, ids, "the dead owners' deliveries, once each; the live one's is left to it")
	mu.Unlock()
	evs, err := p.st.Events(t.Context(), "deadowner", 0, 0)
	require.NoError(t, err)
	evs = evs[len(made):]
	require.Len(t, evs, 2)
	require.Equal(t, "delivery_attempt", evs[0].Type)
	require.EqualValues(t, 4, evs[0].Data["attempt"], "the attempts go on from the three on record (two in the table, the third in the events)")
	require.Equal(t, "delivery_succeeded", evs[1].Type)
	owed, err := p.st.Deliveries(t.Context())
	require.NoError(t, err)
	require.Len(t, owed, 1)
	require.Equal(t, "elsewhere", owed[0].RunID)
}
