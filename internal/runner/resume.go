package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// ResumeRequest continues a failed, cancelled or interrupted run.
type ResumeRequest struct {
	RunID string
	// WorkflowFile, when set, replaces the run's workflow file (an edited
	// one; its node ids must match the run's).
	WorkflowFile string
	Options
}

// Resume claims a run whose owner is gone and runs what it did not
// complete: every step that succeeded in any earlier execution, with the
// same config hash, is reused. A run with a live owner is refused with an
// *store.OwnedError; a completed one with ErrCompleted.
//
// A waiting run (Options.Park) resumes too: its waits go on until their
// wake-up times, and the signals recorded meanwhile are applied.
func (r *Runner) Resume(ctx context.Context, req ResumeRequest) (*Result, error) {
	res, err := r.resume(ctx, req)
	return r.continueSignalled(ctx, res, err, req.Options)
}

func (r *Runner) resume(ctx context.Context, req ResumeRequest) (*Result, error) {
	run, w, hist, err := r.prepareResume(ctx, req.RunID, req.WorkflowFile)
	if err != nil {
		return nil, err
	}
	claimed, err := r.claimToRun(ctx, run, w, req.Options)
	if err != nil {
		return nil, err
	}
	if run.Owner.Host == "" || run.Owner.Host == r.host {
		durable.KillOrphans(hist)
	}
	j := r.resumeJob(ctx, claimed, w, hist, engine.RunStatus(run.Status) == engine.RunWaiting)
	j.resume = claimed
	return r.execute(ctx, j, req.Options)
}

// resumeJob is what a resume of run executes, with the workflow w and the
// run's steps of every generation: the same job for the resume and for
// its plan (PlanResume), so the plan is what the resume does. A parked
// run (one that was waiting when claimed) goes on after its signal or
// timer: its steps are kept, not cached.
func (r *Runner) resumeJob(ctx context.Context, run *store.Run, w *workflow.Workflow, hist []*store.Step, parked bool) job {
	reuse := durable.ForResume(hist)
	reuse.Continue = parked
	return job{w: w, inputs: run.Inputs, trigger: run.Trigger, payload: durable.TriggerPayload(r.cfg.Registry, hist, run.Trigger), runID: run.ID,
		reuse: reuse, wakes: durable.Wakes(hist), spent: r.spentBefore(ctx, run, hist)}
}

// prepareResume reads a run, its history and the workflow to resume it
// with, and checks that it can be resumed.
func (r *Runner) prepareResume(ctx context.Context, id, file string) (*store.Run, *workflow.Workflow, []*store.Step, error) {
	run, err := r.run(ctx, id)
	if err != nil {
		return nil, nil, nil, err
	}
	if engine.RunStatus(run.Status) == engine.RunCompleted {
		return nil, nil, nil, fmt.Errorf("run %s: %w; there is nothing to resume (`skein rerun %s` runs it again)", run.ID, ErrCompleted, run.ID)
	}
	if run.ParentID != "" {
		return nil, nil, nil, usagef("run %s is a child run of %s; resume the parent: skein resume %s", run.ID, run.ParentID, run.ParentID)
	}
	if r.liveOwner(run) {
		return nil, nil, nil, durable.Owned(run)
	}
	w, hist, err := r.history(ctx, run, file)
	return run, w, hist, err
}

// history loads the workflow to go on with run with (workflowOf) and the
// run's steps, and checks that the workflow still has their nodes.
func (r *Runner) history(ctx context.Context, run *store.Run, file string) (*workflow.Workflow, []*store.Step, error) {
	w, err := r.workflowOf(run, file)
	if err != nil {
		return nil, nil, err
	}
	hist, err := r.st.StepHistory(ctx, run.ID)
	if err != nil {
		return nil, nil, err
	}
	if missing := durable.MissingNodes(w, hist); len(missing) > 0 {
		return nil, nil, usagef("run %s has steps for node(s) %s, which %s does not have (renamed?); keep the node ids, or start afresh with `skein run`",
			run.ID, strings.Join(missing, ", "), w.File)
	}
	return w, hist, nil
}

// claim takes a run over from its dead owner (durable.Claim).
func (r *Runner) claim(ctx context.Context, run *store.Run) (*store.Run, error) {
	return durable.Claim(ctx, r.st, run, r.newOwner(), r.cfg.LeaseTTL)
}

// claimToRun claims run (claim) once the secrets its execution with w
// needs are set: a resume refused for them leaves the run as it was.
func (r *Runner) claimToRun(ctx context.Context, run *store.Run, w *workflow.Workflow, o Options) (*store.Run, error) {
	if _, err := resolveSecrets(w, r.cfg.LookupEnv, o.SecretsFile); err != nil {
		return nil, err
	}
	return r.claim(ctx, run)
}

// OwnedError is a run that another live process runs.
type OwnedError = durable.OwnedError

// liveOwner reports whether the run is owned by a live process
// (durable.LiveOwner).
func (r *Runner) liveOwner(run *store.Run) bool { return durable.LiveOwner(run, r.host, r.pid) }

// workflowOf loads the workflow a run used, or the one given instead.
func (r *Runner) workflowOf(run *store.Run, override string) (*workflow.Workflow, error) {
	file := run.File
	if override != "" {
		file = override
	}
	if file == "" {
		return nil, usagef("run %s has no workflow file on record; pass --file FILE", run.ID)
	}
	return r.Load(file)
}

// ResumePlan is what a resume would do with each step.
type ResumePlan struct {
	Run      *store.Run
	File     string
	Verdicts []durable.Verdict
}

// PlanResume shows what a resume of req.RunID would reuse and run again,
// and changes nothing: it plays the resume's job (resumeJob) as a dry run
// (engine.Options.DryRun), so each step is hashed and offered for reuse
// exactly as the resume will. Nodes that run again are not called (but
// those without side effects: conditions, loops, data nodes); the
// subworkflow nodes' child runs are planned the same way.
func (r *Runner) PlanResume(ctx context.Context, req ResumeRequest) (*ResumePlan, error) {
	run, err := r.run(ctx, req.RunID)
	if err != nil {
		return nil, err
	}
	w, hist, err := r.history(ctx, run, req.WorkflowFile)
	if err != nil {
		return nil, err
	}
	old, _ := r.storedWorkflow(ctx, run) // nil when the run was stored without it
	plan, err := r.plans.Get(w, r.cfg.Registry)
	if err != nil {
		return nil, &InvalidError{File: w.File, Diagnostics: workflow.Diagnostics{{File: w.File, Severity: workflow.Error, Message: err.Error()}}}
	}
	// Planned as a resume: a step it takes over reads as reused (cached),
	// whether a parked run's going on will keep it or a resume cache it.
	j := r.resumeJob(ctx, run, w, hist, false)
	if _, err := plan.StartNodes(j.trigger); err != nil {
		return nil, usagef("%s: %v", w.File, err)
	}
	secrets, err := resolveSecrets(w, r.cfg.LookupEnv, req.SecretsFile)
	if err != nil {
		return nil, err
	}
	verdicts, err := r.runs().PlanResume(ctx, run, plan, old, hist, engine.Options{
		RunID: run.ID, Inputs: j.inputs, Trigger: j.trigger, Payload: j.payload, Secrets: secrets, Redactor: r.redactors.For(secrets),
		Host:  engine.Host{Files: runlog.Files(w, run.Dir), Reuse: j.reuse.Reuse},
		Wakes: j.wakes, Spent: j.spent, Concurrency: req.Concurrency,
	})
	if err != nil {
		return nil, err
	}
	return &ResumePlan{Run: run, File: w.File, Verdicts: verdicts}, nil
}

// RerunRequest starts a new run with an earlier run's inputs, reusing the
// outputs of the pinned nodes.
type RerunRequest struct {
	RunID        string
	WorkflowFile string
	Workflow     *workflow.Workflow // instead of the file: a draft (its Source is the run's version)
	Pins         []string
	Options
}

// Rerun starts a new run of the workflow of run id with its inputs; the
// pinned nodes are not run, their outputs are taken from that run.
func (r *Runner) Rerun(ctx context.Context, req RerunRequest) (*Result, error) {
	run, err := r.run(ctx, req.RunID)
	if err != nil {
		return nil, err
	}
	w := req.Workflow
	if w == nil {
		if w, err = r.workflowOf(run, req.WorkflowFile); err != nil {
			return nil, err
		}
	}
	for _, p := range req.Pins {
		if w.Node(p) == nil {
			return nil, usagef("the workflow has no node %q to pin", p)
		}
	}
	hist, err := durable.RerunSteps(ctx, r.st, run.ID, req.Pins, run.Trigger)
	if err != nil {
		return nil, err
	}
	reuse := durable.ForPins(hist, req.Pins)
	if missing := reuse.Missing(req.Pins); len(missing) > 0 {
		return nil, usagef("run %s has no successful step of %s to reuse; pin only nodes that succeeded in it", run.ID, strings.Join(missing, ", "))
	}
	res, err := r.execute(ctx, job{w: w, inputs: run.Inputs, trigger: run.Trigger, payload: durable.TriggerPayload(r.cfg.Registry, hist, run.Trigger), runID: NewRunID(),
		reuse: reuse, rerunOf: run.ID}, req.Options)
	return r.continueSignalled(ctx, res, err, req.Options)
}
