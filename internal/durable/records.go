package durable

import (
	"context"
	"sync"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
)

// NodeEvents returns a node's events from the store, read once for the
// whole run on first use: the run folder has no per-node events file, and
// the store is the source of truth. Each event is a map of its fields
// (type, node, visit, iteration, time) with its data merged in.
func NodeEvents(ctx context.Context, st store.Store, runID string) func(node string) []map[string]any {
	var once sync.Once
	var byNode map[string][]map[string]any
	return func(node string) []map[string]any {
		once.Do(func() {
			byNode = map[string][]map[string]any{}
			evs, err := st.Events(ctx, runID, 0, 0)
			if err != nil {
				return
			}
			for _, ev := range evs {
				if ev.Node == "" {
					continue
				}
				m := map[string]any{"time": ev.Time.UTC(), "type": ev.Type, "node": ev.Node, "visit": ev.Visit, "iteration": ev.Iteration}
				if ev.Data != nil {
					m["data"] = ev.Data
				}
				for k, v := range ev.Data {
					if _, taken := m[k]; !taken {
						m[k] = v
					}
				}
				byNode[ev.Node] = append(byNode[ev.Node], m)
			}
		})
		return byNode[node]
	}
}

// Result rebuilds a run's result from its stored steps (`skein check`,
// a queued run that ended).
func Result(run *store.Run, steps []*store.Step) *engine.Result {
	res := &engine.Result{RunID: run.ID, Workflow: run.Workflow, Status: engine.RunStatus(run.Status), Outputs: run.Outputs, Error: run.Error,
		Tokens: run.Tokens, CostUSD: run.CostUSD}
	for _, s := range steps {
		out, directives, _ := Output(s)
		res.Steps = append(res.Steps, &engine.StepRecord{
			StepOrder: s.StepOrder, Node: s.Node, Type: s.Type, Status: engine.Status(s.Status), Visit: s.Visit,
			Iteration: s.Iteration, Attempts: s.Attempts, Params: s.Params, Output: out, Error: s.Error,
			Cached: s.Cached, Pinned: s.Pinned, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt,
			DurationMS: s.DurationMS, Tokens: s.Tokens, CostUSD: s.CostUSD, ConfigHash: s.ConfigHash, Directives: directives,
			SkipReason: s.SkipReason, TakenHandle: s.TakenHandle, RanOn: s.RanOn,
		})
	}
	return res
}
