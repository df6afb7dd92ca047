package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/check/judge"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// defaultJudge returns the judge of a workflow's checks: its judge model,
// else vision, else default, else the environment's (SKEIN_LLM_*). Its
// config's templates (api_key: "{{ secrets.KEY }}") render with the run's
// secrets, as the nodes' models do.
func defaultJudge(w *workflow.Workflow, lookupEnv func(string) (string, bool), secrets map[string]string) check.Judge {
	m := registry.New(w, lookupEnv)
	m.Render = secretRenderer(secrets)
	return &judge.LLM{Models: m}
}

// verify runs the evaluation pass of a finished run and writes its verdict
// files; it returns nil when the workflow has no checks. events gives a
// node's events (storedEvents). The verdict it returns and writes has the
// run's secrets masked with red: a judge may quote one it read in a
// screenshot.
func verify(ctx context.Context, w *workflow.Workflow, res *engine.Result, dir string, events func(string) []map[string]any, judge check.Judge, red *redact.Redactor) (*check.RunVerdict, error) {
	if !hasChecks(w) {
		return nil, nil
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	v := check.Evaluate(ctx, check.Input{
		Workflow: w, Result: res,
		Events: events,
		Images: func(node string) []string {
			files, _ := filepath.Glob(filepath.Join(dir, node, "artifacts", "*.png"))
			jpgs, _ := filepath.Glob(filepath.Join(dir, node, "artifacts", "*.jp*g"))
			return append(files, jpgs...)
		},
		Files: runFiles(w, dir),
		Judge: judge,
		// The judge spends from the run's budget.
		Budget: engine.NewBudget(w.Limits.MaxTokens, w.Limits.MaxCostUSD, nil, res.Tokens, res.CostUSD),
	})
	v, err := redact.Into(red, v)
	if err != nil {
		return nil, fmt.Errorf("masking secrets in the verdict: %w", err)
	}
	if err := check.Write(dir, v, red); err != nil {
		return v, err
	}
	return v, nil
}

func hasChecks(w *workflow.Workflow) bool {
	for _, n := range w.Nodes {
		if len(n.Checks) > 0 || n.Expect != "" {
			return true
		}
	}
	return false
}

// storedEvents returns a node's events from the store, read once for the
// whole run on first use: the run folder has no per-node events file, and
// the store is the source of truth. Each event is a map of its fields
// (type, node, visit, iteration, time) with its data merged in.
func storedEvents(ctx context.Context, st store.Store, runID string) func(node string) []map[string]any {
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

// verdictEvents turns a verdict into check_verdict events.
func verdictEvents(v *check.RunVerdict, now time.Time) []engine.TimedEvent {
	var out []engine.TimedEvent
	for _, n := range v.Nodes {
		for _, c := range n.Checks {
			out = append(out, engine.TimedEvent{Time: now, Event: engine.Event{
				Type: "check_verdict", Node: n.Node, Visit: n.Visit,
				Data: map[string]any{"check": c.Check, "type": c.Type, "verdict": string(c.Verdict), "reasoning": c.Reasoning},
			}})
		}
	}
	return out
}

// resultFromStore rebuilds a run's result from its stored steps, for
// `skein check`.
func resultFromStore(run *store.Run, steps []*store.Step) *engine.Result {
	res := &engine.Result{RunID: run.ID, Workflow: run.Workflow, Status: engine.RunStatus(run.Status), Outputs: run.Outputs, Error: run.Error,
		Tokens: run.Tokens, CostUSD: run.CostUSD}
	for _, s := range steps {
		out, directives, _ := durable.Output(s)
		res.Steps = append(res.Steps, &engine.StepRecord{
			StepOrder: s.StepOrder, Node: s.Node, Type: s.Type, Status: engine.Status(s.Status), Visit: s.Visit,
			Iteration: s.Iteration, Attempts: s.Attempts, Params: s.Params, Output: out, Error: s.Error,
			Cached: s.Cached, Pinned: s.Pinned, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt,
			DurationMS: s.DurationMS, Tokens: s.Tokens, CostUSD: s.CostUSD, ConfigHash: s.ConfigHash, Directives: directives,
		})
	}
	return res
}
