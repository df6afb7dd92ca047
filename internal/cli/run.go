package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/cli/live"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/reqbody"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/workflow"
)

// execFlags are the flags shared by run, resume and rerun.
type execFlags struct {
	output      string
	concurrency int
	dir         string
	secretsFile string
	denyPrivate bool
	model       string // read through env.getenv
	// dirFlag is --dir as given on the command line ("" when it was not),
	// dbFlag --db.
	dirFlag, dbFlag string
	// record is skein run --record.
	record bool
	// trace is --trace of run and resume ("" when not given).
	trace string
}

// addTraceFlag adds --trace, what the run folder holds.
func (f *execFlags) addTraceFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.trace, "trace", "", "what the run folder holds: run (run.json and events.jsonl) or nodes (also each node's run.json and events.jsonl in its folder, written when the run ends or waits); default the workflow's trace:, else run")
}

func (f *execFlags) register(cmd *cobra.Command) {
	addOutputFlag(cmd, &f.output)
	f.registerRun(cmd.Flags(), "most nodes running at once")
}

// registerRun adds the flags of how runs execute, shared with skein mcp.
func (f *execFlags) registerRun(fl *pflag.FlagSet, concurrency string) {
	addConcurrencyFlag(fl, &f.concurrency, concurrency)
	addDirFlag(fl, &f.dir)
	addModelFlag(fl, &f.model)
	fl.StringVar(&f.secretsFile, "secrets-file", "", "dotenv file with secret values")
	fl.BoolVar(&f.denyPrivate, "deny-private-networks", false, "http nodes refuse loopback, private, link-local and metadata addresses")
}

func (f *execFlags) check(cmd *cobra.Command) error {
	if cmd.Flags().Changed("dir") {
		f.dirFlag = f.dir
	}
	if db := cmd.Flags().Lookup("db"); db != nil && db.Changed {
		f.dbFlag = db.Value.String()
	}
	if f.output != "text" && f.output != "json" {
		return usagef("--output must be text or json, not %q", f.output)
	}
	if f.concurrency < 1 {
		return usagef("--concurrency must be at least 1")
	}
	if f.trace != "" {
		if _, err := workflow.ParseTrace(f.trace); err != nil {
			return usagef("--%v", err)
		}
	}
	return nil
}

// options are the runner's options for the flags; obs, when set, shows
// the run's progress.
func (f *execFlags) options(obs runner.Observer, hard <-chan struct{}) runner.Options {
	return runner.Options{Concurrency: f.concurrency, SecretsFile: f.secretsFile, DenyPrivate: f.denyPrivate, Hard: hard, Park: cliPark, Observer: obs, Record: f.record,
		Trace: workflow.Trace(f.trace)}
}

// resumeCommand is the command that resumes run id: with --dir and --db
// when they were given on the command line (SKEIN_DIR, SKEIN_DB and
// .skein.yaml still hold for the next command).
func (f *execFlags) resumeCommand(id string) string {
	return "skein resume " + id + f.where()
}

// where is the --dir and --db flags a command on the same run needs, as
// they were given (a Postgres URL's password is not shown: put it back).
func (f *execFlags) where() string {
	out := ""
	if f.dirFlag != "" {
		out += " --dir " + shellQuote(f.dirFlag)
	}
	if f.dbFlag != "" {
		out += " --db " + shellQuote(runner.RedactURL(f.dbFlag))
	}
	return out
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// cliPark: a command line execution ends (exit 4) when its run waits for
// a signal — nobody else could end that wait here — unless a timer ends
// it within a minute; waits for timers alone keep the process, as sleep
// would.
var cliPark = &runner.Park{After: time.Minute, SignalsOnly: true}

// openRunner opens the runner of dir (and --db).
func (e *env) openRunner(dir string) (*runner.Runner, error) {
	r, err := runner.Open(runner.Config{Dir: dir, DB: e.db, Blobs: e.blobs, LookupEnv: e.getenv})
	if err != nil {
		return nil, failure(err) // a bad --db is a usage error
	}
	return r, nil
}

// openExisting opens the runner of dir for a command that reads runs.
func (e *env) openExisting(dir string) (*runner.Runner, error) {
	r, err := runner.OpenExisting(runner.Config{Dir: dir, DB: e.db, Blobs: e.blobs, LookupEnv: e.getenv})
	if err != nil {
		return nil, failure(err)
	}
	return r, nil
}

func runCmd(e *env) *cobra.Command {
	var f execFlags
	var inputs []string
	var inputFile, trigger string
	var autoRepair, noUpdate, queued, local bool
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a workflow and show its progress",
		Long: `Run a workflow on this machine. The run is recorded in .skein/skein.db
and under .skein/runs/<workflow>/<time>_<id>/.

Progress is shown per node as it ends (✓ success, ✗ failed with the last
lines of its stderr, ⊘ cancelled, – skipped, ↻ cached or pinned, ⚠ warning);
on a terminal the nodes running now are shown live under them. Plain lines
only when stdout is not a terminal, NO_COLOR is set or TERM=dumb.

Exit codes: 0 completed, 1 failed, 2 invalid workflow or usage, 3 checks
failed, 4 waiting for a signal, 130 cancelled. Ctrl-C cancels: running
nodes finish, nothing new starts; a second Ctrl-C stops them at once.

A run whose every branch waits for a signal (a wait with until: signal)
is left waiting and the command ends with exit code 4, printing how to
send it: skein signal RUN NODE --data '{...}' continues it.

With --db postgres://… the run is recorded in Postgres and its nodes go to
the queue: each node is a job that a skein worker (on this machine or
another, with the same --db) runs; this command follows the run to its end
with the same progress and exit codes, and Ctrl-C asks the workers to
cancel it. --local runs the nodes in this process instead (as without a
Postgres --db; --auto-repair does too).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			if noUpdate && !autoRepair {
				return usagef("--no-update goes with --auto-repair")
			}
			if queued && local {
				return usagef("--queue and --local are opposites: give one")
			}
			if queued && autoRepair {
				return usagef("--auto-repair runs the workflow in this process; it does not go with --queue")
			}
			if queued && f.record {
				return usagef("--record keeps the interactions of nodes run in this process; it does not go with --queue")
			}
			// Where the nodes run is the runner's decision (Place): on
			// the queue with a Postgres --db, unless asked otherwise.
			place := runner.PlaceAuto
			switch {
			case local || autoRepair:
				place = runner.PlaceLocal
			case queued:
				place = runner.PlaceQueue
			}
			// The workflow is read and checked while the runner opens its
			// database (a new one is written and synced); its problems
			// are told after the runner's, as before.
			type loaded struct {
				w   *workflow.Workflow
				err error
			}
			pre := make(chan loaded, 1)
			if !autoRepair {
				roomBeforeReading(args[0])
				go func() {
					w, err := runner.LoadFile(args[0], nil)
					pre <- loaded{w, err}
				}()
			}
			return executing(cmd.Context(), e, &f, func(ctx context.Context, r *runner.Runner, o runner.Options) (*runner.Result, error) {
				resolve := func(w *workflow.Workflow) (map[string]any, error) { return resolveInputs(w, inputs, inputFile) }
				if autoRepair {
					return r.StartRepairing(ctx, runner.RepairRequest{File: args[0], Inputs: resolve, Trigger: trigger, NoUpdate: noUpdate, Options: o})
				}
				l := <-pre
				w, err := l.w, l.err
				if err != nil {
					return nil, err
				}
				in, err := resolve(w)
				if err != nil {
					return nil, err
				}
				collectAfterLoad(loadGarbage, w)
				return r.Start(ctx, runner.StartRequest{Workflow: w, Inputs: in, Trigger: trigger, Placement: place, Options: o})
			})
		},
	}
	f.register(cmd)
	f.addTraceFlag(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&f.record, "record", false, "keep a cassette of every interaction with the outside world (models, MCP tools, HTTP, shell; secrets masked) in the run folder, for skein replay")
	fl.StringArrayVarP(&inputs, "input", "i", nil, "input as name=value (repeatable)")
	fl.StringVar(&inputFile, "input-file", "", "JSON file with inputs")
	fl.StringVar(&trigger, "trigger", "", "trigger node to start from")
	fl.BoolVar(&autoRepair, "auto-repair", false, "on a validation error or a repairable node error, ask the repair model for a corrected workflow, show its diff and resume from the checkpoint (at most 3 attempts per phase); a repaired run that completes replaces FILE, keeping FILE.backup")
	fl.BoolVar(&queued, "queue", false, "run the nodes on skein workers (jobs in the database's queue) and follow the run here: the default with --db postgres://…")
	fl.BoolVar(&local, "local", false, "with --db postgres://…: run the nodes in this process, not on the queue's workers")
	fl.BoolVar(&noUpdate, "no-update", false, "with --auto-repair: leave FILE as it is and keep the repaired workflow in <name>.repaired.yaml beside it")
	return cmd
}

// executing opens the runner, shows progress, carries out one execution
// and renders its result.
func executing(ctx context.Context, e *env, f *execFlags, do func(context.Context, *runner.Runner, runner.Options) (*runner.Result, error)) error {
	return executingRendered(ctx, e, f, do, nil)
}

// executingRendered is executing with the result rendered by render, when
// set, instead of the run document or summary.
func executingRendered(ctx context.Context, e *env, f *execFlags, do func(context.Context, *runner.Runner, runner.Options) (*runner.Result, error), render func(ctx context.Context, color bool)) error {
	r, err := e.openRunner(f.dir)
	if err != nil {
		return err
	}
	defer r.Close()
	disp, color := e.newDisplay(f.output)
	closed := false
	closeDisplay := func() {
		if !closed {
			closed = true
			disp.Close()
		}
	}
	defer closeDisplay()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	hard := make(chan struct{})
	stopSignals := onSignals(disp.Say, cancel, hard)
	defer stopSignals()
	res, err := do(runCtx, r, f.options(disp, hard))
	closeDisplay()
	if err != nil {
		return failure(err)
	}
	if res == nil {
		return nil // nothing ran here; do said why
	}
	switch {
	case render != nil:
		render(ctx, color)
	case f.output == "json":
		writeJSON(e.stdout, resultJSON(ctx, r, res))
	default:
		summary(e.stdout, color, res, f.where())
	}
	return resultExit(res)
}

// resultJSON is the one run document (with what --auto-repair did),
// written as it is read (a long run's steps come from the store).
func resultJSON(ctx context.Context, r *runner.Runner, res *runner.Result) any {
	return r.StreamDoc(ctx, res)
}

// resultExit maps how a run ended to the exit code (DESIGN §6): the one
// place that does.
func resultExit(res *runner.Result) error {
	if res.Err != nil {
		return exit(ExitFailed, res.Err)
	}
	switch record.RunStatus(res.Run.Status) {
	case record.RunCompleted:
		if res.Verdict != nil && res.Verdict.Status == check.StatusFailed {
			return exit(ExitChecks, nil)
		}
		return nil
	case record.RunCancelled:
		return exit(ExitCancelled, nil)
	case record.RunWaiting:
		return exit(ExitWaiting, nil)
	}
	return exit(ExitFailed, nil)
}

// failure gives a runner error its exit code (errorOf decides it); an
// invalid workflow's problems are printed one a line.
func failure(err error) error {
	var inv *runner.InvalidError
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return err
	case errors.As(err, &inv):
		if len(inv.Diagnostics) == 0 {
			return exit(ExitInvalid, err)
		}
		return exit(ExitInvalid, &diagnosticsError{inv.Diagnostics})
	}
	code, _ := errorOf(err)
	return exit(code, err)
}

// runID resolves a run id, or the unique prefix of one, given on the
// command line.
func runID(ctx context.Context, r *runner.Runner, arg string) (string, error) {
	id, err := r.ResolveRunID(ctx, arg)
	if err != nil {
		return "", failure(err)
	}
	return id, nil
}

// diagnosticsError prints a workflow's problems one a line.
type diagnosticsError struct{ ds workflow.Diagnostics }

func (d *diagnosticsError) Error() string { return "" }

// onSignals turns the first Ctrl-C (or SIGTERM) into a graceful cancel and
// the second into a hard one.
func onSignals(say func(string), cancel context.CancelFunc, hard chan struct{}) (stop func()) {
	sigs := make(chan os.Signal, 2)
	done := make(chan struct{})
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		n := 0
		for {
			select {
			case <-sigs:
				n++
				if n == 1 {
					say("cancelling: waiting for running nodes (Ctrl-C again to stop them now)")
					cancel()
				} else {
					close(hard)
					return
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

func resumeCmd(e *env) *cobra.Command {
	var f execFlags
	var wfile string
	var planOnly bool
	cmd := &cobra.Command{
		Use:   "resume RUN_ID",
		Short: "Continue a failed, cancelled, interrupted or waiting run without redoing what succeeded",
		Long: `Continue a run that failed, was cancelled, was interrupted (its process
died), or waits (its waits go on until their wake-up times; signals recorded
meanwhile are applied). Every step that succeeded before, with the same node definition, the
same resolved parameters and unchanged upstream, is reused (↻, cached);
changed nodes and everything downstream run again. Failed steps never count
as done. Pass --file to resume with an edited file; its node ids must
match the run's. --plan plays the resume dry and shows, step by step, what
it reuses, runs again, skips, or cannot know before a node runs again; it
changes nothing.

A run still running in another process is refused; of two resumes at once
exactly one proceeds.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			if planOnly {
				r, err := e.openExisting(f.dir)
				if err != nil {
					return err
				}
				defer r.Close()
				id, err := runID(cmd.Context(), r, args[0])
				if err != nil {
					return err
				}
				p, err := r.PlanResume(cmd.Context(), runner.ResumeRequest{RunID: id, WorkflowFile: wfile,
					Options: runner.Options{Concurrency: f.concurrency, SecretsFile: f.secretsFile}})
				if err != nil {
					return failure(err)
				}
				doc := planDoc{ExecutionID: p.Run.ID, File: p.File, Nodes: make([]planNodeDoc, 0, len(p.Verdicts))}
				for _, v := range p.Verdicts {
					doc.Nodes = append(doc.Nodes, planNodeDoc{Node: v.Node, Visit: v.Visit, Label: planLabel(p.Run.ID, v), Run: v.Run, Action: v.Action, Reason: v.Reason})
				}
				if f.output == "json" {
					writeJSON(e.stdout, doc)
					return nil
				}
				fmt.Fprintf(e.stdout, "resume plan for run %s (%s):\n", p.Run.ID, shownPath(p.File))
				for _, n := range doc.Nodes {
					fmt.Fprintf(e.stdout, "  %-8s %-24s %s\n", n.Action, n.Label, n.Reason)
				}
				return nil
			}
			if _, err := os.Stat(f.dir); err != nil && e.db == "" {
				// With --db the runs are in that database, wherever --dir is.
				return usagef("no runs here: %s does not exist (pass --dir)", f.dir)
			}
			return executing(cmd.Context(), e, &f, func(ctx context.Context, r *runner.Runner, o runner.Options) (*runner.Result, error) {
				id, err := r.ResolveRunID(ctx, args[0])
				if err != nil {
					return nil, err
				}
				return r.Resume(ctx, runner.ResumeRequest{RunID: id, WorkflowFile: wfile, Options: o})
			})
		},
	}
	f.register(cmd)
	f.addTraceFlag(cmd)
	addFileFlag(cmd, &wfile, "resume with this (edited) workflow file")
	cmd.Flags().BoolVar(&planOnly, "plan", false, "show, step by step, what the resume would reuse or run again, and change nothing")
	return cmd
}

// planLabel names a step of a resume plan as the progress display does;
// a child run's step is prefixed with the child's part of its run id
// (call1/inner).
func planLabel(runID string, v durable.Verdict) string {
	l := v.Node
	if v.Action != durable.ActDepends {
		l = live.Label(record.Step{Node: v.Node, Visit: v.Visit, Loop: v.Loop})
	}
	if v.Run != "" {
		l = strings.TrimPrefix(v.Run, runID+".") + "/" + l
	}
	return l
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
			if err := f.check(cmd); err != nil {
				return err
			}
			if _, err := os.Stat(f.dir); err != nil && e.db == "" {
				// With --db the runs are in that database, wherever --dir is.
				return usagef("no runs here: %s does not exist (pass --dir)", f.dir)
			}
			if cmd.Flags().Changed("pin") && (len(pins) == 0 || slices.Contains(pins, "")) {
				return usagef("--pin names no node: give the ids of the nodes whose outputs the rerun reuses (--pin fetch,summarize)")
			}
			return executing(cmd.Context(), e, &f, func(ctx context.Context, r *runner.Runner, o runner.Options) (*runner.Result, error) {
				id, err := r.ResolveRunID(ctx, args[0])
				if err != nil {
					return nil, err
				}
				return r.Rerun(ctx, runner.RerunRequest{RunID: id, WorkflowFile: wfile, Pins: pins, Options: o})
			})
		},
	}
	f.register(cmd)
	addFileFlag(cmd, &wfile, "run this workflow file instead of the run's")
	cmd.Flags().StringSliceVar(&pins, "pin", nil, "nodes whose outputs are reused (comma-separated)")
	return cmd
}

func cancelCmd(e *env) *cobra.Command {
	var dir, output string
	var wait, letFinish bool
	cmd := &cobra.Command{
		Use:   "cancel RUN_ID",
		Short: "Stop a run that another process runs",
		Long: `Ask the owner of a running run to cancel it, through the database, so it
works from another terminal. No new node starts and running nodes are
stopped (--let-finish: they finish and are recorded); the steps that did not
start are skipped, the run ends cancelled and can be resumed. A run whose
process died is marked cancelled at once. A queued run (--db postgres://…)
is cancelled on the queue: its nodes no worker took are withdrawn at once
(a run no worker took ends cancelled here), and the workers running its
nodes stop them within a second. A cancel without --let-finish makes an
earlier one with it stop the running nodes. Waits until the run has ended
(--wait=false returns at once).`,
		Args: cobra.ExactArgs(1),
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
			req := runner.CancelRequest{RunID: id, LetFinish: letFinish}
			if wait {
				req.Wait = time.Minute
			}
			run, err := r.Cancel(cmd.Context(), req)
			if err != nil {
				return failure(err)
			}
			if output == "json" {
				writeJSON(e.stdout, cancelDoc{ExecutionID: run.ID, Status: string(run.Status)})
				return nil
			}
			switch run.Status {
			case record.RunCancelled:
				fmt.Fprintf(e.stdout, "run %s cancelled\n", run.ID)
			case record.RunRunning, record.RunWaiting:
				fmt.Fprintf(e.stdout, "run %s: cancel requested; its owner (%s) stops it\n", run.ID, run.Owner)
			default:
				fmt.Fprintf(e.stdout, "run %s ended %s\n", run.ID, run.Status)
			}
			return nil
		},
	}
	addDirFlag(cmd.Flags(), &dir)
	addOutputFlag(cmd, &output)
	cmd.Flags().BoolVar(&wait, "wait", true, "wait until the run has ended (up to a minute)")
	cmd.Flags().BoolVar(&letFinish, "let-finish", false, "let the running nodes finish (they are recorded) instead of stopping them")
	return cmd
}

// statusLine describes a run's status, with what to do for an interrupted
// one.
func statusLine(r *record.Run) string {
	switch r.Status {
	case runner.StatusInterrupted:
		return string(r.Status) + " (skein resume " + r.ID + ")"
	case record.RunWaiting:
		if r.WakeAt != nil {
			return string(r.Status) + " (until " + r.WakeAt.Local().Format("2006-01-02 15:04:05") + " or a signal)"
		}
		return string(r.Status) + " (for a signal: skein signal " + r.ID + " NODE)"
	}
	return string(r.Status)
}

func signalCmd(e *env) *cobra.Command {
	var f execFlags
	var data, dataFile string
	cmd := &cobra.Command{
		Use:   "signal RUN_ID NODE [--data JSON]",
		Short: "Send a signal to a wait node of a run (an approval), and continue the run",
		Long: `Send a signal to the wait node NODE (until: signal) of a run: --data (any
JSON value, default {}) becomes the node's output data ({{ NODE.data }}).
The signal is recorded first, then the run goes on: when no process runs it
(it waits, or its process died) it is resumed here, with its progress shown,
reusing what completed; when another process runs it (skein serve, a skein
run in another terminal) that process applies it.

Exit codes: those of skein run for the resumed run (0 completed, 4 waiting
again, …); 0 when its owner applies the signal; 2 when the run or node does
not exist or the node is not waiting for a signal.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			if cmd.Flags().Changed("data") && strings.TrimSpace(data) == "" {
				return usagef("--data is empty: give the signal's data as JSON (--data '{\"approved\": true}'), or leave --data out to send {}")
			}
			value, err := signalData(data, dataFile, e.stdin)
			if err != nil {
				return err
			}
			if _, err := os.Stat(f.dir); err != nil && e.db == "" {
				// With --db the runs are in that database, wherever --dir is.
				return usagef("no runs here: %s does not exist (pass --dir)", f.dir)
			}
			return executing(cmd.Context(), e, &f, func(ctx context.Context, r *runner.Runner, o runner.Options) (*runner.Result, error) {
				id, err := r.ResolveRunID(ctx, args[0])
				if err != nil {
					return nil, err
				}
				sig, err := r.Signal(ctx, runner.SignalRequest{RunID: id, Node: args[1], Data: value})
				if err != nil {
					return nil, err
				}
				// applied says who applies the signal when not this process.
				applied := func(by string) (*runner.Result, error) {
					if f.output == "json" {
						writeJSON(e.stdout, signalDoc{ExecutionID: sig.Run.ID, Node: args[1], Visit: sig.Signal.Visit,
							Seq: sig.Signal.Seq, SignaledAt: sig.Signal.CreatedAt, Status: string(sig.Run.Status), AppliedBy: by})
						return nil, nil
					}
					fmt.Fprintf(e.stdout, "signal recorded for %s (visit %d) of run %s; %s applies it\n",
						args[1], sig.Signal.Visit, sig.Run.ID, by)
					return nil, nil
				}
				if sig.Resume == "" {
					return applied(sig.Run.Owner.String())
				}
				w := e.stdout
				if f.output == "json" {
					w = e.stderr
				}
				fmt.Fprintf(w, "signal recorded for %s (visit %d) of run %s\n", args[1], sig.Signal.Visit, sig.Run.ID)
				res, err := r.Resume(ctx, runner.ResumeRequest{RunID: sig.Resume, Options: o})
				var owned *runner.OwnedError
				if errors.As(err, &owned) {
					// Another process (a server on this folder) resumed it first.
					return applied(owned.Owner.String())
				}
				var use *runner.UsageError
				if errors.As(err, &use) {
					// Refused before it took the run: the run waits
					// with the signal recorded.
					return nil, usagef("%s; the signal is kept: once that is fixed, %s continues the run with it", use.Msg, f.resumeCommand(sig.Run.ID))
				}
				return res, err
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&data, "data", "", "the signal's data: any JSON value (default {})")
	cmd.Flags().StringVar(&dataFile, "data-file", "", "read the signal's data from this JSON file (- for stdin)")
	return cmd
}

// signalData parses the data of skein signal.
func signalData(data, file string, stdin io.Reader) (any, error) {
	src := []byte(data)
	name := "--data"
	switch {
	case data != "" && file != "":
		return nil, usagef("give --data or --data-file, not both")
	case file == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, usagef("--data-file -: %v", err)
		}
		src, name = b, "--data-file -"
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, usagef("--data-file: %v", err)
		}
		src, name = b, "--data-file "+file
	}
	if len(strings.TrimSpace(string(src))) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(src)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, usagef("%s is not JSON: %v (quote it for the shell: --data '{\"approved\": true}')", name, err)
	}
	if dec.More() {
		return nil, usagef("%s holds more than one JSON value", name)
	}
	// As the API checks a signal's body: a number no run can hold (1e400)
	// is refused, not recorded as its text.
	if _, err := reqbody.Numbers(v, false); err != nil {
		return nil, usagef("%s: %v", name, err)
	}
	return v, nil // numbers are stored as JSON and come back as the engine's
}
