package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// findRun loads a run by id, with a usage error when there is none.
func findRun(ctx context.Context, st store.Store, id string) (*store.Run, error) {
	run, err := st.Run(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, usagef("no run %q in this folder's database; `skein runs list` shows the runs", id)
	}
	if err != nil {
		return nil, exit(ExitFailed, err)
	}
	return run, nil
}

// loadRun opens the store of dir and reads a run and its steps; on error
// the store is closed, else the caller closes it.
func loadRun(ctx context.Context, dir, id string) (store.Store, *store.Run, []*store.Step, error) {
	st, err := openStore(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	run, err := findRun(ctx, st, id)
	if err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	steps, err := st.Steps(ctx, run.ID)
	if err != nil {
		st.Close()
		return nil, nil, nil, exit(ExitFailed, err)
	}
	return st, run, steps, nil
}

// runWorkflowFile loads the workflow a run used, or the one given instead.
func runWorkflowFile(e *env, run *store.Run, override string) (*workflow.Workflow, error) {
	file := run.File
	if override != "" {
		file = override
	}
	if file == "" {
		return nil, usagef("run %s has no workflow file on record; pass --workflow FILE", run.ID)
	}
	return loadWorkflow(e, file)
}

// checkNodeIDs refuses a workflow that lost nodes the run has steps for:
// their results could not be matched.
func checkNodeIDs(w *workflow.Workflow, run *store.Run, steps []*store.Step) error {
	var missing []string
	seen := map[string]bool{}
	for _, s := range steps {
		if w.Node(s.Node) == nil && !seen[s.Node] {
			seen[s.Node] = true
			missing = append(missing, s.Node)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	return usagef("run %s has steps for node(s) %s, which %s does not have (renamed?); keep the node ids, or start afresh with `skein run`",
		run.ID, strings.Join(missing, ", "), w.File)
}

func resumeCmd(e *env) *cobra.Command {
	var f execFlags
	var wfile string
	var planOnly bool
	cmd := &cobra.Command{
		Use:   "resume RUN_ID",
		Short: "Continue a failed, cancelled or interrupted run without redoing what succeeded",
		Long: `Continue a run that failed, was cancelled, or was interrupted (its process
died). Every step that succeeded before, with the same node definition, the
same resolved parameters and unchanged upstream, is reused (↻, cached);
changed nodes and everything downstream run again. Failed steps never count
as done. Pass --workflow to resume with an edited file; its node ids must
match the run's. --plan shows what would be reused and changes nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return err
			}
			ctx := cmd.Context()
			st, run, steps, err := loadRun(ctx, f.dir, args[0])
			if err != nil {
				return err
			}
			switch engine.RunStatus(run.Status) {
			case engine.RunCompleted:
				st.Close()
				return usagef("run %s completed; there is nothing to resume (`skein rerun %s` runs it again)", run.ID, run.ID)
			}
			w, err := runWorkflowFile(e, run, wfile)
			if err != nil {
				st.Close()
				return err
			}
			if err := checkNodeIDs(w, run, steps); err != nil {
				st.Close()
				return err
			}
			if planOnly {
				defer st.Close()
				var old *workflow.Workflow
				if v, err := st.Workflow(ctx, run.Workflow, run.WorkflowVersion); err == nil && run.WorkflowVersion > 0 {
					old, _ = workflow.Decode(run.File, v.Source)
				}
				return printPlan(e, w, old, run, steps)
			}
			if err := st.DeleteSteps(ctx, run.ID); err != nil {
				st.Close()
				return exit(ExitFailed, err)
			}
			st.Close()
			return execute(ctx, e, &f, job{w: w, inputs: run.Inputs, trigger: run.Trigger, runID: run.ID, resume: run, reuse: durable.ForResume(steps)})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&wfile, "workflow", "", "resume with this (edited) workflow file")
	cmd.Flags().BoolVar(&planOnly, "plan", false, "show what would be reused or run again, and change nothing")
	return cmd
}

// printPlan compares the run's steps with the workflow: a step that
// succeeded and whose node definition is unchanged will be reused if its
// inputs are unchanged too; failed, cancelled and never-run nodes, and
// nodes whose definition changed, run again, and so does what follows them.
func printPlan(e *env, w, old *workflow.Workflow, run *store.Run, steps []*store.Step) error {
	plan, err := engine.NewPlan(w, node.Default)
	if err != nil {
		return exit(ExitInvalid, err)
	}
	verdicts := durable.PlanResume(plan, old, steps)
	fmt.Fprintf(e.stdout, "resume plan for run %s (%s):\n", run.ID, w.File)
	for _, v := range verdicts {
		fmt.Fprintf(e.stdout, "  %-8s %-24s %s\n", v.Action, v.Node, v.Reason)
	}
	return nil
}

func rerunCmd(e *env) *cobra.Command {
	var f execFlags
	var wfile string
	var pins []string
	cmd := &cobra.Command{
		Use:   "rerun RUN_ID",
		Short: "Start a new run with the same inputs, reusing the outputs of pinned nodes",
		Long: `Start a new run of the same workflow with the same inputs. Nodes named with
--pin are not run: their outputs are taken from the earlier run (↻, pinned),
even if running them now would give something else.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return err
			}
			ctx := cmd.Context()
			st, run, steps, err := loadRun(ctx, f.dir, args[0])
			if err != nil {
				return err
			}
			st.Close()
			w, err := runWorkflowFile(e, run, wfile)
			if err != nil {
				return err
			}
			for _, p := range pins {
				if w.Node(p) == nil {
					return usagef("--pin %s: the workflow has no node %q", p, p)
				}
			}
			reuse := durable.ForPins(steps, pins)
			if missing := reuse.Missing(pins); len(missing) > 0 {
				return usagef("--pin %s: run %s has no successful step of %s to reuse", strings.Join(missing, ","), run.ID, strings.Join(missing, ", "))
			}
			return execute(ctx, e, &f, job{w: w, inputs: run.Inputs, trigger: run.Trigger, runID: newRunID(), reuse: reuse, parent: run.ID})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&wfile, "workflow", "", "run this workflow file instead of the run's")
	cmd.Flags().StringSliceVar(&pins, "pin", nil, "nodes whose outputs are reused (comma-separated)")
	return cmd
}
