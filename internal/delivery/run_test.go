package delivery_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/delivery"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
	"github.com/skeinhq/skein/workflow"
)

// A run's delivery made one attempt at a time (a queue job's): a refused
// attempt is an event and leaves the delivery owed with the next attempt
// due; the next one goes on from it, and once the receiver takes the
// run, signed and its secrets masked, the delivery is owed no more.
func TestDeliverARun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rc := &receiver{t: t, statuses: []int{http.StatusServiceUnavailable, http.StatusNoContent}}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "skein.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })

	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fin := started.Add(time.Second)
	run := &record.Run{ID: "r1", Workflow: "w", Status: record.RunCompleted, StartedAt: started, FinishedAt: &fin, Generation: 1,
		Outputs: map[string]any{"said": "token tok-very-secret"}}
	require.NoError(t, st.CreateRun(ctx, run))
	w := &workflow.Workflow{Name: "w", Delivery: &workflow.Delivery{URL: srv.URL + "/done/{{ execution.id }}", Secret: "{{ secrets.HOOK }}",
		Retries: 2, RetryBackoff: time.Minute, Timeout: 5 * time.Second}}
	hold := store.Owner{Host: "here", PID: 1, Token: "tok-1"}
	require.NoError(t, st.OweDelivery(ctx, run.ID, run.Generation, hold, delivery.HoldFor(w.Delivery)))

	runs := &delivery.Runs{Store: st, Clock: clock.Real{}}
	job := delivery.Job{Workflow: w, Run: run, Secrets: map[string]string{"HOOK": secret, "TOKEN": "tok-very-secret"},
		Hold: hold, Once: true, Client: srv.Client()}
	next := runs.Deliver(ctx, job)
	require.Equal(t, time.Minute, next.Round(time.Minute), "the refused attempt leaves the next one due after the backoff")
	made, err := runs.AttemptsRecorded(ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, 1, made)
	owed, err := st.Deliveries(ctx)
	require.NoError(t, err)
	require.Len(t, owed, 1, "still owed")

	job.Made = made
	require.Zero(t, runs.Deliver(ctx, job), "taken: nothing more is due")
	owed, err = st.Deliveries(ctx)
	require.NoError(t, err)
	require.Empty(t, owed, "a delivery that succeeded is owed no more")

	var types []string
	evs, err := st.Events(ctx, run.ID, 0, 0)
	require.NoError(t, err)
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	require.Equal(t, []string{delivery.EventAttempt, delivery.EventAttempt, delivery.EventSucceeded}, types)
	require.Len(t, rc.bodies, 2)
	require.Equal(t, rc.got[0].Get("webhook-id"), rc.got[1].Get("webhook-id"), "one delivery id across attempts")
	var b delivery.Body
	require.NoError(t, json.Unmarshal([]byte(rc.bodies[1]), &b))
	require.Equal(t, "run.completed", b.Type)
	require.Equal(t, "r1", b.Data.ExecutionID)
	require.Equal(t, map[string]any{"said": "token ***"}, b.Data.Outputs, "secret values are masked")
	require.EqualValues(t, 2, evs[1].Data["attempt"])
	require.Equal(t, srv.URL+"/done/r1", evs[2].Data["url"])
}
