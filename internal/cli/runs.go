package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/cli/live"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/rundoc"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/workflow"
)

func runsCmd(e *env) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List and inspect recorded runs",
		Args:  cobra.ArbitraryArgs,
		RunE:  groupCmd,
	}
	addDirFlag(cmd.PersistentFlags(), &dir)
	withRunner := func(fn func(ctx context.Context, r *runner.Runner, args []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			r, err := e.openExisting(dir)
			if err != nil {
				return err
			}
			defer r.Close()
			return fn(cmd.Context(), r, args)
		}
	}

	var filter runner.ListRequest
	var listOutput string
	list := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Long: `List runs, newest first. A run whose process died before it ended is
interrupted; resume it with skein resume RUN_ID.`,
		Args: cobra.NoArgs,
		RunE: withRunner(func(ctx context.Context, r *runner.Runner, _ []string) error {
			if err := checkStatus(filter.Status); err != nil {
				return err
			}
			if filter.Limit < 0 {
				return usagef("--limit %d: give the most runs to show, or 0 for all", filter.Limit)
			}
			if filter.Parent != "" {
				id, err := runID(ctx, r, filter.Parent)
				if err != nil {
					return err
				}
				filter.Parent = id
			}
			runs, err := r.List(ctx, filter)
			if err != nil {
				return failure(err)
			}
			if listOutput == "json" {
				out := make([]runListItem, 0, len(runs))
				for _, run := range runs {
					out = append(out, listItem(run))
				}
				writeJSON(e.stdout, out)
				return nil
			}
			tw := newTable(e.stdout)
			fmt.Fprintln(tw, "ID\tWORKFLOW\tSTATUS\tSTARTED\tDURATION")
			for _, run := range runs {
				status := statusLine(run)
				if run.Status == record.RunWaiting && run.WakeAt == nil {
					status = signalLine(ctx, r, run.ID, status)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", run.ID, run.Workflow, status, run.StartedAt.Local().Format("2006-01-02 15:04:05"), runDuration(run))
			}
			return tw.Flush()
		}),
	}
	list.Flags().StringVar(&filter.Workflow, "workflow", "", "only runs of this workflow")
	list.Flags().StringVar(&filter.Status, "status", "", "only runs with this status (interrupted: runs whose process died)")
	list.Flags().StringVar(&filter.Parent, "parent", "", "only the child runs of this run")
	list.Flags().IntVar(&filter.Limit, "limit", 20, "most runs shown (0: all)")
	addOutputFlag(list, &listOutput)

	var output string
	show := &cobra.Command{
		Use:   "show RUN_ID",
		Short: "Show a run and its steps",
		Args:  cobra.ExactArgs(1),
		RunE: withRunner(func(ctx context.Context, r *runner.Runner, args []string) error {
			id, err := runID(ctx, r, args[0])
			if err != nil {
				return err
			}
			doc, err := r.Get(ctx, id)
			if err != nil {
				return failure(err)
			}
			if output == "json" {
				writeJSON(e.stdout, doc)
				return nil
			}
			dur := "-"
			if doc.FinishedAt != nil {
				dur = fmtDuration(doc.FinishedAt.Sub(doc.StartedAt))
			}
			status := string(doc.Status)
			if status == string(runner.StatusInterrupted) {
				status += " (skein resume " + doc.ExecutionID + ")"
			}
			fmt.Fprintf(e.stdout, "run %s · %s · %s · %s\n", doc.ExecutionID, doc.Workflow, status, dur)
			if doc.ParentID != "" {
				fmt.Fprintf(e.stdout, "child of run %s\n", doc.ParentID)
			}
			interrupted := doc.Status == runner.StatusInterrupted
			switch {
			case doc.Owner != nil && interrupted:
				fmt.Fprintf(e.stdout, "ran in pid %d on %s, which stopped before the run ended\n", doc.Owner.PID, doc.Owner.Host)
			case doc.Owner != nil:
				fmt.Fprintf(e.stdout, "running in pid %d on %s\n", doc.Owner.PID, doc.Owner.Host)
			}
			folder := shownPath(doc.Dir)
			if _, err := os.Stat(doc.Dir); errors.Is(err, os.ErrNotExist) {
				// skein serve makes a run's folder only when the run keeps
				// files there (--run-folders on-demand).
				folder = "none (the run kept no files: its record is in the database)"
			}
			fmt.Fprintf(e.stdout, "file %s\nfolder %s\n\n", shownPath(doc.File), folder)
			tw := newTable(e.stdout)
			fmt.Fprintln(tw, "#\tNODE\tTYPE\tVISIT\tITER\tSTATUS\tATTEMPTS\tDURATION\tRAN ON\t")
			for _, s := range doc.Steps {
				dur := "-"
				if s.StartedAt != nil && (s.FinishedAt != nil || s.DurationMS > 0) {
					dur = fmtDuration(time.Duration(s.DurationMS) * time.Millisecond)
				}
				st := stepStatus(&s)
				if interrupted && (s.Status == record.StatusRunning || s.Status == record.StatusPending) {
					st += " when interrupted" // its process stopped: it goes on when the run is resumed
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%d\t%s\t%s\t\n", s.StepOrder, s.Node, s.Type, s.Visit, s.Iteration, st, s.Attempts,
					dur, ranOn(s.RanOn))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			printFailedSteps(e.stdout, doc.Steps)
			printArtifacts(e.stdout, doc.Steps)
			if len(doc.Outputs) > 0 {
				var b strings.Builder
				writeJSON(&b, doc.Outputs)
				fmt.Fprintf(e.stdout, "\noutputs: %s", b.String())
			}
			if doc.Error != nil {
				fmt.Fprintf(e.stdout, "\nerror: %s\n", doc.Error.Message)
			}
			return nil
		}),
	}
	addOutputFlag(show, &output)

	var follow bool
	eventsOutput := "json"
	events := &cobra.Command{
		Use:   "events RUN_ID",
		Short: "Print a run's events as JSON lines (-f follows a running run)",
		Long: `Print a run's events, one JSON object a line (schema/event.schema.json);
-o text prints them as aligned lines for people. -f follows a running run
until it ends.`,
		Args: cobra.ExactArgs(1),
		RunE: withRunner(func(ctx context.Context, r *runner.Runner, args []string) error {
			id, err := runID(ctx, r, args[0])
			if err != nil {
				return err
			}
			var after int64
			// The lines are buffered, written a page at a time (not a
			// system call a line) and before each wait for more.
			out := bufio.NewWriterSize(e.stdout, 64<<10)
			defer out.Flush()
			enc := json.NewEncoder(out)
			enc.SetEscapeHTML(false)
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				evs, run, err := r.Events(ctx, id, after, 1000)
				if err != nil {
					return failure(err)
				}
				for _, ev := range evs {
					if eventsOutput == "text" {
						fmt.Fprintln(out, eventText(ev))
					} else if err := enc.Encode(rundoc.EventLine(ev)); err != nil {
						return err
					}
					after = ev.Seq
				}
				if len(evs) == 1000 {
					continue
				}
				if err := out.Flush(); err != nil {
					return err
				}
				if !follow {
					return nil
				}
				if s := record.RunStatus(run.Status); s != record.RunRunning && s != record.RunPending && s != record.RunWaiting {
					// One more read picks up what was written at the end.
					if evs, _, err := r.Events(ctx, id, after, 0); err == nil && len(evs) == 0 {
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
	events.Flags().VarP((*outputValue)(&eventsOutput), "output", "o", "output format: json (JSON lines) or text")

	var olderThan, pruneOutput string
	var dryRun bool
	prune := &cobra.Command{
		Use:   "prune --older-than 30d",
		Short: "Delete old runs: their rows, their child runs and their run folders",
		Long: `Delete the runs started longer ago than --older-than (a number with a unit:
30d, 12h, 90m), with their child runs and run folders. A run that is still
running is never deleted. --dry-run lists what would go.`,
		Args: cobra.NoArgs,
		RunE: withRunner(func(ctx context.Context, r *runner.Runner, _ []string) error {
			age, err := parseAge(olderThan)
			if err != nil {
				return err
			}
			res, err := r.Prune(ctx, runner.PruneRequest{OlderThan: age, DryRun: dryRun})
			if err != nil {
				return failure(err)
			}
			if pruneOutput == "json" {
				doc := pruneDoc{DryRun: dryRun, Runs: make([]runListItem, 0, len(res.Runs)), Folders: res.Folders}
				for _, run := range res.Runs {
					doc.Runs = append(doc.Runs, listItem(run))
				}
				writeJSON(e.stdout, doc)
				return nil
			}
			if dryRun {
				for _, run := range res.Runs {
					fmt.Fprintf(e.stdout, "would delete %s  %s  %s  %s\n", run.ID, run.Workflow, run.Status, run.StartedAt.Local().Format("2006-01-02 15:04:05"))
				}
				fmt.Fprintf(e.stdout, "%d runs would be deleted (dry run: nothing was)\n", len(res.Runs))
				return nil
			}
			fmt.Fprintf(e.stdout, "deleted %d runs and %d run folders\n", len(res.Runs), res.Folders)
			return nil
		}),
	}
	prune.Flags().StringVar(&olderThan, "older-than", "", "age of the runs to delete, with a unit: 30d, 12h, 90m")
	prune.Flags().BoolVar(&dryRun, "dry-run", false, "list the runs that would be deleted, and delete nothing")
	addOutputFlag(prune, &pruneOutput)

	cmd.AddCommand(list, show, events, prune, verdictCmd(e, &dir))
	return cmd
}

// runStatuses are the statuses a run can have, interrupted included.
var runStatuses = []string{"pending", "running", "waiting", "completed", "failed", "cancelled", string(runner.StatusInterrupted)}

// checkStatus refuses a --status that no run can have.
func checkStatus(s string) error {
	if s == "" {
		return nil
	}
	for _, ok := range runStatuses {
		if s == ok {
			return nil
		}
	}
	return usagef("--status %q is not a run status; use one of %s", s, strings.Join(runStatuses, ", "))
}

// parseAge reads --older-than: a duration that must say its unit, so
// "30" is not silently thirty seconds.
func parseAge(s string) (time.Duration, error) {
	if s == "" {
		return 0, usagef("prune needs --older-than, e.g. --older-than 30d")
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, usagef("--older-than %s needs a unit: %sd (days), %sh (hours) or %sm (minutes)", s, s, s, s)
	}
	if strings.HasPrefix(strings.TrimSpace(s), "-") {
		return 0, usagef("--older-than %s is negative: give an age more than 0, e.g. 30d", s)
	}
	age, err := workflow.ParseDuration(s)
	if err != nil {
		return 0, usagef("--older-than: %v", err) // the error says how to write one
	}
	if age <= 0 {
		return 0, usagef("--older-than %s is no age: give one more than 0, e.g. 30d", s)
	}
	return age, nil
}

// eventText is an event as a line for people: time, type, node, data.
func eventText(ev record.EventRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%4d  %s  %-18s", ev.Seq, ev.Time.Local().Format("15:04:05.000"), ev.Type)
	if ev.Node != "" {
		fmt.Fprintf(&b, "  %s", ev.Node)
		if ev.Visit > 1 {
			fmt.Fprintf(&b, " #%d", ev.Visit)
		}
	}
	if len(ev.Data) > 0 {
		data, err := json.Marshal(ev.Data)
		if err == nil {
			fmt.Fprintf(&b, "  %s", data)
		}
	}
	return b.String()
}

func runDuration(r *record.Run) string {
	if r.FinishedAt == nil {
		return "-"
	}
	return fmtDuration(r.FinishedAt.Sub(r.StartedAt))
}

func checkCmd(e *env) *cobra.Command {
	var dir, output string
	cmd := &cobra.Command{
		Use:   "check RUN_ID",
		Short: "Run the evaluation pass of a recorded run again (checks and expect:)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := e.openExisting(dir)
			if err != nil {
				return err
			}
			defer r.Close()
			id, err := runID(cmd.Context(), r, args[0])
			if err != nil {
				return err
			}
			v, err := r.Check(cmd.Context(), id)
			if err != nil {
				return failure(err)
			}
			if v == nil && output == "json" {
				fmt.Fprintln(e.stdout, "null")
				return nil
			}
			if v == nil {
				fmt.Fprintln(e.stdout, "the workflow has no checks")
				return nil
			}
			return printVerdict(e, v, output)
		},
	}
	addDirFlag(cmd.Flags(), &dir)
	addOutputFlag(cmd, &output)
	return cmd
}

// verdictCmd is `skein runs verdict RUN_ID`.
func verdictCmd(e *env, dir *string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "verdict RUN_ID",
		Short: "Show a run's verdict, check by check (exit 3 when it FAILED, 1 when INCOMPLETE)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := e.openExisting(*dir)
			if err != nil {
				return err
			}
			defer r.Close()
			id, err := runID(cmd.Context(), r, args[0])
			if err != nil {
				return err
			}
			run, v, err := r.Verdict(cmd.Context(), id)
			if err != nil {
				return failure(err)
			}
			if v == nil && output == "json" {
				fmt.Fprintln(e.stdout, "null")
				return nil
			}
			if v == nil {
				fmt.Fprintf(e.stdout, "run %s has no verdict (its workflow has no checks; `skein check %s` evaluates them)\n", run.ID, run.ID)
				return nil
			}
			return printVerdict(e, v, output)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// printVerdict shows a verdict, as JSON or as the bar and its checks; a
// FAILED verdict exits 3, an INCOMPLETE one (the run failed or was
// cancelled, no check failed) 1, as skein run of that run did.
func printVerdict(e *env, v *check.RunVerdict, output string) error {
	if output == "json" {
		writeJSON(e.stdout, v)
	} else {
		fmt.Fprintln(e.stdout, check.Bar(v, e.colorful(e.stdout)))
		fmt.Fprint(e.stdout, check.Details(v))
	}
	switch v.Status {
	case check.StatusFailed:
		return exit(ExitChecks, nil)
	case check.StatusIncomplete:
		return exit(ExitFailed, nil)
	}
	return nil
}

// stepMarks are the marks of a step's status in runs show, as the
// progress lines have them.
var stepMarks = map[record.Status]string{
	record.StatusPending: "·", record.StatusRunning: "▸", record.StatusSuccess: "✓", record.StatusFailed: "✗",
	record.StatusSkipped: "–", record.StatusWaiting: "⏸", record.StatusCancelled: "⊘",
}

// stepStatus is a step's status in runs show: its mark and status, and
// whether it was reused or why it was skipped (with the handle its branch
// took instead).
func stepStatus(s *runner.StepDoc) string {
	st := string(s.Status)
	if m := stepMarks[s.Status]; m != "" {
		st = m + " " + st
	}
	switch {
	case s.Cached:
		st += " ↻ cached"
	case s.Pinned:
		st += " ↻ pinned"
	case s.SkipReason == record.SkipBranchNotTaken && s.TakenHandle != "":
		st += " (" + s.SkipReason + ": took " + s.TakenHandle + ")"
	case s.SkipReason != "":
		st += " (" + s.SkipReason + ")"
	}
	if s.Confidence != nil {
		st += fmt.Sprintf(" · confidence %.2f", *s.Confidence)
	}
	return st
}

// ranOn says where a step ran: its queue worker, else its host and
// process; "-" for a step that did not run.
func ranOn(p *record.Place) string {
	switch {
	case p == nil:
		return "-"
	case p.Worker != "":
		return "worker " + p.Worker
	}
	return fmt.Sprintf("%s pid %d", p.Host, p.PID)
}

// printFailedSteps shows each failed step's error with the last lines of
// its stderr (a shell step's), as the run's progress did.
func printFailedSteps(w io.Writer, steps []runner.StepDoc) {
	for _, s := range steps {
		if s.Status != record.StatusFailed || s.Error == nil {
			continue
		}
		name := s.Node
		if s.Visit > 1 {
			name = fmt.Sprintf("%s (visit %d)", s.Node, s.Visit)
		}
		fmt.Fprintf(w, "\n%s failed: %s\n", name, s.Error.Message)
		for _, l := range live.FailureTail(s.Error.Details) {
			fmt.Fprintln(w, "    │ "+l)
		}
	}
}

// printArtifacts lists the files the nodes of a queued run saved in the
// blob store (a local run's are in its folder).
func printArtifacts(w io.Writer, steps []runner.StepDoc) {
	first := true
	for _, s := range steps {
		for _, a := range s.Artifacts {
			if first {
				fmt.Fprintln(w, "\nartifacts (GET /api/runs/RUN/artifacts/NODE/NAME):")
				first = false
			}
			fmt.Fprintf(w, "  %s/%s  %d bytes\n", s.Node, a.Name, a.Size)
		}
	}
}

// signalLine is the status of a run that waits for a signal, with the
// command that sends it to the node that waits (the nodes, when several
// do); fallback when the run's steps cannot be read.
func signalLine(ctx context.Context, r *runner.Runner, id, fallback string) string {
	doc, err := r.Get(ctx, id)
	if err != nil {
		return fallback
	}
	var nodes []string
	for _, st := range doc.Steps {
		if st.Status == record.StatusWaiting && !slices.Contains(nodes, st.Node) {
			nodes = append(nodes, st.Node)
		}
	}
	switch len(nodes) {
	case 0:
		return fallback
	case 1:
		return fmt.Sprintf("waiting (for a signal: skein signal %s %s)", id, nodes[0])
	}
	return fmt.Sprintf("waiting (for a signal to %s: skein signal %s NODE)", strings.Join(nodes, ", "), id)
}
