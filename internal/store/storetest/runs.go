package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
)

// testRuns checks creating, updating, reading and listing runs.
func testRuns(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()

	t.Run("EveryFieldRoundTrips", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		finished := base.Add(90 * time.Second)
		want := &store.Run{
			ID: "r1", Workflow: "triage", WorkflowVersion: 3, File: "/flows/triage.yaml",
			Dir: "/w/.skein/runs/triage/2025-03-01_12-00-00_r1", ParentID: "r0", Trigger: "start",
			Source: "replay", ReplayOf: "r0a",
			Status:  "failed",
			Inputs:  map[string]any{"city": "Paris", "days": 3, "opts": map[string]any{"metric": true}},
			Outputs: map[string]any{"summary": "rain", "scores": []any{1, 2.5}},
			Error: &node.Error{Code: "http_status", Category: "http", Message: "GET returned 503",
				Details: map[string]any{"status": 503, "body": "busy"}},
			StartedAt: base, FinishedAt: &finished, Tokens: 1200, CostUSD: 0.0125,
			Generation: 1, LeaseExpired: true,
		}
		require.NoError(t, b.s.CreateRun(b.ctx, clone(want)))

		got, err := b.s.Run(b.ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, want, got)
	})

	t.Run("CreateFillsDefaults", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		before := time.Now().Add(-time.Second)
		r := &store.Run{ID: "r1", Workflow: "triage"}
		require.NoError(t, b.s.CreateRun(b.ctx, r))
		require.Equal(t, "pending", string(r.Status), "an empty status becomes pending")
		require.WithinRange(t, r.StartedAt, before, time.Now().Add(time.Second), "a zero StartedAt becomes now")

		got, err := b.s.Run(b.ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, "pending", string(got.Status))
		require.WithinDuration(t, r.StartedAt, got.StartedAt, time.Microsecond)
		require.Nil(t, got.FinishedAt)
	})

	t.Run("ConcurrentCreatesOfOneIDMakeOneRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		// Fifty creates of one id and fifty of their own ids, all at
		// once (a burst of webhook deliveries, some of them repeated):
		// one of the first wins, the others find it exists; every
		// other run is made, with its lease.
		const n = 50
		errs := make([]error, 2*n)
		runs := make([]*store.Run, 2*n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 2 * n {
			id := "same"
			if i >= n {
				id = fmt.Sprintf("own-%d", i)
			}
			runs[i] = &store.Run{ID: id, Workflow: "w", StartedAt: base, Status: "running",
				Owner: store.Owner{Host: "h", PID: i, Token: fmt.Sprintf("t%d", i)}, LeaseTTL: time.Minute}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = b.s.CreateRun(b.ctx, runs[i])
			}()
		}
		close(start)
		wg.Wait()
		won := -1
		for i, err := range errs[:n] {
			if err == nil {
				require.Equal(t, -1, won, "two creates of one id succeeded")
				won = i
				continue
			}
			require.ErrorIs(t, err, store.ErrExists)
		}
		require.NotEqual(t, -1, won, "no create of the id succeeded")
		got, err := b.s.Run(b.ctx, "same")
		require.NoError(t, err)
		require.Equal(t, runs[won].Owner.Token, got.Owner.Token, "the run is the winner's")
		for i, err := range errs[n:] {
			require.NoError(t, err)
			require.False(t, runs[n+i].LeaseUntil.IsZero(), "a run made in a group gets its lease")
		}
		all, err := b.s.ListRuns(b.ctx, store.RunFilter{})
		require.NoError(t, err)
		require.Len(t, all, n+1)
	})

	t.Run("MapsKeepNilAndEmptyApart", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "w", StartedAt: base,
			Inputs: map[string]any{}, Outputs: nil}))
		got, err := b.s.Run(b.ctx, "r1")
		require.NoError(t, err)
		require.NotNil(t, got.Inputs, "an empty map comes back empty")
		require.Empty(t, got.Inputs)
		require.Nil(t, got.Outputs, "a nil map comes back nil")
		require.Nil(t, got.Error)
	})

	t.Run("DuplicateIDIsRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		createRun(t, b.s, "r1", "w", base)
		err := b.s.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "other", StartedAt: base})
		require.ErrorIs(t, err, store.ErrExists)

		got, err := b.s.Run(b.ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, "w", got.Workflow, "the first run is kept")
	})

	t.Run("UpdateReplacesFields", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		r := createRun(t, b.s, "r1", "triage", base)
		r.Status = "failed"
		r.Error = &node.Error{Code: "x", Category: "internal", Message: "boom"}
		require.NoError(t, b.s.UpdateRun(b.ctx, r))

		finished := base.Add(time.Minute)
		r.Status, r.Error, r.FinishedAt = "completed", nil, &finished
		r.Outputs = map[string]any{"answer": 42}
		r.Tokens, r.CostUSD, r.Dir = 10, 0.5, "/runs/r1"
		require.NoError(t, b.s.UpdateRun(b.ctx, r))

		got, err := b.s.Run(b.ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, r, got, "a nil error replaces the earlier one")
	})

	t.Run("UnknownRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		_, err := b.s.Run(b.ctx, "nope")
		require.ErrorIs(t, err, store.ErrNotFound)
		require.Contains(t, err.Error(), "nope", "the error names the run")

		err = b.s.UpdateRun(b.ctx, &store.Run{ID: "nope", Workflow: "w", Status: "running", StartedAt: base})
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		// r1 is oldest; r4 and r5 start at the same time (ties go by id, descending).
		for i, spec := range []struct{ id, workflow, status string }{
			{"r1", "a", "completed"},
			{"r2", "b", "failed"},
			{"r3", "a", "failed"},
			{"r4", "a", "completed"},
			{"r5", "b", "completed"},
		} {
			started := base.Add(time.Duration(min(i, 3)) * time.Minute)
			require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: spec.id, Workflow: spec.workflow,
				Status: record.RunStatus(spec.status), StartedAt: started}))
		}

		for _, tc := range []struct {
			name   string
			filter store.RunFilter
			want   []string
		}{
			{"all newest first", store.RunFilter{}, []string{"r5", "r4", "r3", "r2", "r1"}},
			{"by workflow", store.RunFilter{Workflow: "a"}, []string{"r4", "r3", "r1"}},
			{"by status", store.RunFilter{Status: "failed"}, []string{"r3", "r2"}},
			{"by workflow and status", store.RunFilter{Workflow: "a", Status: "completed"}, []string{"r4", "r1"}},
			{"limit", store.RunFilter{Limit: 2}, []string{"r5", "r4"}},
			{"before", store.RunFilter{Before: base.Add(2 * time.Minute)}, []string{"r2", "r1"}},
			{"next page", store.RunFilter{Before: base.Add(3 * time.Minute), Limit: 2}, []string{"r3", "r2"}},
			{"no match", store.RunFilter{Workflow: "c"}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				runs, err := b.s.ListRuns(b.ctx, tc.filter)
				require.NoError(t, err)
				require.Equal(t, tc.want, runIDs(runs))
			})
		}

		runs, err := b.s.ListRuns(b.ctx, store.RunFilter{Limit: 1})
		require.NoError(t, err)
		require.Equal(t, "b", runs[0].Workflow, "listed runs carry their fields")
	})
}

// testDeleteRuns checks deleting old runs with their children.
func testDeleteRuns(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()

	t.Run("RemovesOldRunsAndTheirRecords", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		cutoff := base.Add(time.Hour)
		var old []*store.Run
		for i, id := range []string{"old2", "old1", "old3"} {
			r := createRun(t, b.s, id, "w", base.Add(time.Duration(i)*time.Minute))
			r.Dir = "/runs/" + id
			require.NoError(t, b.s.UpdateRun(b.ctx, r))
			old = append(old, r)
		}
		createRun(t, b.s, "new1", "w", cutoff)
		createRun(t, b.s, "new2", "w", cutoff.Add(time.Minute))
		for _, id := range []string{"old1", "new1"} {
			require.NoError(t, saveSteps(b.ctx, b.s, id, []*store.Step{{StepOrder: 1, Node: "a", Visit: 1, Status: "success"}}))
			require.NoError(t, b.s.AppendEvents(b.ctx, id, []store.Event{{Time: base, Type: "execution_started"}}))
		}

		deleted, err := b.s.DeleteRuns(b.ctx, cutoff, false)
		require.NoError(t, err)
		require.Equal(t, old, deleted, "the deleted runs come back whole, oldest first")

		for _, id := range []string{"old1", "old2", "old3"} {
			_, err := b.s.Run(b.ctx, id)
			require.ErrorIs(t, err, store.ErrNotFound, "run %s", id)
		}
		_, err = b.s.Steps(b.ctx, "old1")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = b.s.Events(b.ctx, "old1", 0, 0)
		require.ErrorIs(t, err, store.ErrNotFound)

		runs, err := b.s.ListRuns(b.ctx, store.RunFilter{})
		require.NoError(t, err)
		require.Equal(t, []string{"new2", "new1"}, runIDs(runs), "runs started at or after the time stay")
		steps, err := b.s.Steps(b.ctx, "new1")
		require.NoError(t, err)
		require.Len(t, steps, 1)
		evs, err := b.s.Events(b.ctx, "new1", 0, 0)
		require.NoError(t, err)
		require.Len(t, evs, 1)
	})

	t.Run("ARecreatedRunStartsClean", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		createRun(t, b.s, "r1", "w", base)
		require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{{StepOrder: 1, Node: "a", Visit: 1, Status: "success"}}))
		require.NoError(t, b.s.AppendEvents(b.ctx, "r1", []store.Event{{Time: base, Type: "a"}, {Time: base, Type: "b"}}))
		_, err := b.s.DeleteRuns(b.ctx, base.Add(time.Second), false)
		require.NoError(t, err)

		createRun(t, b.s, "r1", "w", base)
		steps, err := b.s.Steps(b.ctx, "r1")
		require.NoError(t, err)
		require.Empty(t, steps)
		evs := []store.Event{{Time: base, Type: "a"}}
		require.NoError(t, b.s.AppendEvents(b.ctx, "r1", evs))
		require.Equal(t, int64(1), evs[0].Seq)
	})

	t.Run("NothingToDelete", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)

		deleted, err := b.s.DeleteRuns(b.ctx, base, false)
		require.NoError(t, err)
		require.Empty(t, deleted, "a run started exactly at the time stays")
	})

	t.Run("CompactKeepsTheRest", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "old", "w", base)
		createRun(t, b.s, "new", "w", base.Add(time.Hour))
		require.NoError(t, b.s.AppendEvents(b.ctx, "new", []store.Event{{Time: base, Type: "a"}}))

		_, err := b.s.DeleteRuns(b.ctx, base.Add(time.Minute), false)
		require.NoError(t, err)
		require.NoError(t, b.s.Compact(b.ctx))

		r, err := b.s.Run(b.ctx, "new")
		require.NoError(t, err)
		require.Equal(t, "new", r.ID)
		evs, err := b.s.Events(b.ctx, "new", 0, 0)
		require.NoError(t, err)
		require.Len(t, evs, 1)
	})
}

// testCancelledContext checks a cancelled context.
func testCancelledContext(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()
	b := setup(t)
	createRun(t, b.s, "r1", "w", base)

	ctx, cancel := context.WithCancel(b.ctx)
	cancel()
	_, err := b.s.Run(ctx, "r1")
	require.ErrorIs(t, err, context.Canceled)
	err = b.s.CreateRun(ctx, &store.Run{ID: "r2", Workflow: "w", StartedAt: base})
	require.ErrorIs(t, err, context.Canceled)
	_, err = b.s.Run(b.ctx, "r2")
	require.ErrorIs(t, err, store.ErrNotFound, "a cancelled write writes nothing")
}
