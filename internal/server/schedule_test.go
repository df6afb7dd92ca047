package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/schedule"
)

// TestNightlyReportAsWritten serves examples/nightly-report.yaml as it is
// written, on a clock the test moves, on the night Paris skips 02:00–03:00:
// its 02:30 schedule fires once, when the clocks jump, with that time as
// the trigger's scheduled_at.
func TestNightlyReportAsWritten(t *testing.T) {
	t.Parallel()
	flows := t.TempDir()
	src, err := os.ReadFile("../../examples/nightly-report.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(flows, "nightly-report.yaml"), src, 0o644))
	clk := clock.NewFake(time.Date(2026, 3, 29, 0, 59, 59, 0, time.UTC)) // 01:59:59 in Paris
	slept := clk.WaitForTimer()
	p := newInproc(t, inprocOpts{flows: flows, clock: clk})
	<-slept // the scheduler sleeps until the fire

	schedules := func() map[string]any {
		status, body := p.do("GET", "/api/schedules", "")
		require.Equal(t, http.StatusOK, status, string(body))
		var out struct{ Schedules []map[string]any }
		require.NoError(t, json.Unmarshal(body, &out))
		require.Len(t, out.Schedules, 1)
		return out.Schedules[0]
	}
	sc := schedules()
	require.Equal(t, "30 2 * * *", sc["cron"])
	require.Equal(t, "Europe/Paris", sc["tz"])
	require.Equal(t, "skip", sc["missed"])
	require.Equal(t, "skip", sc["overlap"])
	require.Equal(t, "2026-03-29T03:00:00+02:00", sc["next_fire"], "02:30 does not happen that night: it fires when 02:00 becomes 03:00")
	require.Nil(t, sc["last_fire"])

	clk.Advance(time.Second)
	<-p.logs.seen("run started by a schedule")
	id := schedule.RunID("nightly-report", "nightly", time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC))
	p.waitEnd(id) // completed or not, as the machine's backups go
	status, body := p.do("GET", "/api/runs/"+id, "")
	require.Equal(t, http.StatusOK, status, string(body))
	var doc struct {
		Trigger string `json:"trigger"`
		Source  string `json:"source"`
		Steps   []struct {
			Node   string         `json:"node"`
			Output map[string]any `json:"output"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(body, &doc))
	require.Equal(t, "nightly", doc.Trigger)
	require.Equal(t, "schedule", doc.Source, "a run a schedule fired")
	require.Equal(t, "nightly", doc.Steps[0].Node)
	require.Equal(t, "2026-03-29T03:00:00+02:00", doc.Steps[0].Output["scheduled_at"])
	require.Equal(t, float64(0), doc.Steps[0].Output["missed"])

	sc = schedules()
	require.Equal(t, "2026-03-29T03:00:00+02:00", sc["last_fire"])
	require.Equal(t, id, sc["last_run_id"])
	require.Equal(t, "2026-03-30T02:30:00+02:00", sc["next_fire"])
	require.Contains(t, p.metrics(), `skein_schedule_fires_total{outcome="fired",trigger="nightly",workflow="nightly-report"} 1`)
}

// TestWorkflowsVersionedOnLoad: each workflow served is stored as a
// version when it is loaded, and a changed file as the next version.
func TestWorkflowsVersionedOnLoad(t *testing.T) {
	t.Parallel()
	p := newInproc(t, inprocOpts{})
	for _, name := range []string{"chatty", "gate", "quick"} {
		<-p.logs.seen("workflow version stored workflow=" + name + " version=1")
	}
	file := filepath.Join(p.flows, "quick.yaml")
	src, err := os.ReadFile(file)
	require.NoError(t, err)
	src = append(src, "# changed\n"...)
	require.NoError(t, os.WriteFile(file, src, 0o644))
	require.NoError(t, p.srv.Reload())
	<-p.logs.seen("workflow version stored workflow=quick version=2")
	v, err := p.st.Workflow(t.Context(), "quick", 0)
	require.NoError(t, err)
	require.Equal(t, 2, v.Version)
	require.Equal(t, string(src), string(v.Source))

	id := p.start("quick", "{}")
	require.Equal(t, "completed", p.waitEnd(id))
	run, err := p.st.Run(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, 2, run.WorkflowVersion, "the run is tied to the version served")
}
