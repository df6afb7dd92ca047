package runner

import (
	"context"
	"errors"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/internal/repair"
	"github.com/skeinhq/skein/internal/secrets"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// RepairRequest runs a workflow with --auto-repair (the loop of package
// repair): a validation error or a repairable runtime error goes to the
// repair model, whose corrected workflow is validated, shown as a diff
// (Observer.Note) and run, resuming from the checkpoint.
type RepairRequest struct {
	File string
	// Inputs resolves the run's inputs against the workflow as it is once
	// it validates (a repair may change it).
	Inputs  func(w *workflow.Workflow) (map[string]any, error)
	Trigger string
	// NoUpdate leaves File as it is and keeps the repaired workflow in
	// <name>.repaired.yaml beside it.
	NoUpdate bool
	Options
}

// RepairReport is what the repair loop did, for the JSON result.
type RepairReport = repair.Report

// EventRepairUsage is the event that records, in the run it went into,
// what the repair model cost.
const EventRepairUsage = repair.EventUsage

// StartRepairing runs req.File, repairing it as needed. The result's
// Repair says what was done; an error is returned only when no run was
// made (the workflow stayed invalid, inputs are missing).
func (r *Runner) StartRepairing(ctx context.Context, req RepairRequest) (*Result, error) {
	src, err := workflow.ReadFile(req.File)
	if err != nil {
		_, err := r.Load(req.File)
		return nil, err
	}
	runs := &repairRuns{r: r, o: req.Options}
	out, rep, err := repair.Run(ctx, repair.Request{
		Runs: runs, Registry: r.cfg.Registry, File: req.File, Source: src,
		Inputs: req.Inputs, Trigger: req.Trigger, NoUpdate: req.NoUpdate,
		Note: func(kind, text string) { r.note(req.Options, kind, "%s", text) },
	})
	if errors.Is(err, repair.ErrInvalid) {
		return nil, &InvalidError{File: req.File}
	}
	if out == nil {
		return nil, err
	}
	res := runs.last
	res.Repair = rep
	return res, err
}

// repairRuns is the runner as the repair loop drives it.
type repairRuns struct {
	r *Runner
	o Options
	// last is the result of the last execution.
	last *Result
}

var _ repair.Runs = (*repairRuns)(nil)

func (a *repairRuns) Execute(ctx context.Context, x repair.Execution) (*repair.Outcome, error) {
	j := job{w: x.Workflow, inputs: x.Inputs, trigger: x.Trigger, runID: NewRunID()}
	if x.Resume != "" {
		run, err := a.r.run(ctx, x.Resume)
		if err != nil {
			return nil, err
		}
		hist, err := a.r.st.StepHistory(ctx, run.ID)
		if err != nil {
			return nil, err
		}
		claimed, err := a.r.claimToRun(ctx, run, x.Workflow, a.o)
		if err != nil {
			return nil, err
		}
		j = job{w: x.Workflow, inputs: claimed.Inputs, trigger: claimed.Trigger, runID: claimed.ID, resume: claimed,
			reuse: durable.ForResume(hist), wakes: durable.Wakes(hist), spent: a.r.spentBefore(ctx, claimed, hist)}
	}
	j.spent.Tokens += x.Spent.Tokens
	j.spent.CostUSD += x.Spent.CostUSD
	j.finished = x.Finished
	res, err := a.r.execute(ctx, j, a.o)
	if res == nil {
		return nil, err
	}
	a.last = res
	return &repair.Outcome{RunID: res.Run.ID, Status: engine.RunStatus(res.Run.Status), Engine: res.Engine,
		Spent: engine.Spent{Tokens: res.Run.Tokens, CostUSD: res.Run.CostUSD}}, err
}

func (a *repairRuns) Bill(ctx context.Context, runID string, spent engine.Spent) bool {
	cur, err := a.r.st.Run(ctx, runID)
	if err != nil || !(cur.LeaseExpired || cur.Owner.Token == "") {
		return false // it runs again somewhere: that execution is not told
	}
	cur.Tokens += spent.Tokens
	cur.CostUSD += spent.CostUSD
	if a.r.st.UpdateRun(ctx, cur) != nil {
		return false
	}
	if a.last != nil && a.last.Run.ID == runID {
		a.last.Run.Tokens, a.last.Run.CostUSD = cur.Tokens, cur.CostUSD
	}
	_ = a.r.st.AppendEvents(ctx, runID, []store.Event{{Time: a.r.clock.Now(), Type: repair.EventUsage,
		Data: map[string]any{"tokens": spent.Tokens, "cost_usd": spent.CostUSD}}})
	return true
}

func (a *repairRuns) Relocate(ctx context.Context, runID, file string) {
	if run, err := a.r.st.Run(ctx, runID); err == nil {
		run.File = file
		_ = a.r.st.UpdateRun(ctx, run)
	}
}

func (a *repairRuns) Secrets(w *workflow.Workflow) map[string]string {
	sec, err := resolveSecrets(w, a.r.cfg.LookupEnv, a.o.SecretsFile)
	if err != nil {
		return nil
	}
	return sec
}

func (a *repairRuns) Models(w *workflow.Workflow, sec map[string]string) repair.Models {
	m := registry.New(w, a.r.cfg.LookupEnv)
	m.Render = secrets.Renderer(sec)
	return m
}
