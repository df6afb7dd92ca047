// Package storetest is the conformance suite of store.Store: every
// implementation runs it, so they all keep the contract the store package
// documents. Change the suite first, then the implementations.
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := sqlite.Open(filepath.Join(t.TempDir(), "skein.db"))
//			require.NoError(t, err)
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
package storetest

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
)

// Run runs the suite. open must return a new, empty store for the test it
// is given and close it when the test ends (t.Cleanup); the subtests run in
// parallel, each with a store of its own.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()

	type testBundle struct {
		ctx context.Context
		s   store.Store
	}
	setup := func(t *testing.T) *testBundle {
		t.Helper()
		return &testBundle{ctx: t.Context(), s: open(t)}
	}

	t.Run("Workflows", func(t *testing.T) {
		t.Parallel()

		t.Run("VersionsCountFromOne", func(t *testing.T) {
			t.Parallel()
			b := setup(t)

			before := time.Now().Add(-time.Second)
			v1, err := b.s.SaveWorkflow(b.ctx, "triage", []byte("name: triage # 1"), "h1")
			require.NoError(t, err)
			v2, err := b.s.SaveWorkflow(b.ctx, "triage", []byte("name: triage # 2"), "h2")
			require.NoError(t, err)

			require.Equal(t, 1, v1.Version)
			require.Equal(t, 2, v2.Version)
			require.Equal(t, "triage", v2.Name)
			require.Equal(t, "h2", v2.Hash)
			require.Equal(t, []byte("name: triage # 2"), v2.Source)
			require.WithinRange(t, v2.CreatedAt, before, time.Now().Add(time.Second), "CreatedAt is the time of saving")

			latest, err := b.s.Workflow(b.ctx, "triage", 0)
			require.NoError(t, err)
			require.Equal(t, v2, latest, "version 0 is the latest")

			first, err := b.s.Workflow(b.ctx, "triage", 1)
			require.NoError(t, err)
			require.Equal(t, v1, first)
		})

		t.Run("SameHashAsLatestStoresNothing", func(t *testing.T) {
			t.Parallel()
			b := setup(t)

			v1, err := b.s.SaveWorkflow(b.ctx, "triage", []byte("a"), "h1")
			require.NoError(t, err)
			again, err := b.s.SaveWorkflow(b.ctx, "triage", []byte("a, reformatted"), "h1")
			require.NoError(t, err)
			require.Equal(t, v1, again, "saving the latest hash again returns the latest version")

			_, err = b.s.Workflow(b.ctx, "triage", 2)
			require.ErrorIs(t, err, store.ErrNotFound, "no version 2 was stored")
		})

		t.Run("OlderHashIsANewVersion", func(t *testing.T) {
			t.Parallel()
			b := setup(t)

			for _, h := range []string{"h1", "h2"} {
				_, err := b.s.SaveWorkflow(b.ctx, "triage", []byte(h), h)
				require.NoError(t, err)
			}
			back, err := b.s.SaveWorkflow(b.ctx, "triage", []byte("h1"), "h1")
			require.NoError(t, err)
			require.Equal(t, 3, back.Version, "only the latest version's hash is deduplicated")
		})

		t.Run("NamesAreCountedApart", func(t *testing.T) {
			t.Parallel()
			b := setup(t)

			_, err := b.s.SaveWorkflow(b.ctx, "a", []byte("a"), "h")
			require.NoError(t, err)
			wb, err := b.s.SaveWorkflow(b.ctx, "b", []byte("b"), "h")
			require.NoError(t, err)
			require.Equal(t, 1, wb.Version)

			got, err := b.s.Workflow(b.ctx, "a", 0)
			require.NoError(t, err)
			require.Equal(t, []byte("a"), got.Source)
		})

		t.Run("EmptySource", func(t *testing.T) {
			t.Parallel()
			b := setup(t)

			_, err := b.s.SaveWorkflow(b.ctx, "empty", nil, "h")
			require.NoError(t, err)
			got, err := b.s.Workflow(b.ctx, "empty", 1)
			require.NoError(t, err)
			require.Empty(t, got.Source)
		})

		t.Run("NotFound", func(t *testing.T) {
			t.Parallel()
			b := setup(t)

			_, err := b.s.SaveWorkflow(b.ctx, "triage", []byte("a"), "h1")
			require.NoError(t, err)

			for _, tc := range []struct {
				name    string
				version int
			}{
				{"nope", 0},
				{"nope", 1},
				{"triage", 2},
			} {
				_, err := b.s.Workflow(b.ctx, tc.name, tc.version)
				require.ErrorIs(t, err, store.ErrNotFound, "workflow %s version %d", tc.name, tc.version)
				require.Contains(t, err.Error(), tc.name, "the error names the workflow")
			}
		})
	})

	t.Run("Runs", func(t *testing.T) {
		t.Parallel()

		t.Run("EveryFieldRoundTrips", func(t *testing.T) {
			t.Parallel()
			b := setup(t)

			finished := base.Add(90 * time.Second)
			want := &store.Run{
				ID: "r1", Workflow: "triage", WorkflowVersion: 3, File: "/flows/triage.yaml",
				Dir: "/w/.skein/runs/triage/2025-03-01_12-00-00_r1", ParentID: "r0", Trigger: "start",
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
			require.Equal(t, "pending", r.Status, "an empty status becomes pending")
			require.WithinRange(t, r.StartedAt, before, time.Now().Add(time.Second), "a zero StartedAt becomes now")

			got, err := b.s.Run(b.ctx, "r1")
			require.NoError(t, err)
			require.Equal(t, "pending", got.Status)
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
					Status: spec.status, StartedAt: started}))
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
	})

	t.Run("Steps", func(t *testing.T) {
		t.Parallel()

		t.Run("RetryAndFinishReplaceTheStep", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "w", base)

			started := base.Add(time.Second)
			step := &store.Step{StepOrder: 1, Node: "fetch", Type: "http", Visit: 1, Attempts: 1, Status: "running",
				StartedAt: &started}
			require.NoError(t, b.s.SaveSteps(b.ctx, "r1", []*store.Step{step}))

			failed := base.Add(2 * time.Second)
			step.Status, step.FinishedAt = "failed", &failed
			step.Error = &node.Error{Code: "http_status", Category: "http", Message: "503"}
			require.NoError(t, b.s.SaveSteps(b.ctx, "r1", []*store.Step{step}))

			step.Status, step.Attempts, step.FinishedAt = "running", 2, nil
			require.NoError(t, b.s.SaveSteps(b.ctx, "r1", []*store.Step{step}))

			done := base.Add(5 * time.Second)
			step.Status, step.Error, step.FinishedAt, step.DurationMS = "success", nil, &done, 4000
			step.Output = map[string]any{"status": 200}
			require.NoError(t, b.s.SaveSteps(b.ctx, "r1", []*store.Step{step}))

			steps, err := b.s.Steps(b.ctx, "r1")
			require.NoError(t, err)
			require.Len(t, steps, 1, "saving (run, node, visit) again replaces the step")
			want := *step
			want.RunID, want.Generation = "r1", 1
			require.Equal(t, &want, steps[0])
		})

		t.Run("ByStepOrder", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "w", base)

			mk := func(order int, nodeID string, visit int) *store.Step {
				return &store.Step{StepOrder: order, Node: nodeID, Visit: visit, Status: "success"}
			}
			require.NoError(t, b.s.SaveSteps(b.ctx, "r1", []*store.Step{mk(3, "body", 2), mk(1, "start", 1)}))
			require.NoError(t, b.s.SaveSteps(b.ctx, "r1", []*store.Step{mk(4, "done", 1), mk(2, "body", 1)}))

			steps, err := b.s.Steps(b.ctx, "r1")
			require.NoError(t, err)
			var got []string
			for _, st := range steps {
				got = append(got, fmt.Sprintf("%d:%s#%d", st.StepOrder, st.Node, st.Visit))
			}
			require.Equal(t, []string{"1:start#1", "2:body#1", "3:body#2", "4:done#1"}, got,
				"each visit is a step of its own, listed by step order")
		})

		t.Run("ValuesRoundTrip", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "w", base)

			started, finished := base, base.Add(1500*time.Millisecond)
			want := &store.Step{
				RunID: "r1", Generation: 1, StepOrder: 1, Node: "agent", Type: "agent", Visit: 2, Iteration: 1, Attempts: 3,
				Status: "failed",
				Params: map[string]any{"prompt": "<b>Say</b> \"hi\" & bye — ✓", "max_tool_calls": 5,
					"tools": []any{"fs.read", map[string]any{"name": "web", "weight": 0.5}}},
				Output: map[string]any{
					"exit_code": 0, "negative": -7, "max": math.MaxInt64, "ratio": 2.5, "huge": 1e300,
					"ok": true, "none": nil, "empty_list": []any{}, "empty_map": map[string]any{},
					"nested": map[string]any{"items": []any{1, "two", false, nil, []any{3.25}}},
				},
				Error: &node.Error{Code: "tool_failed", Category: "mcp", Message: "tool fs.read failed",
					Details: map[string]any{"attempt": 3, "args": map[string]any{"path": "/tmp/x"}}},
				ConfigHash: "sha256:abc", StartedAt: &started, FinishedAt: &finished, DurationMS: 1500,
				Tokens: 512, CostUSD: 0.003,
			}
			require.NoError(t, b.s.SaveSteps(b.ctx, "r1", []*store.Step{clone(want)}))

			steps, err := b.s.Steps(b.ctx, "r1")
			require.NoError(t, err)
			require.Len(t, steps, 1)
			require.Equal(t, want, steps[0], "whole numbers come back as int, others as float64")
		})

		t.Run("CachedPinnedAndOutputRef", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "w", base)

			require.NoError(t, b.s.SaveSteps(b.ctx, "r1", []*store.Step{
				{StepOrder: 1, Node: "a", Visit: 1, Status: "success", Cached: true, ConfigHash: "h-a"},
				{StepOrder: 2, Node: "b", Visit: 1, Status: "success", Pinned: true},
				{StepOrder: 3, Node: "c", Visit: 1, Status: "success", OutputRef: "c/output.json"},
			}))

			steps, err := b.s.Steps(b.ctx, "r1")
			require.NoError(t, err)
			require.Len(t, steps, 3)
			require.True(t, steps[0].Cached)
			require.False(t, steps[0].Pinned)
			require.Equal(t, "h-a", steps[0].ConfigHash)
			require.True(t, steps[1].Pinned)
			require.False(t, steps[1].Cached)
			require.Equal(t, "c/output.json", steps[2].OutputRef)
			require.Nil(t, steps[2].Output, "an output kept in a file leaves Output nil")
			require.Nil(t, steps[2].StartedAt)
		})

		t.Run("ABatchIsSavedWholeOrNotAtAll", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "w", base)

			err := b.s.SaveSteps(b.ctx, "r1", []*store.Step{
				{StepOrder: 1, Node: "a", Visit: 1, Status: "success"},
				{StepOrder: 2, Node: "b", Visit: 1, Status: "success", Output: map[string]any{"bad": math.NaN()}},
			})
			require.Error(t, err, "NaN cannot be encoded")

			steps, err := b.s.Steps(b.ctx, "r1")
			require.NoError(t, err)
			require.Empty(t, steps, "no step of the failed batch was saved")
		})

		t.Run("UnknownRun", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "w", base)

			err := b.s.SaveSteps(b.ctx, "nope", []*store.Step{{StepOrder: 1, Node: "a", Visit: 1, Status: "running"}})
			require.ErrorIs(t, err, store.ErrNotFound)
			_, err = b.s.Steps(b.ctx, "nope")
			require.ErrorIs(t, err, store.ErrNotFound)

			steps, err := b.s.Steps(b.ctx, "r1")
			require.NoError(t, err, "a run without steps is not an error")
			require.Empty(t, steps)
		})

		t.Run("GenerationsAreKeptApart", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "w", base)
			require.NoError(t, b.s.SaveSteps(b.ctx, "r1", []*store.Step{
				{StepOrder: 1, Node: "a", Visit: 1, Status: "success", ConfigHash: "ha", Masked: true},
				{StepOrder: 2, Node: "b", Visit: 1, Status: "running", ProcessGroup: 4242},
			}))
			require.NoError(t, b.s.SaveSteps(b.ctx, "r1", []*store.Step{
				{Generation: 2, StepOrder: 1, Node: "a", Visit: 1, Status: "running"},
			}))

			steps, err := b.s.Steps(b.ctx, "r1")
			require.NoError(t, err)
			require.Len(t, steps, 1, "Steps shows the latest generation")
			require.Equal(t, 2, steps[0].Generation)
			require.Equal(t, "running", steps[0].Status)

			hist, err := b.s.StepHistory(b.ctx, "r1")
			require.NoError(t, err)
			require.Len(t, hist, 3, "a later generation overwrites nothing of an earlier one")
			require.Equal(t, []int{1, 1, 2}, []int{hist[0].Generation, hist[1].Generation, hist[2].Generation})
			require.Equal(t, "success", hist[0].Status)
			require.Equal(t, "ha", hist[0].ConfigHash)
			require.True(t, hist[0].Masked, "a masked step stays marked")
			require.False(t, hist[1].Masked)
			require.Equal(t, 4242, hist[1].ProcessGroup, "a running step's process group round-trips")

			_, err = b.s.StepHistory(b.ctx, "nope")
			require.ErrorIs(t, err, store.ErrNotFound)
		})
	})

	t.Run("Events", func(t *testing.T) {
		t.Parallel()

		t.Run("SeqCountsOnAcrossBatches", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "w", base)
			createRun(t, b.s, "r2", "w", base)

			first := []store.Event{
				{Time: base, Type: "execution_started", Data: map[string]any{"inputs": map[string]any{"n": 1}}},
				{Time: base.Add(time.Millisecond), Type: "node_started", Node: "a", Visit: 1},
				{Time: base.Add(2 * time.Millisecond), Type: "loop_iteration", Node: "loop", Visit: 1, Iteration: 2,
					Data: map[string]any{"iteration": 2, "ratio": 0.5}},
			}
			require.NoError(t, b.s.AppendEvents(b.ctx, "r1", first))
			second := []store.Event{
				{Time: base.Add(3 * time.Millisecond), Type: "node_finished", Node: "a", Visit: 1},
				{Time: base.Add(4 * time.Millisecond), Type: "execution_finished", Data: map[string]any{}},
			}
			require.NoError(t, b.s.AppendEvents(b.ctx, "r1", second))
			other := []store.Event{{Time: base, Type: "execution_started"}}
			require.NoError(t, b.s.AppendEvents(b.ctx, "r2", other))

			require.Equal(t, []int64{1, 2, 3}, seqs(first), "AppendEvents sets Seq in the slice")
			require.Equal(t, []int64{4, 5}, seqs(second), "a later batch counts on")
			require.Equal(t, []int64{1}, seqs(other), "each run counts from 1")
			require.Equal(t, "r1", first[0].RunID, "AppendEvents sets RunID in the slice")

			got, err := b.s.Events(b.ctx, "r1", 0, 0)
			require.NoError(t, err)
			require.Equal(t, append(first, second...), got)
		})

		t.Run("Paging", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "w", base)

			evs := make([]store.Event, 5)
			for i := range evs {
				evs[i] = store.Event{Time: base, Type: "tool_call", Node: "agent", Visit: 1}
			}
			require.NoError(t, b.s.AppendEvents(b.ctx, "r1", evs))

			for _, tc := range []struct {
				name     string
				afterSeq int64
				limit    int
				want     []int64
			}{
				{"all", 0, 0, []int64{1, 2, 3, 4, 5}},
				{"first page", 0, 2, []int64{1, 2}},
				{"next page", 2, 2, []int64{3, 4}},
				{"last page", 4, 2, []int64{5}},
				{"past the end", 5, 2, nil},
			} {
				t.Run(tc.name, func(t *testing.T) {
					got, err := b.s.Events(b.ctx, "r1", tc.afterSeq, tc.limit)
					require.NoError(t, err)
					require.Equal(t, tc.want, seqs(got))
				})
			}
		})

		t.Run("ConcurrentAppendsGetDistinctSeqs", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "w", base)

			const writers, batches, size = 6, 5, 3
			var wg sync.WaitGroup
			errs := make(chan error, writers*batches)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range batches {
						evs := make([]store.Event, size)
						for i := range evs {
							evs[i] = store.Event{Time: base, Type: "tool_call", Node: fmt.Sprintf("n%d", w)}
						}
						errs <- b.s.AppendEvents(b.ctx, "r1", evs)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}

			got, err := b.s.Events(b.ctx, "r1", 0, 0)
			require.NoError(t, err)
			require.Len(t, got, writers*batches*size)
			for i, ev := range got {
				require.Equal(t, int64(i+1), ev.Seq, "seqs run 1, 2, 3… without gaps")
			}
		})

		t.Run("EmptyBatch", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "w", base)

			require.NoError(t, b.s.AppendEvents(b.ctx, "r1", nil))
			evs := []store.Event{{Time: base, Type: "execution_started"}}
			require.NoError(t, b.s.AppendEvents(b.ctx, "r1", evs))
			require.Equal(t, int64(1), evs[0].Seq, "an empty batch uses no seq")
		})

		t.Run("UnknownRun", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "w", base)

			err := b.s.AppendEvents(b.ctx, "nope", []store.Event{{Time: base, Type: "execution_started"}})
			require.ErrorIs(t, err, store.ErrNotFound)
			_, err = b.s.Events(b.ctx, "nope", 0, 0)
			require.ErrorIs(t, err, store.ErrNotFound)

			got, err := b.s.Events(b.ctx, "r1", 0, 0)
			require.NoError(t, err, "a run without events is not an error")
			require.Empty(t, got)
		})
	})

	t.Run("Tokens", func(t *testing.T) {
		t.Parallel()

		t.Run("RoundTripAndUniqueID", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			hash := make([]byte, 32)
			hash[0], hash[31] = 0xff, 0x01
			tok := &store.Token{ID: "abc123", Name: "ci", Scope: "run", Hash: hash}
			require.NoError(t, b.s.CreateToken(b.ctx, tok))
			require.False(t, tok.CreatedAt.IsZero(), "CreatedAt is written back")

			got, err := b.s.Token(b.ctx, "abc123")
			require.NoError(t, err)
			require.Equal(t, "ci", got.Name)
			require.Equal(t, "run", got.Scope)
			require.Equal(t, hash, got.Hash, "the hash comes back byte for byte")
			require.True(t, got.CreatedAt.Equal(tok.CreatedAt.Truncate(time.Microsecond)))

			err = b.s.CreateToken(b.ctx, &store.Token{ID: "abc123", Scope: "admin", Hash: hash})
			require.ErrorIs(t, err, store.ErrExists)
			got, err = b.s.Token(b.ctx, "abc123")
			require.NoError(t, err)
			require.Equal(t, "run", got.Scope, "a second token with the id changes nothing")

			_, err = b.s.Token(b.ctx, "nope")
			require.ErrorIs(t, err, store.ErrNotFound)
		})

		t.Run("ListAndRevoke", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			all, err := b.s.Tokens(b.ctx)
			require.NoError(t, err)
			require.Empty(t, all)
			for i, id := range []string{"t2", "t1", "t3"} {
				require.NoError(t, b.s.CreateToken(b.ctx, &store.Token{ID: id, Name: "n" + id, Scope: "read",
					Hash: []byte{byte(i + 1)}, CreatedAt: base.Add(time.Duration(i) * time.Second)}))
			}
			all, err = b.s.Tokens(b.ctx)
			require.NoError(t, err)
			var ids []string
			for _, tk := range all {
				ids = append(ids, tk.ID)
			}
			require.Equal(t, []string{"t2", "t1", "t3"}, ids, "oldest first")
			require.Equal(t, "nt1", all[1].Name)
			require.Equal(t, []byte{2}, all[1].Hash)
			require.True(t, all[1].CreatedAt.Equal(base.Add(time.Second)))

			require.NoError(t, b.s.DeleteToken(b.ctx, "t1"))
			_, err = b.s.Token(b.ctx, "t1")
			require.ErrorIs(t, err, store.ErrNotFound, "a revoked token is gone")
			require.ErrorIs(t, b.s.DeleteToken(b.ctx, "t1"), store.ErrNotFound)
			all, err = b.s.Tokens(b.ctx)
			require.NoError(t, err)
			require.Len(t, all, 2)
		})
	})

	t.Run("Chat", func(t *testing.T) {
		t.Parallel()

		t.Run("TurnsCountPerConversationWithTheirRuns", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			done := createRun(t, b.s, "r1", "chat", base)
			for i, id := range []string{"r2", "r3", "r4"} {
				createRun(t, b.s, id, "chat", base.Add(time.Duration(i+1)*time.Second))
			}
			fin := base.Add(time.Second)
			done.Status, done.Outputs, done.FinishedAt = "completed", map[string]any{"reply": "hi Ada"}, &fin
			require.NoError(t, b.s.SaveBatch(b.ctx, []store.Batch{{RunID: "r1", Finish: done}}))

			add := func(conv, run, msg string) *store.ChatTurn {
				t.Helper()
				ct := &store.ChatTurn{Workflow: "chat", Conversation: conv, RunID: run, Message: msg}
				require.NoError(t, b.s.AddChatTurn(b.ctx, ct))
				return ct
			}
			first := add("c1", "r1", "hello")
			require.Equal(t, 1, first.Turn)
			require.False(t, first.CreatedAt.IsZero(), "CreatedAt is written back")
			require.Equal(t, 1, add("c2", "r2", "another conversation").Turn, "turns count per conversation")
			require.Equal(t, 2, add("c1", "r3", "and then?").Turn)
			require.Equal(t, 3, add("c1", "r4", "bye").Turn)

			all, err := b.s.ChatTurns(b.ctx, "chat", "c1", 0)
			require.NoError(t, err)
			require.Len(t, all, 3)
			require.Equal(t, []string{"hello", "and then?", "bye"}, []string{all[0].Message, all[1].Message, all[2].Message}, "oldest first")
			require.Equal(t, "r1", all[0].Run.ID)
			require.Equal(t, "completed", all[0].Run.Status)
			require.Equal(t, "hi Ada", all[0].Run.Outputs["reply"])
			require.Equal(t, "running", all[1].Run.Status)

			last, err := b.s.ChatTurns(b.ctx, "chat", "c1", 2)
			require.NoError(t, err)
			require.Equal(t, []int{2, 3}, []int{last[0].Turn, last[1].Turn}, "the last two, oldest first")

			none, err := b.s.ChatTurns(b.ctx, "other", "c1", 0)
			require.NoError(t, err)
			require.Empty(t, none, "conversations are per workflow")

			err = b.s.AddChatTurn(b.ctx, &store.ChatTurn{Workflow: "chat", Conversation: "c1", RunID: "nope", Message: "x"})
			require.ErrorIs(t, err, store.ErrNotFound, "a message needs its run")
		})

		t.Run("TurnsGoWithTheirRuns", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "old", "chat", base)
			createRun(t, b.s, "new", "chat", base.Add(time.Hour))
			require.NoError(t, b.s.AddChatTurn(b.ctx, &store.ChatTurn{Workflow: "chat", Conversation: "c", RunID: "old", Message: "1"}))
			require.NoError(t, b.s.AddChatTurn(b.ctx, &store.ChatTurn{Workflow: "chat", Conversation: "c", RunID: "new", Message: "2"}))
			_, err := b.s.DeleteRuns(b.ctx, base.Add(time.Minute), false)
			require.NoError(t, err)
			left, err := b.s.ChatTurns(b.ctx, "chat", "c", 0)
			require.NoError(t, err)
			require.Len(t, left, 1)
			require.Equal(t, "2", left[0].Message)
			require.Equal(t, 2, left[0].Turn)
		})
	})

	t.Run("Memory", func(t *testing.T) {
		t.Parallel()

		t.Run("ThreadsKeepMessagesInOrderPerWorkflow", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "chat", base)
			createRun(t, b.s, "r2", "chat", base.Add(time.Second))
			keep := func(thread string, src store.MemorySource, contents ...string) []*store.MemoryMessage {
				t.Helper()
				var msgs []*store.MemoryMessage
				for i, c := range contents {
					role := "user"
					if i%2 == 1 {
						role = "assistant"
					}
					msgs = append(msgs, &store.MemoryMessage{Role: role, Content: c})
				}
				require.NoError(t, b.s.ReplaceMemory(b.ctx, "chat", thread, src, msgs))
				return msgs
			}
			first := keep("t1", store.MemorySource{RunID: "r1", Step: "agent/1"}, "hello", "hi Ada")
			require.Positive(t, first[0].Seq, "Seq is written back")
			require.Greater(t, first[1].Seq, first[0].Seq)
			require.False(t, first[0].CreatedAt.IsZero(), "CreatedAt is written back")
			keep("t2", store.MemorySource{RunID: "r1", Step: "agent/1"}, "another thread", "yes")
			keep("t1", store.MemorySource{RunID: "r2", Step: "agent/1"}, "and then?", "then bye")

			all, err := b.s.Memory(b.ctx, "chat", "t1", 0, store.MemorySource{})
			require.NoError(t, err)
			require.Equal(t, []string{"hello", "hi Ada", "and then?", "then bye"}, memoryContents(all), "oldest first, one thread")
			require.Equal(t, "assistant", all[1].Role)
			require.Equal(t, "r2", all[2].RunID)
			require.Equal(t, "agent/1", all[2].Step)

			last, err := b.s.Memory(b.ctx, "chat", "t1", 3, store.MemorySource{})
			require.NoError(t, err)
			require.Equal(t, []string{"hi Ada", "and then?", "then bye"}, memoryContents(last), "the last three, oldest first")

			none, err := b.s.Memory(b.ctx, "other", "t1", 0, store.MemorySource{})
			require.NoError(t, err)
			require.Empty(t, none, "threads are per workflow")

			err = b.s.ReplaceMemory(b.ctx, "chat", "t1", store.MemorySource{RunID: "nope", Step: "agent/1"}, []*store.MemoryMessage{{Role: "user", Content: "x"}})
			require.ErrorIs(t, err, store.ErrNotFound, "a message needs its run")
		})

		t.Run("AStepRunAgainReplacesWhatItKept", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "chat", base)
			createRun(t, b.s, "r2", "chat", base.Add(time.Second))
			createRun(t, b.s, "r3", "chat", base.Add(2*time.Second))
			msgs := func(contents ...string) []*store.MemoryMessage {
				var out []*store.MemoryMessage
				for _, c := range contents {
					out = append(out, &store.MemoryMessage{Role: "user", Content: c})
				}
				return out
			}
			r1 := store.MemorySource{RunID: "r1", Step: "agent/1"}
			require.NoError(t, b.s.ReplaceMemory(b.ctx, "chat", "t", r1, msgs("first try")))
			require.NoError(t, b.s.ReplaceMemory(b.ctx, "chat", "t", store.MemorySource{RunID: "r1", Step: "other/1"}, msgs("other step")))
			require.NoError(t, b.s.ReplaceMemory(b.ctx, "chat", "t", r1, msgs("resumed")))
			all, err := b.s.Memory(b.ctx, "chat", "t", 0, store.MemorySource{})
			require.NoError(t, err)
			require.Equal(t, []string{"other step", "resumed"}, memoryContents(all), "the step's second write replaces its first")

			mine, err := b.s.Memory(b.ctx, "chat", "t", 0, r1)
			require.NoError(t, err)
			require.Equal(t, []string{"other step"}, memoryContents(mine), "a step's own messages are left out of its memory")

			rerun := store.MemorySource{RunID: "r2", Step: "agent/1", Replaces: "r1"}
			before, err := b.s.Memory(b.ctx, "chat", "t", 0, rerun)
			require.NoError(t, err)
			require.Equal(t, []string{"other step"}, memoryContents(before), "a rerun does not see the exchange it re-runs")
			require.NoError(t, b.s.ReplaceMemory(b.ctx, "chat", "t", rerun, msgs("rerun")))
			require.NoError(t, b.s.ReplaceMemory(b.ctx, "chat", "t", store.MemorySource{RunID: "r3", Step: "agent/1", Replaces: "r2"}, msgs("rerun of the rerun")))
			all, err = b.s.Memory(b.ctx, "chat", "t", 0, store.MemorySource{})
			require.NoError(t, err)
			require.Equal(t, []string{"other step", "rerun of the rerun"}, memoryContents(all), "a rerun replaces the run it re-runs")
		})

		t.Run("MessagesGoWithTheirRuns", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "old", "chat", base)
			createRun(t, b.s, "new", "chat", base.Add(time.Hour))
			for _, id := range []string{"old", "new"} {
				require.NoError(t, b.s.ReplaceMemory(b.ctx, "chat", "t", store.MemorySource{RunID: id, Step: "agent/1"},
					[]*store.MemoryMessage{{Role: "user", Content: id}}))
			}
			_, err := b.s.DeleteRuns(b.ctx, base.Add(time.Minute), false)
			require.NoError(t, err)
			left, err := b.s.Memory(b.ctx, "chat", "t", 0, store.MemorySource{})
			require.NoError(t, err)
			require.Equal(t, []string{"new"}, memoryContents(left), "a pruned run's messages are gone")
		})
	})

	t.Run("Schedules", func(t *testing.T) {
		t.Parallel()
		at := func(sec int) time.Time { return base.Truncate(time.Second).Add(time.Duration(sec) * time.Second) }

		t.Run("SetKeepsAnUnchangedSpec", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			got, err := b.s.SetSchedule(b.ctx, store.Schedule{Workflow: "w", Trigger: "nightly", Spec: "30 2 * * *|UTC", NextFire: at(10)})
			require.NoError(t, err)
			require.True(t, got.NextFire.Equal(at(10)))
			require.True(t, got.LastFire.IsZero(), "no fire yet")
			require.Empty(t, got.LastRunID)
			require.False(t, got.UpdatedAt.IsZero())

			ok, err := b.s.AdvanceSchedule(b.ctx, store.Schedule{Workflow: "w", Trigger: "nightly", Spec: "30 2 * * *|UTC",
				NextFire: at(20), LastFire: at(10), LastRunID: "r1"}, at(10))
			require.NoError(t, err)
			require.True(t, ok)

			// Set again with the same spec (a reload, another server):
			// the stored fire times go on.
			got, err = b.s.SetSchedule(b.ctx, store.Schedule{Workflow: "w", Trigger: "nightly", Spec: "30 2 * * *|UTC", NextFire: at(99)})
			require.NoError(t, err)
			require.True(t, got.NextFire.Equal(at(20)), "kept: %v", got.NextFire)
			require.True(t, got.LastFire.Equal(at(10)))
			require.Equal(t, "r1", got.LastRunID)

			// Another spec starts afresh.
			got, err = b.s.SetSchedule(b.ctx, store.Schedule{Workflow: "w", Trigger: "nightly", Spec: "0 3 * * *|UTC", NextFire: at(50)})
			require.NoError(t, err)
			require.True(t, got.NextFire.Equal(at(50)))
			require.True(t, got.LastFire.IsZero())
			require.Empty(t, got.LastRunID)

			all, err := b.s.Schedules(b.ctx)
			require.NoError(t, err)
			require.Len(t, all, 1)
			require.Equal(t, got, all[0])
		})

		t.Run("AdvanceOnlyFromTheStoredTime", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			sc := store.Schedule{Workflow: "w", Trigger: "tick", Spec: "@every 1s", NextFire: at(1)}
			_, err := b.s.SetSchedule(b.ctx, sc)
			require.NoError(t, err)

			next := sc
			next.NextFire, next.LastFire, next.LastRunID = at(2), at(1), "a"
			ok, err := b.s.AdvanceSchedule(b.ctx, next, at(0))
			require.NoError(t, err)
			require.False(t, ok, "from a time that is not the stored one")
			other := next
			other.Spec = "@every 2s"
			ok, err = b.s.AdvanceSchedule(b.ctx, other, at(1))
			require.NoError(t, err)
			require.False(t, ok, "with another spec")
			ok, err = b.s.AdvanceSchedule(b.ctx, next, at(1))
			require.NoError(t, err)
			require.True(t, ok)
			ok, err = b.s.AdvanceSchedule(b.ctx, next, at(1))
			require.NoError(t, err)
			require.False(t, ok, "the same fire twice")

			_, err = b.s.AdvanceSchedule(b.ctx, store.Schedule{Workflow: "w", Trigger: "nope", Spec: "@every 1s", NextFire: at(2)}, at(1))
			require.ErrorIs(t, err, store.ErrNotFound)
		})

		t.Run("ConcurrentAdvancesClaimEachFireOnce", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			_, err := b.s.SetSchedule(b.ctx, store.Schedule{Workflow: "w", Trigger: "tick", Spec: "@every 1s", NextFire: at(0)})
			require.NoError(t, err)
			const fires, claimants = 20, 4
			var mu sync.Mutex
			won := map[int]int{}
			var wg sync.WaitGroup
			for c := range claimants {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for f := range fires {
						ok, err := b.s.AdvanceSchedule(b.ctx, store.Schedule{Workflow: "w", Trigger: "tick", Spec: "@every 1s",
							NextFire: at(f + 1), LastFire: at(f), LastRunID: fmt.Sprintf("c%d-f%d", c, f)}, at(f))
						if !assertNoError(t, err) {
							return
						}
						if ok {
							mu.Lock()
							won[f]++
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			// Claimants that lag may find a fire taken and the next
			// ones too; each fire is claimed by at most one, and the
			// last by exactly one, or a claim was lost.
			for f, n := range won {
				require.Equal(t, 1, n, "fire %d claimed %d times", f, n)
			}
			all, err := b.s.Schedules(b.ctx)
			require.NoError(t, err)
			require.True(t, all[0].NextFire.Equal(at(fires)), "every fire was claimed: next is %v", all[0].NextFire)
			require.Len(t, won, fires)
		})

		t.Run("ListedByWorkflowAndTrigger", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			for _, k := range [][2]string{{"b", "x"}, {"a", "y"}, {"a", "x"}} {
				_, err := b.s.SetSchedule(b.ctx, store.Schedule{Workflow: k[0], Trigger: k[1], Spec: "@daily|UTC", NextFire: at(1)})
				require.NoError(t, err)
			}
			all, err := b.s.Schedules(b.ctx)
			require.NoError(t, err)
			var keys []string
			for _, sc := range all {
				keys = append(keys, sc.Workflow+"/"+sc.Trigger)
			}
			require.Equal(t, []string{"a/x", "a/y", "b/x"}, keys)
		})
	})

	t.Run("Checkpoints", func(t *testing.T) {
		t.Parallel()

		t.Run("SaveReplaces", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "w", base)

			_, err := b.s.Checkpoint(b.ctx, "r1")
			require.ErrorIs(t, err, store.ErrNotFound, "no checkpoint yet")

			require.NoError(t, b.s.SaveCheckpoint(b.ctx, "r1", []byte(`{"v":1}`)))
			require.NoError(t, b.s.SaveCheckpoint(b.ctx, "r1", []byte{0, 1, 2, 0xff}))

			got, err := b.s.Checkpoint(b.ctx, "r1")
			require.NoError(t, err)
			require.Equal(t, []byte{0, 1, 2, 0xff}, got, "the last checkpoint is kept, byte for byte")
		})

		t.Run("UnknownRun", func(t *testing.T) {
			t.Parallel()
			b := setup(t)

			err := b.s.SaveCheckpoint(b.ctx, "nope", []byte("x"))
			require.ErrorIs(t, err, store.ErrNotFound)
		})
	})

	t.Run("DeleteRuns", func(t *testing.T) {
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
				require.NoError(t, b.s.SaveSteps(b.ctx, id, []*store.Step{{StepOrder: 1, Node: "a", Visit: 1, Status: "success"}}))
				require.NoError(t, b.s.AppendEvents(b.ctx, id, []store.Event{{Time: base, Type: "execution_started"}}))
				require.NoError(t, b.s.SaveCheckpoint(b.ctx, id, []byte("cp")))
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
			_, err = b.s.Checkpoint(b.ctx, "old1")
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
			cp, err := b.s.Checkpoint(b.ctx, "new1")
			require.NoError(t, err)
			require.Equal(t, []byte("cp"), cp)
		})

		t.Run("ARecreatedRunStartsClean", func(t *testing.T) {
			t.Parallel()
			b := setup(t)

			createRun(t, b.s, "r1", "w", base)
			require.NoError(t, b.s.SaveSteps(b.ctx, "r1", []*store.Step{{StepOrder: 1, Node: "a", Visit: 1, Status: "success"}}))
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
	})

	t.Run("Deliveries", func(t *testing.T) {
		t.Parallel()
		owner := func(tok string) store.Owner { return store.Owner{Host: "h1", PID: 100, Token: tok} }

		t.Run("OwedUntilEndedAndHeldByOne", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "w", Status: "completed", StartedAt: base}))
			require.NoError(t, b.s.OweDelivery(b.ctx, "r1", 1, owner("t1"), time.Hour))
			require.NoError(t, b.s.OweDelivery(b.ctx, "r1", 1, owner("t9"), time.Hour), "owing it again changes nothing")
			ds, err := b.s.Deliveries(b.ctx)
			require.NoError(t, err)
			require.Len(t, ds, 1)
			require.Equal(t, "r1", ds[0].RunID)
			require.Equal(t, 1, ds[0].Generation)
			require.Zero(t, ds[0].Attempts)
			require.Equal(t, owner("t1"), ds[0].Owner)
			require.False(t, ds[0].LeaseExpired)

			_, err = b.s.ClaimDelivery(b.ctx, "r1", 1, owner("t2"), time.Hour, "")
			require.ErrorIs(t, err, store.ErrOwned, "a live lease cannot be claimed")
			var oe *store.OwnedError
			require.ErrorAs(t, err, &oe)
			require.Equal(t, owner("t1"), oe.Owner)

			next := time.Now().Add(time.Minute).UTC().Truncate(time.Microsecond)
			require.NoError(t, b.s.DeliveryAttempted(b.ctx, "r1", 1, "t1", 2, next, time.Second))
			require.ErrorIs(t, b.s.DeliveryAttempted(b.ctx, "r1", 1, "t2", 3, next, time.Second), store.ErrLeaseLost)
			ds, err = b.s.Deliveries(b.ctx)
			require.NoError(t, err)
			require.Equal(t, 2, ds[0].Attempts)
			require.True(t, next.Equal(ds[0].NextAt), "when the next attempt is due: %v", ds[0].NextAt)
			require.WithinDuration(t, next.Add(time.Second), ds[0].LeaseUntil, time.Second, "held through the wait and one attempt")

			d, err := b.s.ClaimDelivery(b.ctx, "r1", 1, owner("t2"), time.Hour, "t1")
			require.NoError(t, err, "the caller that found t1 dead takes over")
			require.Equal(t, owner("t2"), d.Owner)
			require.Equal(t, 2, d.Attempts, "the attempts go on from where they were")
			require.ErrorIs(t, b.s.EndDelivery(b.ctx, "r1", 1, "t1"), store.ErrLeaseLost, "the old owner cannot end it")
			require.NoError(t, b.s.EndDelivery(b.ctx, "r1", 1, "t2"))
			ds, err = b.s.Deliveries(b.ctx)
			require.NoError(t, err)
			require.Empty(t, ds)
			_, err = b.s.ClaimDelivery(b.ctx, "r1", 1, owner("t3"), time.Hour, "")
			require.ErrorIs(t, err, store.ErrNotFound)
		})

		t.Run("AnExpiredLeaseIsClaimedOnce", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "w", Status: "failed", StartedAt: base}))
			require.NoError(t, b.s.OweDelivery(b.ctx, "r1", 1, owner("t1"), -time.Second))
			ds, err := b.s.Deliveries(b.ctx)
			require.NoError(t, err)
			require.True(t, ds[0].LeaseExpired)
			const n = 6
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					_, errs[i] = b.s.ClaimDelivery(b.ctx, "r1", 1, owner(fmt.Sprint("c", i)), time.Hour, "")
				}(i)
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				if err == nil {
					won++
				} else {
					require.ErrorIs(t, err, store.ErrOwned)
				}
			}
			require.Equal(t, 1, won, "exactly one of the claims at once proceeds")
		})

		t.Run("GoWithTheirRun", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "w", Status: "completed", StartedAt: base}))
			require.NoError(t, b.s.OweDelivery(b.ctx, "r1", 1, owner("t1"), time.Hour))
			_, err := b.s.DeleteRuns(b.ctx, base.Add(time.Second), false)
			require.NoError(t, err)
			ds, err := b.s.Deliveries(b.ctx)
			require.NoError(t, err)
			require.Empty(t, ds)
		})
	})

	t.Run("Leases", func(t *testing.T) {
		t.Parallel()
		owner := func(tok string) store.Owner { return store.Owner{Host: "h1", PID: 100, Token: tok} }

		t.Run("CreateWithOwnerHoldsALease", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			r := &store.Run{ID: "r1", Workflow: "w", Status: "running", StartedAt: base, Owner: owner("t1"), LeaseTTL: time.Hour}
			require.NoError(t, b.s.CreateRun(b.ctx, r))
			require.Equal(t, 1, r.Generation)
			require.WithinDuration(t, time.Now().Add(time.Hour), r.LeaseUntil, time.Minute, "the lease runs from the database's now")

			got, err := b.s.Run(b.ctx, "r1")
			require.NoError(t, err)
			require.Equal(t, owner("t1"), got.Owner)
			require.False(t, got.LeaseExpired)
			require.Equal(t, r.LeaseUntil, got.LeaseUntil)

			_, err = b.s.ClaimRun(b.ctx, "r1", owner("t2"), time.Hour, "")
			require.ErrorIs(t, err, store.ErrOwned, "a live lease cannot be claimed")
			var oe *store.OwnedError
			require.ErrorAs(t, err, &oe)
			require.Equal(t, owner("t1"), oe.Owner, "the refusal names the owner")

			c, err := b.s.ClaimRun(b.ctx, "r1", owner("t2"), time.Hour, "t1")
			require.NoError(t, err, "the caller that found t1 dead takes over")
			require.Equal(t, owner("t2"), c.Owner)
			require.Equal(t, 2, c.Generation, "a claim starts the next generation")
		})

		t.Run("AnExpiredLeaseIsInterruptedAndClaimedOnce", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "w", Status: "running", StartedAt: base,
				Owner: owner("t1"), LeaseTTL: -time.Second}))
			got, err := b.s.Run(b.ctx, "r1")
			require.NoError(t, err)
			require.True(t, got.LeaseExpired)
			runs, err := b.s.ListRuns(b.ctx, store.RunFilter{Status: "interrupted"})
			require.NoError(t, err)
			require.Equal(t, []string{"r1"}, runIDs(runs))

			const n = 8
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					_, errs[i] = b.s.ClaimRun(b.ctx, "r1", owner(fmt.Sprint("c", i)), time.Hour, "")
				}(i)
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				if err == nil {
					won++
				} else {
					require.ErrorIs(t, err, store.ErrOwned)
				}
			}
			require.Equal(t, 1, won, "exactly one of the claims at once proceeds")
			runs, err = b.s.ListRuns(b.ctx, store.RunFilter{Status: "interrupted"})
			require.NoError(t, err)
			require.Empty(t, runs)
		})

		t.Run("RenewAndCancel", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "w", Status: "running", StartedAt: base,
				Owner: owner("t1"), LeaseTTL: time.Second}))
			cancel, err := b.s.RenewLease(b.ctx, "r1", "t1", time.Hour)
			require.NoError(t, err)
			require.False(t, cancel)
			got, err := b.s.Run(b.ctx, "r1")
			require.NoError(t, err)
			require.WithinDuration(t, time.Now().Add(time.Hour), got.LeaseUntil, time.Minute)

			r, err := b.s.RequestCancel(b.ctx, "r1", false)
			require.NoError(t, err)
			require.NotNil(t, r.CancelRequested)
			require.False(t, r.CancelLetFinish)
			cancel, err = b.s.RenewLease(b.ctx, "r1", "t1", time.Hour)
			require.NoError(t, err)
			require.True(t, cancel, "the owner sees the cancel request")

			_, err = b.s.RenewLease(b.ctx, "r1", "other", time.Hour)
			require.ErrorIs(t, err, store.ErrLeaseLost)
			_, err = b.s.RenewLease(b.ctx, "nope", "t1", time.Hour)
			require.ErrorIs(t, err, store.ErrNotFound)
			_, err = b.s.RequestCancel(b.ctx, "nope", false)
			require.ErrorIs(t, err, store.ErrNotFound)
		})

		t.Run("CancelModes", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			for _, id := range []string{"soft", "hard"} {
				require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: id, Workflow: "w", Status: "running", StartedAt: base,
					Owner: owner("t-" + id), LeaseTTL: time.Hour}))
			}
			r, err := b.s.RequestCancel(b.ctx, "soft", true)
			require.NoError(t, err)
			require.NotNil(t, r.CancelRequested)
			require.True(t, r.CancelLetFinish, "the request lets running nodes finish")
			first := *r.CancelRequested
			got, err := b.s.Run(b.ctx, "soft")
			require.NoError(t, err)
			require.True(t, got.CancelLetFinish)

			r, err = b.s.RequestCancel(b.ctx, "soft", false)
			require.NoError(t, err)
			require.False(t, r.CancelLetFinish, "a request that stops running nodes replaces one that lets them finish")
			require.Equal(t, first, *r.CancelRequested, "the request keeps its first time")

			_, err = b.s.RequestCancel(b.ctx, "hard", false)
			require.NoError(t, err)
			r, err = b.s.RequestCancel(b.ctx, "hard", true)
			require.NoError(t, err)
			require.False(t, r.CancelLetFinish, "a request that lets nodes finish never softens one that stops them")
		})

		t.Run("FencedBatchAndFinishCommitTogether", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "r1", Workflow: "w", Status: "running", StartedAt: base,
				Owner: owner("t1"), LeaseTTL: time.Hour}))
			err := b.s.SaveBatch(b.ctx, []store.Batch{{RunID: "r1", Token: "stale",
				Steps:  []*store.Step{{StepOrder: 1, Node: "a", Visit: 1, Status: "success"}},
				Events: []store.Event{{Time: base, Type: "x"}}}})
			require.ErrorIs(t, err, store.ErrLeaseLost)
			steps, err := b.s.Steps(b.ctx, "r1")
			require.NoError(t, err)
			require.Empty(t, steps, "a stale owner writes nothing")

			fin := base.Add(time.Minute)
			require.NoError(t, b.s.SaveBatch(b.ctx, []store.Batch{{RunID: "r1", Token: "t1",
				Steps:  []*store.Step{{StepOrder: 1, Node: "a", Visit: 1, Status: "success"}},
				Finish: &store.Run{Status: "completed", Outputs: map[string]any{"x": 1}, FinishedAt: &fin, Tokens: 7}}}))
			got, err := b.s.Run(b.ctx, "r1")
			require.NoError(t, err)
			require.Equal(t, "completed", got.Status)
			require.Equal(t, map[string]any{"x": 1}, got.Outputs)
			require.Equal(t, 7, got.Tokens)
			require.Equal(t, store.Owner{}, got.Owner, "finishing releases the run")
			require.True(t, got.LeaseExpired)

			c, err := b.s.ClaimRun(b.ctx, "r1", owner("t2"), time.Hour, "")
			require.NoError(t, err, "a finished run can be claimed")
			require.Equal(t, "running", c.Status)
			require.Nil(t, c.FinishedAt)
		})

		t.Run("PruneSparesLiveRunsAndTakesChildren", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "live", Workflow: "w", Status: "running", StartedAt: base,
				Owner: owner("t1"), LeaseTTL: time.Hour}))
			require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "livechild", ParentID: "live", Workflow: "c", Status: "completed", StartedAt: base}))
			createRun(t, b.s, "old", "w", base)
			require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "old.sub1", ParentID: "old", Workflow: "c", Status: "completed",
				StartedAt: base.Add(2 * time.Hour)}))
			createRun(t, b.s, "new", "w", base.Add(2*time.Hour))

			cutoff := base.Add(time.Hour)
			would, err := b.s.DeleteRuns(b.ctx, cutoff, true)
			require.NoError(t, err)
			require.Equal(t, []string{"old", "old.sub1"}, runIDs(would), "a child goes with its parent, a live run stays")
			_, err = b.s.Run(b.ctx, "old")
			require.NoError(t, err, "a dry run deletes nothing")

			gone, err := b.s.DeleteRuns(b.ctx, cutoff, false)
			require.NoError(t, err)
			require.Equal(t, runIDs(would), runIDs(gone))
			runs, err := b.s.ListRuns(b.ctx, store.RunFilter{})
			require.NoError(t, err)
			require.ElementsMatch(t, []string{"live", "livechild", "new"}, runIDs(runs))
			kids, err := b.s.ListRuns(b.ctx, store.RunFilter{Parent: "live"})
			require.NoError(t, err)
			require.Equal(t, []string{"livechild"}, runIDs(kids))
		})
	})

	t.Run("Signals", func(t *testing.T) {
		t.Parallel()

		t.Run("RecordedOncePerVisitInOrder", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "w", base)
			createRun(t, b.s, "r2", "w", base)

			first := &store.Signal{RunID: "r1", Node: "approve", Visit: 1,
				Data: map[string]any{"approved": true, "by": "Ada", "n": 2, "tags": []any{"a", 1.5}}, CreatedAt: base}
			require.NoError(t, b.s.SaveSignal(b.ctx, first))
			require.Equal(t, int64(1), first.Seq)
			before := time.Now().Add(-time.Second)
			second := &store.Signal{RunID: "r1", Node: "approve", Visit: 2, Data: "yes"}
			require.NoError(t, b.s.SaveSignal(b.ctx, second))
			require.Equal(t, int64(2), second.Seq)
			require.WithinRange(t, second.CreatedAt, before, time.Now().Add(time.Second), "a zero CreatedAt becomes now")
			other := &store.Signal{RunID: "r2", Node: "approve", Visit: 1}
			require.NoError(t, b.s.SaveSignal(b.ctx, other))
			require.Equal(t, int64(1), other.Seq, "each run counts its own signals")

			err := b.s.SaveSignal(b.ctx, &store.Signal{RunID: "r1", Node: "approve", Visit: 1, Data: "again"})
			require.ErrorIs(t, err, store.ErrExists, "a visit takes one signal")

			sigs, err := b.s.Signals(b.ctx, "r1", 0)
			require.NoError(t, err)
			require.Len(t, sigs, 2)
			require.Equal(t, store.Signal{RunID: "r1", Node: "approve", Visit: 1, Seq: 1, CreatedAt: base,
				Data: map[string]any{"approved": true, "by": "Ada", "n": 2, "tags": []any{"a", 1.5}}}, sigs[0],
				"the first signal is kept, its data round-trips")
			require.Equal(t, "yes", sigs[1].Data)
			require.WithinDuration(t, second.CreatedAt, sigs[1].CreatedAt, time.Microsecond)

			after, err := b.s.Signals(b.ctx, "r1", 1)
			require.NoError(t, err)
			require.Len(t, after, 1)
			require.Equal(t, int64(2), after[0].Seq)
			none, err := b.s.Signals(b.ctx, "r1", 2)
			require.NoError(t, err)
			require.Empty(t, none)
			nilData, err := b.s.Signals(b.ctx, "r2", 0)
			require.NoError(t, err)
			require.Nil(t, nilData[0].Data)
		})

		t.Run("UnknownRun", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			err := b.s.SaveSignal(b.ctx, &store.Signal{RunID: "nope", Node: "a", Visit: 1})
			require.ErrorIs(t, err, store.ErrNotFound)
			_, err = b.s.Signals(b.ctx, "nope", 0)
			require.ErrorIs(t, err, store.ErrNotFound)
		})

		t.Run("GoWithTheirRun", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "w", base)
			require.NoError(t, b.s.SaveSignal(b.ctx, &store.Signal{RunID: "r1", Node: "a", Visit: 1}))
			_, err := b.s.DeleteRuns(b.ctx, base.Add(time.Hour), false)
			require.NoError(t, err)
			createRun(t, b.s, "r1", "w", base)
			sigs, err := b.s.Signals(b.ctx, "r1", 0)
			require.NoError(t, err)
			require.Empty(t, sigs, "a recreated run starts without signals")
		})
	})

	t.Run("Waits", func(t *testing.T) {
		t.Parallel()
		owner := store.Owner{Host: "h1", PID: 100, Token: "t1"}

		t.Run("StepsKeepTheirWakeUpTime", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			createRun(t, b.s, "r1", "w", base)
			wake := base.Add(time.Hour)
			require.NoError(t, b.s.SaveSteps(b.ctx, "r1", []*store.Step{
				{StepOrder: 1, Node: "pause", Visit: 1, Status: "waiting", WakeAt: &wake},
				{StepOrder: 2, Node: "other", Visit: 1, Status: "success"},
			}))
			steps, err := b.s.Steps(b.ctx, "r1")
			require.NoError(t, err)
			require.Equal(t, &wake, steps[0].WakeAt)
			require.Nil(t, steps[1].WakeAt)
		})

		t.Run("AWaitingRunIsDueAtItsWakeUpTime", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			park := func(id string, wake *time.Time) {
				require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: id, Workflow: "w", Status: "running", StartedAt: base,
					Owner: owner, LeaseTTL: time.Hour}))
				require.NoError(t, b.s.SaveBatch(b.ctx, []store.Batch{{RunID: id, Token: owner.Token,
					Finish: &store.Run{Status: "waiting", WakeAt: wake}}}))
			}
			soon, later := base.Add(time.Minute), base.Add(time.Hour)
			park("soon", &soon)
			park("later", &later)
			park("signal", nil)
			require.NoError(t, b.s.CreateRun(b.ctx, &store.Run{ID: "running", Workflow: "w", Status: "running", StartedAt: base,
				Owner: owner, LeaseTTL: -time.Second}))

			got, err := b.s.Run(b.ctx, "soon")
			require.NoError(t, err)
			require.Equal(t, "waiting", got.Status)
			require.Equal(t, &soon, got.WakeAt)
			require.Equal(t, store.Owner{}, got.Owner, "a waiting run has no owner")

			for _, tc := range []struct {
				name string
				by   time.Time
				want []string
			}{
				{"none yet", base, nil},
				{"at its time", soon, []string{"soon"}},
				{"both", later.Add(time.Second), []string{"later", "soon"}},
			} {
				runs, err := b.s.ListRuns(b.ctx, store.RunFilter{DueBy: tc.by})
				require.NoError(t, err)
				require.ElementsMatch(t, tc.want, runIDs(runs), tc.name)
			}
			runs, err := b.s.ListRuns(b.ctx, store.RunFilter{Status: "interrupted"})
			require.NoError(t, err)
			require.Equal(t, []string{"running"}, runIDs(runs), "a waiting run is not interrupted")
			runs, err = b.s.ListRuns(b.ctx, store.RunFilter{Status: "waiting"})
			require.NoError(t, err)
			require.ElementsMatch(t, []string{"soon", "later", "signal"}, runIDs(runs))

			require.NoError(t, b.s.SaveSignal(b.ctx, &store.Signal{RunID: "signal", Node: "approve", Visit: 1, CreatedAt: base.Add(time.Second)}))
			require.NoError(t, b.s.SaveSignal(b.ctx, &store.Signal{RunID: "later", Node: "approve", Visit: 1, CreatedAt: base.Add(2 * time.Second)}))
			require.NoError(t, b.s.SaveSignal(b.ctx, &store.Signal{RunID: "running", Node: "approve", Visit: 1, CreatedAt: base}))
			runs, err = b.s.ListRuns(b.ctx, store.RunFilter{DueBy: base.Add(2 * time.Second)})
			require.NoError(t, err)
			require.ElementsMatch(t, []string{"signal", "later"}, runIDs(runs), "a signal makes a waiting run due at once")
			got, err = b.s.Run(b.ctx, "running")
			require.NoError(t, err)
			require.Nil(t, got.WakeAt, "a run that is not waiting is left alone")

			c, err := b.s.ClaimRun(b.ctx, "soon", store.Owner{Host: "h2", PID: 7, Token: "t2"}, time.Hour, "")
			require.NoError(t, err, "a waiting run is claimed to resume it")
			require.Equal(t, "running", c.Status)
			require.Nil(t, c.WakeAt, "the claim clears the wake-up time")
			runs, err = b.s.ListRuns(b.ctx, store.RunFilter{DueBy: later.Add(time.Second)})
			require.NoError(t, err)
			require.ElementsMatch(t, []string{"later", "signal"}, runIDs(runs), "a claimed run is no longer due")
		})
	})

	t.Run("CancelledContext", func(t *testing.T) {
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
	})
}

// assertNoError is require.NoError for goroutines other than the test's.
func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}

// base is the start of the suite's runs: microsecond precision, UTC, so
// that it round-trips in every implementation.
var base = time.Date(2025, 3, 1, 12, 0, 0, 123456000, time.UTC)

func createRun(t *testing.T, s store.Store, id, workflow string, started time.Time) *store.Run {
	t.Helper()
	r := &store.Run{ID: id, Workflow: workflow, Status: "running", StartedAt: started}
	require.NoError(t, s.CreateRun(t.Context(), r), "creating run %s", id)
	r.LeaseExpired = true // it has no owner: it reads back so
	return r
}

func runIDs(runs []*store.Run) []string {
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	return ids
}

func seqs(evs []store.Event) []int64 {
	var s []int64
	for _, ev := range evs {
		s = append(s, ev.Seq)
	}
	return s
}

// clone returns a shallow copy, so a store that writes to what it is given
// cannot make a comparison pass by accident.
func clone[T any](v *T) *T {
	c := *v
	return &c
}

// memoryContents lists the contents of memory messages, in order.
func memoryContents(msgs []*store.MemoryMessage) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Content)
	}
	return out
}
