package cli

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	mcppool "github.com/skeinhq/skein/internal/mcp"
	httpkind "github.com/skeinhq/skein/internal/nodes/http"
	llmkind "github.com/skeinhq/skein/internal/nodes/llm"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// execFlags are the flags shared by run, resume and rerun.
type execFlags struct {
	output      string
	concurrency int
	dir         string
	secretsFile string
	denyPrivate bool
}

func (f *execFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.output, "output", "o", "text", "text or json")
	fl.IntVar(&f.concurrency, "concurrency", 16, "most nodes running at once")
	fl.StringVar(&f.dir, "dir", ".skein", "folder for the database and run records")
	fl.StringVar(&f.secretsFile, "secrets-file", "", "dotenv file with secret values")
	fl.BoolVar(&f.denyPrivate, "deny-private-networks", false, "http nodes refuse loopback, private, link-local and metadata addresses")
}

func (f *execFlags) check() error {
	if f.output != "text" && f.output != "json" {
		return usagef("--output must be text or json, not %q", f.output)
	}
	if f.concurrency < 1 {
		return usagef("--concurrency must be at least 1")
	}
	return nil
}

func runCmd(e *env) *cobra.Command {
	var f execFlags
	var inputs []string
	var inputFile, trigger string
	var rf repairFlags
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a workflow and show its progress",
		Long: `Run a workflow on this machine. Progress is shown per node as it ends
(✓ success, ✗ failed, ⚠ warning, ↻ cached or pinned). The run is recorded in
.skein/skein.db and under .skein/runs/<workflow>/<time>_<id>/.

Exit codes: 0 completed, 1 failed, 2 invalid workflow or usage, 3 checks
failed, 130 cancelled. Ctrl-C cancels: running nodes finish, nothing new
starts; a second Ctrl-C stops them at once.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return err
			}
			if err := rf.check(); err != nil {
				return err
			}
			if rf.on {
				return runRepairing(cmd.Context(), e, &f, &rf, args[0], inputs, inputFile, trigger)
			}
			w, err := loadWorkflow(e, args[0])
			if err != nil {
				return err
			}
			in, err := resolveInputs(w, inputs, inputFile)
			if err != nil {
				return err
			}
			return execute(cmd.Context(), e, &f, job{w: w, inputs: in, trigger: trigger, runID: newRunID()})
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringArrayVarP(&inputs, "input", "i", nil, "input as name=value (repeatable)")
	fl.StringVar(&inputFile, "input-file", "", "JSON file with inputs")
	fl.StringVar(&trigger, "trigger", "", "trigger node to start from")
	rf.register(cmd)
	return cmd
}

func newRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// loadWorkflow reads and validates a workflow, printing its problems.
func loadWorkflow(e *env, file string) (*workflow.Workflow, error) {
	w, ds := workflow.Load(file, node.Default)
	if ds.HasErrors() {
		for _, d := range ds {
			fmt.Fprintln(e.stderr, d.String())
		}
		return nil, exit(ExitInvalid, nil)
	}
	return w, nil
}

// job is one execution: a fresh run, a resumed one, or a rerun.
type job struct {
	w       *workflow.Workflow
	inputs  map[string]any
	trigger string
	runID   string
	// resume continues an existing run: its folder and row are reused.
	resume *store.Run
	reuse  *durable.Reuser
	// parent is the run a rerun was made from.
	parent string
	// finished, when set, sees the result once the run has ended and
	// returns events to record with it (--auto-repair's business-error
	// warnings).
	finished func(res *engine.Result, now time.Time) []engine.TimedEvent
}

func openStore(dir string) (store.Store, error) {
	st, err := openSQLite(dir)
	if err != nil {
		return nil, exit(ExitFailed, err)
	}
	return st, nil
}

// execute runs a job to its end: it records the run in the store and the
// run folder, shows progress, and maps the outcome to an exit code.
func execute(ctx context.Context, e *env, f *execFlags, j job) error {
	w := j.w
	secrets, err := resolveSecrets(w, os.LookupEnv, f.secretsFile)
	if err != nil {
		return err
	}
	plan, err := engine.NewPlan(w, node.Default)
	if err != nil {
		return exit(ExitInvalid, fmt.Errorf("%s: %w", w.File, err))
	}
	if _, err := plan.StartNodes(j.trigger); err != nil {
		return usagef("%s: %v", w.File, err)
	}
	st, err := openStore(f.dir)
	if err != nil {
		return err
	}
	defer st.Close()

	clk := clock.Real{}
	started := clk.Now()
	abs, _ := filepath.Abs(w.File)
	meta := map[string]any{"file": abs}
	var rl *runlog.Writer
	run := j.resume
	if run != nil {
		if rl, err = runlog.Reopen(run.Dir, w.Name, run.ID, started, meta); err != nil {
			return exit(ExitFailed, err)
		}
		run.Status, run.File, run.FinishedAt, run.Error = string(engine.RunRunning), abs, nil, nil
		if err := st.UpdateRun(ctx, run); err != nil {
			return exit(ExitFailed, err)
		}
	} else {
		if rl, err = runlog.Open(f.dir, w.Name, j.runID, started, meta); err != nil {
			return exit(ExitFailed, err)
		}
		src, _ := workflow.ReadFile(w.File)
		sum := sha256.Sum256(src)
		ver, err := st.SaveWorkflow(ctx, w.Name, src, hex.EncodeToString(sum[:]))
		if err != nil {
			rl.Close()
			return exit(ExitFailed, err)
		}
		run = &store.Run{
			ID: j.runID, Workflow: w.Name, WorkflowVersion: ver.Version, File: abs, Dir: rl.Dir(),
			ParentID: j.parent, Trigger: j.trigger, Status: string(engine.RunRunning), Inputs: j.inputs, StartedAt: started,
		}
		if err := st.CreateRun(ctx, run); err != nil {
			rl.Close()
			return exit(ExitFailed, err)
		}
	}
	defer rl.Close()

	committer := durable.NewCommitter(st)
	defer committer.Close()
	rec := durable.NewRecorder(committer, run.ID, rl.Dir())
	recs := tee{rl}
	var prog *progress
	if f.output == "text" {
		prog = &progress{w: e.stdout, color: isTerminal(e.stdout), later: rec.AfterCommit}
		prog.header(run.ID, w.Name, j.resume != nil)
		recs = append(recs, prog) // before rec: its lines wait for rec's commit
	}
	recs = append(recs, rec)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	hard := make(chan struct{})
	stopSignals := onSignals(e, cancel, hard)
	defer stopSignals()

	// MCP servers start on first use and stop when the run ends.
	pool := mcppool.NewPool(w.MCPServers, mcppool.Scope(j.inputs, secrets))
	defer pool.Close()
	models := llmkind.NewModels(w, os.LookupEnv)
	models.Render = secretRenderer(secrets)
	opts := engine.Options{
		RunID: run.ID, Inputs: j.inputs, Trigger: j.trigger, Secrets: secrets, Recorder: recs,
		Concurrency: f.concurrency, Hard: hard,
		ArtifactDir: func(id string) string {
			d, _ := rl.ArtifactDir(id)
			return d
		},
		Services: map[string]any{
			httpkind.ServicePolicy: httpkind.Policy{DenyPrivate: f.denyPrivate},
			mcppool.Service:        pool,
			llmkind.ServiceModels:  models,
		},
		ChildServices: func(cw *workflow.Workflow, inputs map[string]any) (map[string]any, func()) {
			// A child uses the servers and models its own file declares.
			cpool := mcppool.NewPool(cw.MCPServers, mcppool.Scope(inputs, secrets))
			cmodels := llmkind.NewModels(cw, os.LookupEnv)
			cmodels.Render = secretRenderer(secrets)
			return map[string]any{
				httpkind.ServicePolicy: httpkind.Policy{DenyPrivate: f.denyPrivate},
				mcppool.Service:        cpool,
				llmkind.ServiceModels:  cmodels,
			}, func() { _ = cpool.Close() }
		},
		Child: func(cw *workflow.Workflow, id string) (engine.Recorder, func(*engine.Result) error, error) {
			crl, err := runlog.Open(f.dir, cw.Name, id, clk.Now(), map[string]any{"file": cw.File, "parent": run.ID})
			if err != nil {
				return nil, nil, err
			}
			return crl, crl.Finish, nil
		},
	}
	if j.reuse != nil {
		opts.Reuse = j.reuse.Reuse
	}
	opts.Evidence = evidenceHook(w, pool)
	res, runErr := engine.NewDriver(node.Default, clk, 0).Execute(runCtx, plan, opts)
	if res == nil {
		return exit(ExitFailed, runErr)
	}
	if j.finished != nil {
		for _, ev := range j.finished(res, clk.Now()) {
			_ = rl.Event(ev)
			_ = rec.Event(ev)
			if prog != nil {
				_ = prog.Event(ev)
			}
		}
	}
	verdict, verr := verify(context.WithoutCancel(ctx), w, res, rl.Dir())
	if verr != nil && runErr == nil {
		runErr = verr
	}
	if verdict != nil {
		for _, ev := range verdictEvents(verdict, clk.Now()) {
			_ = rl.Event(ev)
			_ = rec.Event(ev)
		}
	}
	if err := rec.Sync(); err != nil && runErr == nil {
		runErr = err
	}
	if err := rl.Finish(res); err != nil && runErr == nil {
		runErr = err
	}
	fin := res.FinishedAt
	run.Status, run.Outputs, run.Error, run.FinishedAt = string(res.Status), res.Outputs, res.Error, &fin
	run.Tokens, run.CostUSD = res.Tokens, res.CostUSD
	if err := st.UpdateRun(context.WithoutCancel(ctx), run); err != nil && runErr == nil {
		runErr = err
	}
	if f.output == "json" {
		js := jsonResult(res)
		if verdict != nil {
			js["verdict"] = verdict
		}
		writeJSON(e.stdout, js)
	} else {
		prog.summary(res, rl.Dir())
		if verdict != nil {
			fmt.Fprintln(e.stdout, check.Bar(verdict, prog.color))
		}
	}
	if runErr != nil {
		return exit(ExitFailed, runErr)
	}
	switch res.Status {
	case engine.RunCompleted:
		if verdict != nil && verdict.Status == check.StatusFailed {
			return exit(ExitChecks, nil)
		}
		return nil
	case engine.RunCancelled:
		return exit(ExitCancelled, nil)
	}
	return exit(ExitFailed, nil)
}

// onSignals turns the first Ctrl-C (or SIGTERM) into a graceful cancel and
// the second into a hard one.
func onSignals(e *env, cancel context.CancelFunc, hard chan struct{}) (stop func()) {
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
					fmt.Fprintln(e.stderr, "\ncancelling: waiting for running nodes (Ctrl-C again to stop them now)")
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

// jsonResult is the one object `skein run --output json` prints.
func jsonResult(res *engine.Result) map[string]any {
	steps := make([]map[string]any, 0, len(res.Steps))
	for _, s := range res.Steps {
		steps = append(steps, jsonStep(s.Node, string(s.Status), s.Visit, s.Iteration, s.Attempts, s.Output, s.Error,
			s.Cached, s.Pinned, s.StartedAt, s.FinishedAt, s.DurationMS, s.Tokens, s.CostUSD))
	}
	outputs := res.Outputs
	if outputs == nil {
		outputs = map[string]any{}
	}
	return map[string]any{
		"execution_id": res.RunID, "workflow": res.Workflow, "status": res.Status,
		"outputs": outputs, "error": res.Error, "steps": steps, "verdict": nil,
		"duration_ms": res.DurationMS, "tokens": res.Tokens, "cost_usd": res.CostUSD,
	}
}

func jsonStep(nodeID, status string, visit, iteration, attempts int, output map[string]any, err *node.Error,
	cached, pinned bool, started, finished *time.Time, durationMS int64, tokens int, cost float64) map[string]any {
	return map[string]any{
		"node": nodeID, "status": status, "visit": visit, "iteration": iteration,
		"attempts": attempts, "output": output, "error": err, "cached": cached,
		"pinned": pinned, "started_at": started, "finished_at": finished,
		"duration_ms": durationMS, "tokens": tokens, "cost_usd": cost,
	}
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
