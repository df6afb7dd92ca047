package storetest

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
)

// testSteps checks steps and their generations.
func testSteps(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()

	t.Run("RetryAndFinishReplaceTheStep", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)

		started := base.Add(time.Second)
		step := &store.Step{StepOrder: 1, Node: "fetch", Type: "http", Visit: 1, Attempts: 1, Status: "running",
			StartedAt: &started}
		require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{step}))

		failed := base.Add(2 * time.Second)
		step.Status, step.FinishedAt = "failed", &failed
		step.Error = &node.Error{Code: "http_status", Category: "http", Message: "503"}
		require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{step}))

		step.Status, step.Attempts, step.FinishedAt = "running", 2, nil
		require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{step}))

		done := base.Add(5 * time.Second)
		step.Status, step.Error, step.FinishedAt, step.DurationMS = "success", nil, &done, 4000
		step.Output = map[string]any{"status": 200}
		require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{step}))

		steps, err := b.s.Steps(b.ctx, "r1")
		require.NoError(t, err)
		require.Len(t, steps, 1, "saving (run, node, visit) again replaces the step")
		want := *step
		want.RunID, want.Generation = "r1", 1
		require.Equal(t, &want, steps[0])
	})

	t.Run("StepsComeInTheirOrder", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)
		// Saved last first, in batches of their own, with names that sort
		// against their order: Steps lists them by step order, then node,
		// then visit, whatever the store keeps them by.
		saved := []*store.Step{
			{StepOrder: 4, Node: "a", Visit: 2, Status: "success"},
			{StepOrder: 3, Node: "b", Visit: 1, Status: "success"},
			{StepOrder: 3, Node: "a", Visit: 1, Status: "success"},
			{StepOrder: 2, Node: "z", Visit: 1, Status: "success"},
			{StepOrder: 1, Node: "y", Visit: 1, Status: "success"},
		}
		for _, st := range saved {
			require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{st}))
		}
		steps, err := b.s.Steps(b.ctx, "r1")
		require.NoError(t, err)
		var got []string
		for _, st := range steps {
			got = append(got, fmt.Sprintf("%d:%s#%d", st.StepOrder, st.Node, st.Visit))
		}
		require.Equal(t, []string{"1:y#1", "2:z#1", "3:a#1", "3:b#1", "4:a#2"}, got)
	})

	t.Run("EachStepReadsThemInTheirOrder", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)
		saved := []*store.Step{
			{StepOrder: 4, Node: "a", Visit: 2, Status: "success", Output: map[string]any{"n": 4.0}},
			{StepOrder: 3, Node: "b", Visit: 1, Status: "skipped"},
			{StepOrder: 3, Node: "a", Visit: 1, Status: "success"},
			{StepOrder: 2, Node: "z", Visit: 1, Status: "failed", Error: &node.Error{Code: "x", Category: "internal", Message: "m"}},
			{StepOrder: 1, Node: "y", Visit: 1, Status: "success"},
		}
		require.NoError(t, saveSteps(b.ctx, b.s, "r1", saved))
		whole, err := b.s.Steps(b.ctx, "r1")
		require.NoError(t, err)
		var each []*store.Step
		require.NoError(t, b.s.EachStep(b.ctx, "r1", 1, func(s *store.Step) error { each = append(each, s); return nil }))
		require.Equal(t, whole, each, "EachStep reads the steps Steps lists")

		stop := errors.New("enough")
		n := 0
		err = b.s.EachStep(b.ctx, "r1", 1, func(*store.Step) error { n++; return stop })
		require.ErrorIs(t, err, stop)
		require.Equal(t, 1, n, "it stops at fn's error")
		require.NoError(t, b.s.EachStep(b.ctx, "r1", 2, func(*store.Step) error { n++; return nil }))
		require.Equal(t, 1, n, "a generation with no steps has none")
		require.ErrorIs(t, b.s.EachStep(b.ctx, "nope", 1, func(*store.Step) error { return nil }), store.ErrNotFound)
	})

	t.Run("ManyRowsAndARepeatedKeyInOneBatch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)
		// 70 steps and 70 events in one batch, written several rows to a
		// statement; node n3's step twice in it: its later state wins.
		var steps []*store.Step
		var events []store.Event
		for i := range 70 {
			steps = append(steps, &store.Step{StepOrder: i, Node: fmt.Sprintf("n%d", i), Visit: 1, Status: "running"})
			events = append(events, store.Event{Time: base, Type: "node_started", Node: fmt.Sprintf("n%d", i), Visit: 1})
			if i == 4 {
				steps = append(steps, &store.Step{StepOrder: 3, Node: "n3", Visit: 1, Status: "success", Output: map[string]any{"ok": true}})
			}
		}
		for _, tx := range []bool{false, true} {
			run := map[bool]string{false: "r1", true: "r2"}[tx]
			if tx {
				createRun(t, b.s, run, "w", base)
				require.NoError(t, b.s.Tx(b.ctx, func(x store.Tx) error {
					_, last, err := x.LockRun(b.ctx, run)
					if err != nil {
						return err
					}
					return x.SaveBatch(b.ctx, store.Batch{RunID: run, Steps: steps, Events: events}, last)
				}))
			} else {
				require.NoError(t, b.s.SaveBatch(b.ctx, []store.Batch{{RunID: run, Steps: steps, Events: events}}))
			}
			got, err := b.s.Steps(b.ctx, run)
			require.NoError(t, err)
			require.Len(t, got, 70, "run %s", run)
			byNode := map[string]*store.Step{}
			for _, st := range got {
				byNode[st.Node] = st
			}
			require.Equal(t, "success", string(byNode["n3"].Status), "run %s: the later state of a step saved twice in one batch", run)
			require.Equal(t, true, byNode["n3"].Output["ok"])
			require.Equal(t, "running", string(byNode["n69"].Status))
			evs, err := b.s.Events(b.ctx, run, 0, 1000)
			require.NoError(t, err)
			require.Len(t, evs, 70)
			for i, ev := range evs {
				require.EqualValues(t, i+1, ev.Seq, "run %s: events numbered in order", run)
				require.Equal(t, fmt.Sprintf("n%d", i), ev.Node)
			}
		}
	})

	t.Run("ByStepOrder", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)

		mk := func(order int, nodeID string, visit int) *store.Step {
			return &store.Step{StepOrder: order, Node: nodeID, Visit: visit, Status: "success"}
		}
		require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{mk(3, "body", 2), mk(1, "start", 1)}))
		require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{mk(4, "done", 1), mk(2, "body", 1)}))

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
		require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{clone(want)}))

		steps, err := b.s.Steps(b.ctx, "r1")
		require.NoError(t, err)
		require.Len(t, steps, 1)
		require.Equal(t, want, steps[0], "whole numbers come back as int, others as float64")
	})

	t.Run("CachedPinnedAndOutputRef", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)

		require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{
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

		err := saveSteps(b.ctx, b.s, "r1", []*store.Step{
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

		err := saveSteps(b.ctx, b.s, "nope", []*store.Step{{StepOrder: 1, Node: "a", Visit: 1, Status: "running"}})
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = b.s.Steps(b.ctx, "nope")
		require.ErrorIs(t, err, store.ErrNotFound)

		steps, err := b.s.Steps(b.ctx, "r1")
		require.NoError(t, err, "a run without steps is not an error")
		require.Empty(t, steps)
	})

	t.Run("SkipReasonRoundTrips", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)
		require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{
			{StepOrder: 1, Node: "a", Visit: 1, Status: "skipped", SkipReason: "dead_path"},
			{StepOrder: 2, Node: "b", Visit: 1, Status: "success"},
		}))
		// Saved again (a cancel skips a pending step): the reason follows.
		require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{
			{StepOrder: 3, Node: "c", Visit: 1, Status: "pending"},
		}))
		require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{
			{StepOrder: 3, Node: "c", Visit: 1, Status: "skipped", SkipReason: "cancelled"},
		}))
		steps, err := b.s.Steps(b.ctx, "r1")
		require.NoError(t, err)
		require.Len(t, steps, 3)
		require.Equal(t, []string{"dead_path", "", "cancelled"}, []string{steps[0].SkipReason, steps[1].SkipReason, steps[2].SkipReason})
	})

	t.Run("StepLogFieldsRoundTrip", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)
		sure := 0.875
		require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{
			{StepOrder: 1, Node: "gate", Visit: 1, Status: "success", Confidence: &sure,
				RanOn: &record.Place{Host: "box", PID: 4242, Worker: "w-1"}},
			{StepOrder: 2, Node: "no", Visit: 1, Status: "skipped", SkipReason: "branch_not_taken", TakenHandle: "true"},
		}))
		steps, err := b.s.Steps(b.ctx, "r1")
		require.NoError(t, err)
		require.Len(t, steps, 2)
		require.Equal(t, &record.Place{Host: "box", PID: 4242, Worker: "w-1"}, steps[0].RanOn)
		require.NotNil(t, steps[0].Confidence)
		require.InDelta(t, 0.875, *steps[0].Confidence, 1e-9)
		require.Equal(t, "true", steps[1].TakenHandle)
		require.Nil(t, steps[1].RanOn, "a step that never started ran nowhere")
		require.Nil(t, steps[1].Confidence, "no confidence reported reads back as none, not 0")
	})

	t.Run("GenerationsAreKeptApart", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)
		require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{
			{StepOrder: 1, Node: "a", Visit: 1, Status: "success", ConfigHash: "ha", Masked: true},
			{StepOrder: 2, Node: "b", Visit: 1, Status: "running", ProcessGroup: 4242},
		}))
		require.NoError(t, saveSteps(b.ctx, b.s, "r1", []*store.Step{
			{Generation: 2, StepOrder: 1, Node: "a", Visit: 1, Status: "running"},
		}))

		steps, err := b.s.Steps(b.ctx, "r1")
		require.NoError(t, err)
		require.Len(t, steps, 1, "Steps shows the latest generation")
		require.Equal(t, 2, steps[0].Generation)
		require.Equal(t, "running", string(steps[0].Status))

		hist, err := b.s.StepHistory(b.ctx, "r1")
		require.NoError(t, err)
		require.Len(t, hist, 3, "a later generation overwrites nothing of an earlier one")
		require.Equal(t, []int{1, 1, 2}, []int{hist[0].Generation, hist[1].Generation, hist[2].Generation})
		require.Equal(t, "success", string(hist[0].Status))
		require.Equal(t, "ha", hist[0].ConfigHash)
		require.True(t, hist[0].Masked, "a masked step stays marked")
		require.False(t, hist[1].Masked)
		require.Equal(t, 4242, hist[1].ProcessGroup, "a running step's process group round-trips")

		// Given nodes, only their steps, of every generation.
		hist, err = b.s.StepHistory(b.ctx, "r1", "a")
		require.NoError(t, err)
		require.Len(t, hist, 2)
		require.Equal(t, []int{1, 2}, []int{hist[0].Generation, hist[1].Generation})
		require.Equal(t, []string{"a", "a"}, []string{hist[0].Node, hist[1].Node})
		hist, err = b.s.StepHistory(b.ctx, "r1", "b", "z", `'); DROP TABLE steps; --`)
		require.NoError(t, err)
		require.Len(t, hist, 1)
		require.Equal(t, "b", hist[0].Node)
		hist, err = b.s.StepHistory(b.ctx, "r1", "z")
		require.NoError(t, err)
		require.Empty(t, hist, "a node with no step has none")

		_, err = b.s.StepHistory(b.ctx, "nope")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = b.s.StepHistory(b.ctx, "nope", "a")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}
