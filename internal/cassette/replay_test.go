package cassette_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/internal/record"
)

// A replay's steps are compared with the recorded run's by node and
// visit, the last record of each: a changed status or output, or a step
// only one run has, diverges; an output that names its own run, or its
// start time, does not.
func TestDiverged(t *testing.T) {
	t.Parallel()
	recorded := []cassette.Step{
		{Node: "a", Visit: 1, Generation: 1, Order: 1, Status: "failed"},
		{Node: "a", Visit: 1, Generation: 2, Order: 1, Status: "success", Output: map[string]any{"run": "rec-1", "n": 1, "at": "2026-12-06T08:00:00Z"}},
		{Node: "b", Visit: 1, Generation: 2, Order: 2, Status: "success", Output: map[string]any{"n": 2}},
		{Node: "c", Visit: 1, Generation: 2, Order: 3, Status: "success"},
		{Node: "e", Visit: 1, Generation: 2, Order: 4, Status: "running"},
	}
	replayed := []cassette.Step{
		{Node: "a", Visit: 1, Order: 1, Status: "success", Output: map[string]any{"run": "rep-2", "n": 1.0, "at": "2026-12-07T09:00:05Z"}},
		{Node: "b", Visit: 1, Order: 2, Status: "success", Output: map[string]any{"n": 3}},
		{Node: "d", Visit: 1, Order: 3, Status: "skipped"},
	}
	got := cassette.Diverged(recorded, replayed, cassette.Runs{ReplayedID: "rep-2", RecordedID: "rec-1",
		ReplayedStart: time.Date(2026, 12, 7, 9, 0, 5, 0, time.UTC), RecordedStart: time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)})
	require.Equal(t, []cassette.Divergence{
		{Node: "b", Visit: 1, What: "output", Recorded: map[string]any{"n": 2.0}, Replayed: map[string]any{"n": 3.0}},
		{Node: "c", Visit: 1, What: "only_recorded", Recorded: "success"},
		{Node: "d", Visit: 1, What: "only_replayed", Replayed: "skipped"},
	}, got)
}

// The replayed steps are masked as the recorded ones were stored: a
// secret in a replayed output is no divergence; the recorded steps of
// earlier generations give way to the last.
func TestDivergedRuns(t *testing.T) {
	t.Parallel()
	recorded := []*record.Step{
		{Node: "a", Visit: 1, Generation: 1, StepOrder: 1, Status: record.StatusFailed},
		{Node: "a", Visit: 1, Generation: 2, StepOrder: 1, Status: record.StatusSuccess, Output: map[string]any{"key": "***"}},
		{Node: "b", Visit: 1, Generation: 2, StepOrder: 2, Status: record.StatusSuccess},
	}
	replayed := []*record.Step{
		{Node: "a", Visit: 1, StepOrder: 1, Status: record.StatusSuccess, Output: map[string]any{"key": "s3cret"}},
		{Node: "b", Visit: 1, StepOrder: 2, Status: record.StatusFailed},
	}
	mask := func(m map[string]any) map[string]any {
		if m == nil {
			return nil
		}
		return map[string]any{"key": "***"}
	}
	got := cassette.DivergedRuns(recorded, replayed, cassette.Runs{ReplayedID: "rep-2", RecordedID: "rec-1"}, mask)
	require.Equal(t, []cassette.Divergence{{Node: "b", Visit: 1, What: "status", Recorded: "success", Replayed: "failed"}}, got)
}

// A replay reads the model settings the cassette recorded, and stands in
// for a secret or an API key that is not set.
func TestReplayEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOME_VAR": "here"}
	getenv := cassette.ReplayEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		[]string{"TOKEN"}, map[string]string{"SKEIN_LLM_MODEL": "recorded-model"})
	for k, want := range map[string]string{
		"SKEIN_LLM_MODEL":    "recorded-model",
		"HOME_VAR":           "here",
		"SKEIN_SECRET_TOKEN": "skein-replay-stand-in-for-TOKEN",
		"OPENAI_API_KEY":     "skein-replay-stand-in-key",
	} {
		v, ok := getenv(k)
		require.True(t, ok, k)
		require.Equal(t, want, v, k)
	}
	_, ok := getenv("SKEIN_SECRET_OTHER")
	require.False(t, ok, "a secret the workflow does not declare")
}
