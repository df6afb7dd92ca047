package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/node"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// A step's record goes the same way under both drivers: running, then
// ended with its task's own attempt — parameters, hash, usage, the times
// it ran between.
func TestApplyStepRecordsAnAttempt(t *testing.T) {
	t.Parallel()
	rec := &engine.StepRecord{Node: "a"}
	su := engine.StepUpdate{TaskID: 1, Node: "a", Attempt: 1, Status: engine.StatusRunning, Loop: map[string]any{"index": 0}}
	engine.ApplyStep(rec, su, t0, nil, engine.StepOptions{})
	assert.Equal(t, engine.StatusRunning, rec.Status)
	require.NotNil(t, rec.StartedAt)
	assert.Equal(t, t0, *rec.StartedAt)
	assert.Equal(t, map[string]any{"index": 0}, rec.Loop)

	su.Status, su.Output = engine.StatusSuccess, map[string]any{"v": 1}
	end := &engine.StepEnd{At: t0.Add(2 * time.Second), Params: map[string]any{"p": "x"}, Hash: "h",
		Outcome: engine.Outcome{Output: su.Output, Directives: map[string]any{"_token_usage": map[string]any{"total_tokens": 7}}}}
	engine.ApplyStep(rec, su, t0.Add(3*time.Second), end, engine.StepOptions{})
	assert.Equal(t, engine.StatusSuccess, rec.Status)
	assert.Equal(t, map[string]any{"v": 1}, rec.Output)
	assert.Equal(t, map[string]any{"p": "x"}, rec.Params)
	assert.Equal(t, "h", rec.ConfigHash)
	assert.Equal(t, 7, rec.Tokens)
	assert.Equal(t, t0.Add(2*time.Second), *rec.FinishedAt, "it ended when its attempt did")
	assert.EqualValues(t, 2000, rec.DurationMS)
	assert.Equal(t, 1, rec.Attempts)
}

// A released task that waits to start — for a slot, or in the queue for a
// worker — is pending, with no time it finished from an attempt before.
func TestApplyStepPendingWhileItWaitsToStart(t *testing.T) {
	t.Parallel()
	rec := &engine.StepRecord{Node: "a"}
	engine.ApplyStep(rec, engine.StepUpdate{Node: "a", Attempt: 1, Status: engine.StatusFailed, Retry: true,
		Error: &node.Error{Code: "boom"}}, t0, nil, engine.StepOptions{})
	require.NotNil(t, rec.FinishedAt)
	assert.True(t, rec.Retry)

	engine.ApplyStep(rec, engine.StepUpdate{Node: "a", Attempt: 2, Status: engine.StatusRunning}, t0.Add(time.Second), nil,
		engine.StepOptions{Pending: true})
	assert.Equal(t, engine.StatusPending, rec.Status)
	assert.Nil(t, rec.FinishedAt)
	assert.False(t, rec.Retry)
	assert.Equal(t, 2, rec.Attempts)
}

// The queue's worker knows when the attempt started; a step that waits
// gets its wake-up time.
func TestApplyStepTakesTheWorkersStartAndTheWakeUp(t *testing.T) {
	t.Parallel()
	rec := &engine.StepRecord{Node: "w"}
	wake := t0.Add(time.Hour)
	end := &engine.StepEnd{Started: t0, At: t0.Add(time.Second)}
	engine.ApplyStep(rec, engine.StepUpdate{Node: "w", Attempt: 1, Status: engine.StatusWaiting}, t0.Add(5*time.Second), end,
		engine.StepOptions{Pending: true, WakeAt: &wake})
	assert.Equal(t, t0, *rec.StartedAt)
	assert.Equal(t, wake, *rec.WakeAt)
	assert.EqualValues(t, 1000, rec.DurationMS)
}

// The local driver masks secrets as it records a step and marks it
// masked; the queue records values as they are and masks them as it
// writes the step.
func TestApplyStepMasksWithARedactor(t *testing.T) {
	t.Parallel()
	red := redact.New(map[string]string{"key": "s3cret-value"})
	su := engine.StepUpdate{Node: "a", Attempt: 1, Status: engine.StatusFailed, Output: map[string]any{"v": "s3cret-value"},
		Error: &node.Error{Code: "boom", Message: "said s3cret-value"}}
	end := &engine.StepEnd{At: t0, Params: map[string]any{"p": "s3cret-value"}, Outcome: engine.Outcome{Output: su.Output}}

	masked := &engine.StepRecord{Node: "a"}
	engine.ApplyStep(masked, su, t0, end, engine.StepOptions{Redactor: red})
	assert.True(t, masked.Masked)
	assert.NotContains(t, masked.Output["v"], "s3cret-value")
	assert.NotContains(t, masked.Params["p"], "s3cret-value")
	assert.NotContains(t, masked.Error.Message, "s3cret-value")

	raw := &engine.StepRecord{Node: "a"}
	engine.ApplyStep(raw, su, t0, end, engine.StepOptions{})
	assert.False(t, raw.Masked)
	assert.Equal(t, "s3cret-value", raw.Output["v"])
	assert.Equal(t, "said s3cret-value", raw.Error.Message)
}
