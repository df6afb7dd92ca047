package durable_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
	"github.com/skeinhq/skein/workflow"
)

// judgeFake records what the judge was shown and passes every check.
type judgeFake struct{ reqs []check.JudgeRequest }

func (j *judgeFake) Judge(_ context.Context, req check.JudgeRequest) ([]check.JudgeVerdict, error) {
	j.reqs = append(j.reqs, req)
	out := make([]check.JudgeVerdict, len(req.Checks))
	for i, c := range req.Checks {
		out[i] = check.JudgeVerdict{CheckName: c.Name, Verdict: "pass"}
	}
	return out, nil
}

// TestJudgeSeesToolEventsFromStore: the run folder has no per-node events
// file; the judge is shown the judged visit's tool events as the store holds
// them.
func TestJudgeSeesToolEventsFromStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, st.CreateRun(ctx, &store.Run{ID: "r1", Workflow: "w", Status: "running", StartedAt: now}))
	require.NoError(t, st.AppendEvents(ctx, "r1", []store.Event{
		{Time: now, Type: "tool_call", Node: "fetch", Visit: 1, Data: map[string]any{"tool": "old"}},
		{Time: now, Type: "node_started", Node: "fetch", Visit: 2},
		{Time: now, Type: "tool_call", Node: "fetch", Visit: 2, Data: map[string]any{"tool": "get"}},
		{Time: now, Type: "tool_result", Node: "fetch", Visit: 2, Data: map[string]any{"tool": "get", "text": "hello"}},
		{Time: now, Type: "tool_call", Node: "other", Visit: 2, Data: map[string]any{"tool": "elsewhere"}},
	}))
	w, ds := workflow.Decode("w.yaml", []byte(`version: 1
name: w
nodes:
  - {id: fetch, type: set, values: {x: 1}, expect: "the page says hello"}
`))
	require.NotNil(t, w, ds.Error())
	require.False(t, workflow.Validate(w, node.Default).HasErrors())
	res := &engine.Result{RunID: "r1", Workflow: "w", Status: engine.RunCompleted, Steps: []*engine.StepRecord{
		{StepOrder: 1, Node: "fetch", Type: "set", Status: engine.StatusSuccess, Visit: 2, Output: map[string]any{"x": 1}},
	}}
	judge := &judgeFake{}

	v, err := check.Verify(ctx, w, res, nil, dir, durable.NodeEvents(ctx, st, "r1"), judge, nil)
	require.NoError(t, err)
	require.NotNil(t, v)
	require.Len(t, judge.reqs, 1)
	var tools []string
	for _, ev := range judge.reqs[0].ToolEvents {
		tools = append(tools, ev["type"].(string)+" "+ev["tool"].(string))
	}
	require.Equal(t, []string{"tool_call get", "tool_result get"}, tools, "the judged visit's tool events, in order")
	require.Equal(t, "hello", judge.reqs[0].ToolEvents[1]["text"], "the event's data is shown")
}
