package durable_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
	"github.com/skeinhq/skein/node"
)

// A value over 64 KiB in a step's record (a recorded output, or a
// parameter a template filled with one) is kept in a blob of the run
// folder, not in the database, and reads back whole.
func TestBigValuesGoToBlobs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	defer st.Close()
	ctx := context.Background()
	require.NoError(t, st.CreateRun(ctx, &store.Run{ID: "r1", Workflow: "w"}))
	c := durable.NewCommitter(st)
	defer c.Close()
	runDir := filepath.Join(dir, "run")
	require.NoError(t, os.Mkdir(runDir, 0o755))
	blobs, err := blob.NewStore(runDir, nil)
	require.NoError(t, err)
	rec := durable.NewRecorder(c, "r1", blobs, nil)

	big := strings.Repeat("x", 300<<10)
	now := time.Now()
	require.NoError(t, rec.Step(&engine.StepRecord{StepOrder: 1, Node: "big", Visit: 1, Status: engine.StatusSuccess,
		Params: map[string]any{"stdin": big}, Output: map[string]any{"stdout": big},
		Directives: map[string]any{"_route": "b"}, StartedAt: &now, FinishedAt: &now}))
	require.NoError(t, rec.Step(&engine.StepRecord{StepOrder: 2, Node: "small", Visit: 1, Status: engine.StatusSuccess,
		Output: map[string]any{"stdout": "hi"}, StartedAt: &now, FinishedAt: &now}))
	require.NoError(t, rec.Sync())

	steps, err := st.Steps(ctx, "r1")
	require.NoError(t, err)
	require.Len(t, steps, 2)
	b, ok := steps[0].Output["stdout"].(*blob.Blob)
	require.True(t, ok, "the big output is a blob: %v", steps[0].Output["stdout"])
	require.Equal(t, filepath.Join(runDir, "blobs"), filepath.Dir(b.Path()))
	p, ok := steps[0].Params["stdin"].(*blob.Blob)
	require.True(t, ok, "the big parameter is a blob")
	require.Equal(t, b.Path(), p.Path(), "one file for the same value")
	out, directives, err := durable.Output(steps[0])
	require.NoError(t, err)
	text, err := out["stdout"].(*blob.Blob).Load()
	require.NoError(t, err)
	require.Equal(t, big, text)
	require.Equal(t, map[string]any{"_route": "b"}, directives)
	require.Equal(t, "hi", steps[1].Output["stdout"])

	info, err := os.Stat(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	size := info.Size()
	if wal, err := os.Stat(filepath.Join(dir, "skein.db-wal")); err == nil {
		size += wal.Size() // the log a closed database keeps
	}
	require.Less(t, size, int64(256<<10), "the database stays small")
}

// The recorder masks every record on its way to the store, whoever made
// it: a step's parameters, output, directives and error, an event's data,
// the run's outputs and error; a large output's file too. A step whose
// output (or directives) had to be masked is marked.
func TestRecorderMasksSecrets(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-canary-value"
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	defer st.Close()
	ctx := context.Background()
	require.NoError(t, st.CreateRun(ctx, &store.Run{ID: "r1", Workflow: "w"}))
	c := durable.NewCommitter(st)
	defer c.Close()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "run"), 0o755))
	blobs, err := blob.NewStore(filepath.Join(dir, "run"), nil)
	require.NoError(t, err)
	rec := durable.NewRecorder(c, "r1", blobs, redact.New(map[string]string{"TOKEN": secret}))

	now := time.Now()
	require.NoError(t, rec.Step(&engine.StepRecord{StepOrder: 1, Node: "call", Visit: 1, Status: engine.StatusFailed,
		Params: map[string]any{"headers": map[string]any{"Authorization": "Bearer " + secret}},
		Error: &node.Error{Code: "http_status", Message: "401 for " + secret,
			Details: map[string]any{"body": map[string]any{"error": "bad token " + secret}}},
		StartedAt: &now, FinishedAt: &now}))
	require.NoError(t, rec.Step(&engine.StepRecord{StepOrder: 2, Node: "patch", Visit: 1, Status: engine.StatusSuccess,
		Output: map[string]any{"ok": 1}, Directives: map[string]any{"_state_patch": map[string]any{"tok": secret}},
		StartedAt: &now, FinishedAt: &now}))
	require.NoError(t, rec.Step(&engine.StepRecord{StepOrder: 3, Node: "big", Visit: 1, Status: engine.StatusSuccess,
		Output: map[string]any{"stdout": strings.Repeat("x", 300<<10) + secret}, StartedAt: &now, FinishedAt: &now}))
	require.NoError(t, rec.Event(engine.TimedEvent{Time: now, Event: engine.Event{Type: "tool_result", Node: "call", Visit: 1,
		Data: map[string]any{"text": "echo " + secret}}}))
	fin := &store.Run{ID: "r1", Workflow: "w", Status: "failed", Outputs: map[string]any{"seen": secret},
		Error: &node.Error{Message: "node call failed", Details: map[string]any{"stderr": secret}}, FinishedAt: &now}
	require.NoError(t, rec.Finish(fin))
	require.Equal(t, secret, fin.Outputs["seen"], "the caller's record is not changed")

	steps, err := st.Steps(ctx, "r1")
	require.NoError(t, err)
	require.Len(t, steps, 3)
	require.Equal(t, map[string]any{"Authorization": "Bearer ***"}, steps[0].Params["headers"])
	require.Equal(t, "401 for ***", steps[0].Error.Message)
	require.Equal(t, map[string]any{"error": "bad token ***"}, steps[0].Error.Details["body"])
	_, directives, err := durable.Output(steps[1])
	require.NoError(t, err)
	require.Equal(t, map[string]any{"_state_patch": map[string]any{"tok": "***"}}, directives)
	require.True(t, steps[1].Masked, "a masked _state_patch marks the step")
	require.True(t, steps[2].Masked)
	out, _, err := durable.Output(steps[2])
	require.NoError(t, err)
	stdout, err := out["stdout"].(*blob.Blob).Load() // masked, it went to a blob
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(stdout.(string), "x***"))
	evs, err := st.Events(ctx, "r1", 0, 0)
	require.NoError(t, err)
	require.Equal(t, "echo ***", evs[0].Data["text"])
	run, err := st.Run(ctx, "r1")
	require.NoError(t, err)
	require.Equal(t, "***", run.Outputs["seen"])
	require.Equal(t, "***", run.Error.Details["stderr"])

	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NotContains(t, string(data), secret, path)
		return nil
	}))
}

// A result rebuilt from stored steps (a queued run followed, skein check)
// keeps why a step was skipped and where each step ran.
func TestResultKeepsTheStepLog(t *testing.T) {
	t.Parallel()
	run := &store.Run{ID: "r1", Workflow: "w", Status: engine.RunCompleted}
	res := durable.Result(run, []*store.Step{
		{StepOrder: 1, Node: "gate", Visit: 1, Status: engine.StatusSuccess, RanOn: &record.Place{Host: "h", PID: 7, Worker: "h_7_ab"}},
		{StepOrder: 2, Node: "no", Visit: 1, Status: engine.StatusSkipped, SkipReason: engine.SkipBranchNotTaken, TakenHandle: "false"},
	})
	require.Len(t, res.Steps, 2)
	require.Equal(t, &record.Place{Host: "h", PID: 7, Worker: "h_7_ab"}, res.Steps[0].RanOn)
	require.Equal(t, 2, res.Steps[1].StepOrder)
	require.Equal(t, engine.SkipBranchNotTaken, res.Steps[1].SkipReason)
	require.Equal(t, "false", res.Steps[1].TakenHandle)
}

// TestDocStep: a step as a run document takes it is the engine's record
// itself when it has no directives (the document sets the run id), and
// as the store keeps it — its directives in its output — when it has.
func TestDocStep(t *testing.T) {
	t.Parallel()
	plain := &engine.StepRecord{Node: "a", Visit: 1, Status: engine.StatusSuccess, Output: map[string]any{"x": 1}}
	require.Same(t, plain, durable.DocStep("r1", plain))

	with := &engine.StepRecord{Node: "b", Visit: 1, Status: engine.StatusSuccess, Output: map[string]any{"x": 1},
		Directives: map[string]any{"_vars": map[string]any{"n": 2}}}
	got := durable.DocStep("r1", with)
	require.Equal(t, durable.StepFromRecord("r1", with), got)
	require.NotSame(t, with, got)
	out, directives, err := durable.Output(got)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"x": 1}, out)
	require.Equal(t, with.Directives, directives)
	require.Equal(t, map[string]any{"x": 1}, with.Output, "the record is not changed")
}
