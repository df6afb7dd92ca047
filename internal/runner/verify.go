package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	llmkind "github.com/skeinhq/skein/internal/nodes/llm"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// defaultJudge returns the judge of a workflow's checks: its judge model,
// else vision, else default, else the environment's (SKEIN_LLM_*).
func defaultJudge(w *workflow.Workflow, lookupEnv func(string) (string, bool)) check.Judge {
	m := llmkind.NewModels(w, lookupEnv)
	m.Render = secretRenderer(nil)
	return &llmkind.Judge{Models: m}
}

// verify runs the evaluation pass of a finished run and writes its verdict
// files; it returns nil when the workflow has no checks.
func verify(ctx context.Context, w *workflow.Workflow, res *engine.Result, dir string, judge check.Judge) (*check.RunVerdict, error) {
	if !hasChecks(w) {
		return nil, nil
	}
	v := check.Evaluate(ctx, check.Input{
		Workflow: w, Result: res,
		Events: func(node string) []map[string]any { return readEvents(filepath.Join(dir, node, "events.jsonl")) },
		Images: func(node string) []string {
			files, _ := filepath.Glob(filepath.Join(dir, node, "artifacts", "*.png"))
			jpgs, _ := filepath.Glob(filepath.Join(dir, node, "artifacts", "*.jp*g"))
			return append(files, jpgs...)
		},
		Judge: judge,
	})
	if err := check.Write(dir, v); err != nil {
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

// readEvents reads a node's events.jsonl.
func readEvents(path string) []map[string]any {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			if d, ok := m["data"].(map[string]any); ok {
				for k, v := range d {
					if _, taken := m[k]; !taken {
						m[k] = v
					}
				}
			}
			out = append(out, m)
		}
	}
	return out
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
	res := &engine.Result{RunID: run.ID, Workflow: run.Workflow, Status: engine.RunStatus(run.Status), Outputs: run.Outputs, Error: run.Error}
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
