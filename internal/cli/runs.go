package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

func runsCmd(e *env) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List and inspect recorded runs",
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", ".skein", "folder holding skein.db")
	withStore := func(fn func(ctx context.Context, st store.Store, args []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			if _, err := os.Stat(filepath.Join(dir, "skein.db")); err != nil {
				return usagef("no runs here: %s does not exist (run a workflow first, or pass --dir)", filepath.Join(dir, "skein.db"))
			}
			st, err := openStore(dir)
			if err != nil {
				return err
			}
			defer st.Close()
			return fn(cmd.Context(), st, args)
		}
	}

	var filter store.RunFilter
	list := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Args:  cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, st store.Store, _ []string) error {
			runs, err := st.ListRuns(ctx, filter)
			if err != nil {
				return exit(ExitFailed, err)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tWORKFLOW\tSTATUS\tSTARTED\tDURATION")
			for _, r := range runs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Workflow, r.Status, r.StartedAt.Local().Format("2006-01-02 15:04:05"), runDuration(r))
			}
			return tw.Flush()
		}),
	}
	list.Flags().StringVar(&filter.Workflow, "workflow", "", "only runs of this workflow")
	list.Flags().StringVar(&filter.Status, "status", "", "only runs with this status")
	list.Flags().IntVar(&filter.Limit, "limit", 20, "most runs shown (0: all)")

	var output string
	show := &cobra.Command{
		Use:   "show RUN_ID",
		Short: "Show a run and its steps",
		Args:  cobra.ExactArgs(1),
		RunE: withStore(func(ctx context.Context, st store.Store, args []string) error {
			run, err := findRun(ctx, st, args[0])
			if err != nil {
				return err
			}
			steps, err := st.Steps(ctx, run.ID)
			if err != nil {
				return exit(ExitFailed, err)
			}
			if output == "json" {
				js := make([]map[string]any, 0, len(steps))
				for _, s := range steps {
					out, _, _ := durable.Output(s)
					js = append(js, jsonStep(s.Node, s.Status, s.Visit, s.Iteration, s.Attempts, out, s.Error,
						s.Cached, s.Pinned, s.StartedAt, s.FinishedAt, s.DurationMS, s.Tokens, s.CostUSD))
				}
				outputs := run.Outputs
				if outputs == nil {
					outputs = map[string]any{}
				}
				writeJSON(e.stdout, map[string]any{
					"execution_id": run.ID, "workflow": run.Workflow, "status": run.Status, "outputs": outputs,
					"error": run.Error, "steps": js, "verdict": nil, "started_at": run.StartedAt, "finished_at": run.FinishedAt,
					"inputs": run.Inputs, "file": run.File, "dir": run.Dir,
				})
				return nil
			}
			fmt.Fprintf(e.stdout, "run %s · %s · %s · %s\n", run.ID, run.Workflow, run.Status, runDuration(run))
			fmt.Fprintf(e.stdout, "file %s\nfolder %s\n\n", run.File, run.Dir)
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "#\tNODE\tTYPE\tVISIT\tITER\tSTATUS\tATTEMPTS\tDURATION\t")
			for _, s := range steps {
				st := s.Status
				switch {
				case s.Cached:
					st += " ↻ cached"
				case s.Pinned:
					st += " ↻ pinned"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%d\t%s\t\n", s.StepOrder, s.Node, s.Type, s.Visit, s.Iteration, st, s.Attempts,
					fmtDuration(time.Duration(s.DurationMS)*time.Millisecond))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if run.Error != nil {
				fmt.Fprintf(e.stdout, "\nerror: %s\n", run.Error.Message)
			}
			return nil
		}),
	}
	show.Flags().StringVarP(&output, "output", "o", "text", "text or json")

	var follow bool
	events := &cobra.Command{
		Use:   "events RUN_ID",
		Short: "Print a run's events as JSON lines (-f follows a running run)",
		Args:  cobra.ExactArgs(1),
		RunE: withStore(func(ctx context.Context, st store.Store, args []string) error {
			run, err := findRun(ctx, st, args[0])
			if err != nil {
				return err
			}
			var after int64
			enc := json.NewEncoder(e.stdout)
			enc.SetEscapeHTML(false)
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				evs, err := st.Events(ctx, run.ID, after, 1000)
				if err != nil {
					return exit(ExitFailed, err)
				}
				for _, ev := range evs {
					line := map[string]any{"seq": ev.Seq, "time": ev.Time, "type": ev.Type, "visit": ev.Visit, "iteration": ev.Iteration}
					if ev.Node != "" {
						line["node"] = ev.Node
					}
					if len(ev.Data) > 0 {
						line["data"] = ev.Data
					}
					if err := enc.Encode(line); err != nil {
						return err
					}
					after = ev.Seq
				}
				if len(evs) == 1000 {
					continue
				}
				if !follow {
					return nil
				}
				cur, err := st.Run(ctx, run.ID)
				if err != nil {
					return exit(ExitFailed, err)
				}
				if s := engine.RunStatus(cur.Status); s != engine.RunRunning && s != engine.RunPending && s != engine.RunWaiting {
					// One more read picks up what was written at the end.
					if evs, err := st.Events(ctx, run.ID, after, 0); err == nil && len(evs) == 0 {
						return nil
					}
					continue
				}
				select {
				case <-ctx.Done():
					return nil
				case <-tick.C:
				}
			}
		}),
	}
	events.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing events until the run ends")

	var olderThan string
	prune := &cobra.Command{
		Use:   "prune --older-than 30d",
		Short: "Delete old runs: their rows and their run folders",
		Args:  cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, st store.Store, _ []string) error {
			if olderThan == "" {
				return usagef("prune needs --older-than, e.g. --older-than 30d")
			}
			age, err := workflow.ParseDuration(olderThan)
			if err != nil {
				return usagef("--older-than: %v", err)
			}
			runs, err := st.DeleteRuns(ctx, time.Now().Add(-age))
			if err != nil {
				return exit(ExitFailed, err)
			}
			removed := 0
			for _, r := range runs {
				if r.Dir != "" && strings.Contains(filepath.ToSlash(r.Dir), "/runs/") {
					if err := os.RemoveAll(r.Dir); err == nil {
						removed++
					}
				}
			}
			if err := st.Compact(ctx); err != nil {
				return exit(ExitFailed, err)
			}
			fmt.Fprintf(e.stdout, "deleted %d runs and %d run folders\n", len(runs), removed)
			return nil
		}),
	}
	prune.Flags().StringVar(&olderThan, "older-than", "", "age of the runs to delete, e.g. 30d or 12h")

	cmd.AddCommand(list, show, events, prune, verdictCmd(e, &dir))
	return cmd
}

func runDuration(r *store.Run) string {
	if r.FinishedAt == nil {
		return "-"
	}
	return fmtDuration(r.FinishedAt.Sub(r.StartedAt))
}
