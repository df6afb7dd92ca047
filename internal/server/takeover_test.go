package server_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// TestTakeoverOnStart: a server starting on a folder resumes the runs a
// dead owner left running, of the workflows it serves; runs that ended or
// wait, and runs of workflows it does not serve, are not touched.
func TestTakeoverOnStart(t *testing.T) {
	t.Parallel()
	dead := store.Owner{Host: hostname(t), PID: deadPID(t), Token: "dead-owner"}
	now := time.Now().UTC()
	var before map[string]*store.Run
	p := newInproc(t, inprocOpts{prepare: func(st store.Store, flows string) {
		quick, err := filepath.Abs(filepath.Join(flows, "quick.yaml"))
		require.NoError(t, err)
		for _, run := range []*store.Run{
			{ID: "abandoned", Workflow: "quick", File: quick, Status: "running", Owner: dead, LeaseTTL: time.Hour,
				Inputs: map[string]any{"who": "Taken", "n": 3}},
			{ID: "notserved", Workflow: "elsewhere", File: "/nowhere/elsewhere.yaml", Status: "running", Owner: dead, LeaseTTL: time.Hour},
			{ID: "waiting", Workflow: "quick", File: quick, Status: "waiting"},
			{ID: "completed", Workflow: "quick", File: quick, Status: "completed", FinishedAt: &now},
			{ID: "failed", Workflow: "quick", File: quick, Status: "failed", FinishedAt: &now},
		} {
			run.Dir, run.StartedAt = t.TempDir(), now
			require.NoError(t, st.CreateRun(t.Context(), run))
		}
		before = map[string]*store.Run{}
		runs, err := st.ListRuns(t.Context(), store.RunFilter{})
		require.NoError(t, err)
		for _, r := range runs {
			before[r.ID] = r
		}
	}})
	<-p.logs.seen("took over the runs left by a dead owner")
	require.Equal(t, "completed", p.waitEnd("abandoned"), p.logs.String())
	status, body := p.do("GET", "/api/runs/abandoned", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(body), `"text":"Hello, Taken #3!"`)
	p.stop()

	for _, id := range []string{"notserved", "waiting", "completed", "failed"} {
		run, err := p.st.Run(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, before[id], run, "run %s is not touched", id)
	}
	run, err := p.st.Run(t.Context(), "abandoned")
	require.NoError(t, err)
	require.Equal(t, 2, run.Generation, "claimed once")
	require.Equal(t, "completed", string(run.Status))
	m := p.metrics()
	require.Contains(t, m, `skein_takeovers_total{outcome="resumed"} 1`+"\n")
	require.Contains(t, m, `skein_takeovers_total{outcome="not_served"} 1`+"\n")
	require.Contains(t, m, `skein_runs_started_total{source="takeover",workflow="quick"} 1`+"\n")
}

// TestTakeoverWhileServing: a run whose owner dies while the server runs
// (another server, a skein run killed with -9) is taken over at the next
// poll, not only when a server starts; a run of a workflow not served is
// logged once, however many polls find it.
func TestTakeoverWhileServing(t *testing.T) {
	t.Parallel()
	p := newInproc(t, inprocOpts{takeoverPoll: 50 * time.Millisecond})
	quick, err := filepath.Abs(filepath.Join(p.flows, "quick.yaml"))
	require.NoError(t, err)
	dead := store.Owner{Host: hostname(t), PID: deadPID(t), Token: "dead-owner"}
	now := time.Now().UTC()
	for _, run := range []*store.Run{
		{ID: "notserved", Workflow: "elsewhere", File: "/nowhere/elsewhere.yaml", Status: "running", Owner: dead, LeaseTTL: time.Hour},
		{ID: "later", Workflow: "quick", File: quick, Status: "running", Owner: dead, LeaseTTL: time.Hour,
			Inputs: map[string]any{"who": "Late", "n": 1}},
	} {
		run.Dir, run.StartedAt = t.TempDir(), now
		require.NoError(t, p.st.CreateRun(t.Context(), run))
	}
	// The run is interrupted until a poll takes it over ("run taken
	// over" is logged once it is claimed); then it runs to its end.
	select {
	case <-p.logs.seen("run taken over"):
	case <-time.After(30 * time.Second):
		t.Fatalf("the run was not taken over within 30 s:\n%s", p.logs.String())
	}
	require.Equal(t, "completed", p.waitEnd("later"), p.logs.String())
	status, body := p.do("GET", "/api/runs/later", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(body), `"text":"Hello, Late #1!"`)
	// Several polls later the run not served is still logged once.
	<-p.logs.seen("took over the runs left by a dead owner")
	seen := p.logs.seen("run left interrupted")
	<-seen
	p.stop()
	require.Equal(t, 1, strings.Count(p.logs.String(), "run left interrupted"), p.logs.String())
	require.Contains(t, p.metrics(), `skein_takeovers_total{outcome="not_served"} 1`+"\n")
}
