package runner_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "skein.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// deadPID is the pid of a process of this host that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

// TestResumeFiresWithThePayload: a resumed run's trigger fires with the
// payload it fired with first (a schedule's time), so the steps that read
// it are reused and the others see it as before.
func TestResumeFiresWithThePayload(t *testing.T) {
	t.Parallel()
	b := setup(t)
	marker := filepath.Join(b.dir, "marker")
	w, err := b.r.Load(b.write(t, "sched.yaml", `version: 1
name: sched
inputs:
  marker: {type: string, required: true}
nodes:
  - {id: tick, type: trigger.schedule, cron: "@daily"}
  - {id: when, type: template, text: "at {{ trigger.scheduled_at }}"}
  - {id: gate, type: shell, command: [test, -f, "{{ inputs.marker }}"]}
  - {id: done, type: template, text: "{{ when.text }} / {{ tick.scheduled_at }}"}
edges:
  - {from: tick, to: when}
  - {from: when, to: gate}
  - {from: gate, to: done}
outputs:
  text: "{{ done.text }}"
`))
	require.NoError(t, err)
	at := "2026-03-29T03:00:00+02:00"
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w, Inputs: map[string]any{"marker": marker}, Trigger: "tick",
		Payload: map[string]any{"scheduled_at": at, "missed": 0}})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status), "the gate is closed")

	require.NoError(t, os.WriteFile(marker, nil, 0o644))
	res, err = b.r.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.Equal(t, "completed", string(res.Run.Status))
	require.Equal(t, "at "+at+" / "+at, res.Run.Outputs["text"])
	doc, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	for _, s := range doc.Steps {
		if s.Node == "when" {
			require.True(t, s.Cached, "the step that read the payload is reused")
		}
	}
}

// TestAbandoned lists the runs to take over: running, top-level, owner
// gone; never a finished, waiting or live one.
func TestAbandoned(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	r, err := runner.Open(runner.Config{Dir: filepath.Join(t.TempDir(), ".skein"), Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	ctx := t.Context()
	host, err := os.Hostname()
	require.NoError(t, err)
	dead := store.Owner{Host: host, PID: deadPID(t), Token: "dead"}
	live := store.Owner{Host: host, PID: os.Getpid(), Token: "live"}
	elsewhere := store.Owner{Host: "another-host", PID: 1, Token: "far"}
	now := time.Now()
	for _, run := range []*store.Run{
		{ID: "deadowner", Status: "running", Owner: dead, LeaseTTL: time.Hour},
		{ID: "expired", Status: "running", Owner: elsewhere, LeaseTTL: -time.Second},
		{ID: "leased", Status: "running", Owner: elsewhere, LeaseTTL: time.Hour},
		{ID: "mine", Status: "running", Owner: live, LeaseTTL: time.Hour},
		{ID: "child", Status: "running", ParentID: "deadowner", Owner: dead, LeaseTTL: time.Hour},
		{ID: "waiting", Status: "waiting"},
		{ID: "done", Status: "completed", FinishedAt: &now},
		{ID: "failed", Status: "failed", FinishedAt: &now},
	} {
		run.Workflow, run.StartedAt = "w", now
		require.NoError(t, st.CreateRun(ctx, run))
	}
	runs, err := r.Abandoned(ctx)
	require.NoError(t, err)
	var ids []string
	for _, run := range runs {
		ids = append(ids, run.ID)
	}
	require.ElementsMatch(t, []string{"deadowner", "expired"}, ids)
}
