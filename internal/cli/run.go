package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/engine"
	httpkind "github.com/skeinhq/skein/internal/nodes/http"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

type runFlags struct {
	inputs      []string
	inputFile   string
	output      string
	concurrency int
	trigger     string
	dir         string
	secretsFile string
	denyPrivate bool
}

func runCmd(e *env) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a workflow and show its progress",
		Long: `Run a workflow on this machine. Progress is shown per node as it ends
(✓ success, ✗ failed, ⚠ warning, ↻ cached). The run is recorded under
.skein/runs/<workflow>/<time>_<id>/.

Exit codes: 0 completed, 1 failed, 2 invalid workflow or usage, 3 checks
failed, 130 cancelled. Ctrl-C cancels: running nodes finish, nothing new
starts; a second Ctrl-C stops them at once.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWorkflow(cmd.Context(), e, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.inputs, "input", "i", nil, "input as name=value (repeatable)")
	fl.StringVar(&f.inputFile, "input-file", "", "JSON file with inputs")
	fl.StringVarP(&f.output, "output", "o", "text", "text or json")
	fl.IntVar(&f.concurrency, "concurrency", 16, "most nodes running at once")
	fl.StringVar(&f.trigger, "trigger", "", "trigger node to start from")
	fl.StringVar(&f.dir, "dir", ".skein", "folder for run records")
	fl.StringVar(&f.secretsFile, "secrets-file", "", "dotenv file with secret values")
	fl.BoolVar(&f.denyPrivate, "deny-private-networks", false, "http nodes refuse loopback, private, link-local and metadata addresses")
	return cmd
}

func newRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func runWorkflow(ctx context.Context, e *env, file string, f runFlags) error {
	if f.output != "text" && f.output != "json" {
		return usagef("--output must be text or json, not %q", f.output)
	}
	if f.concurrency < 1 {
		return usagef("--concurrency must be at least 1")
	}
	w, ds := workflow.Load(file, node.Default)
	if ds.HasErrors() {
		for _, d := range ds {
			fmt.Fprintln(e.stderr, d.String())
		}
		return exit(ExitInvalid, nil)
	}
	inputs, err := resolveInputs(w, f.inputs, f.inputFile)
	if err != nil {
		return err
	}
	secrets, err := resolveSecrets(w, os.LookupEnv, f.secretsFile)
	if err != nil {
		return err
	}
	plan, err := engine.NewPlan(w, node.Default)
	if err != nil {
		return exit(ExitInvalid, fmt.Errorf("%s: %w", file, err))
	}
	if _, err := plan.StartNodes(f.trigger); err != nil {
		return usagef("%s: %v", file, err)
	}
	clk := clock.Real{}
	runID := newRunID()
	started := clk.Now()
	rl, err := runlog.Open(f.dir, w.Name, runID, started, map[string]any{"file": file})
	if err != nil {
		return exit(ExitFailed, err)
	}
	defer rl.Close()

	recs := tee{rl}
	var prog *progress
	if f.output == "text" {
		prog = &progress{w: e.stdout, color: isTerminal(e.stdout)}
		recs = append(recs, prog)
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	hard := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
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
			case <-runCtx.Done():
				if ctx.Err() == nil {
					return
				}
			}
		}
	}()

	drv := engine.NewDriver(node.Default, clk, 0)
	res, runErr := drv.Execute(runCtx, plan, engine.Options{
		RunID:       runID,
		Inputs:      inputs,
		Trigger:     f.trigger,
		Secrets:     secrets,
		Recorder:    recs,
		Concurrency: f.concurrency,
		ArtifactDir: func(id string) string {
			d, _ := rl.ArtifactDir(id)
			return d
		},
		Hard: hard,
		Services: map[string]any{
			httpkind.ServicePolicy: httpkind.Policy{DenyPrivate: f.denyPrivate},
		},
		Child: func(cw *workflow.Workflow, id string) (engine.Recorder, func(*engine.Result) error, error) {
			crl, err := runlog.Open(f.dir, cw.Name, id, clk.Now(), map[string]any{"file": cw.File, "parent": runID})
			if err != nil {
				return nil, nil, err
			}
			return crl, crl.Finish, nil
		},
	})
	if res == nil {
		return exit(ExitFailed, runErr)
	}
	if err := rl.Finish(res); err != nil && runErr == nil {
		runErr = err
	}
	if f.output == "json" {
		writeJSON(e.stdout, jsonResult(res))
	} else {
		prog.summary(res, rl.Dir())
	}
	if runErr != nil {
		return exit(ExitFailed, runErr)
	}
	switch res.Status {
	case engine.RunCompleted:
		return nil
	case engine.RunCancelled:
		return exit(ExitCancelled, nil)
	}
	return exit(ExitFailed, nil)
}

// jsonResult is the one object `skein run --output json` prints.
func jsonResult(res *engine.Result) map[string]any {
	steps := make([]map[string]any, 0, len(res.Steps))
	for _, s := range res.Steps {
		steps = append(steps, map[string]any{
			"node": s.Node, "status": s.Status, "visit": s.Visit, "iteration": s.Iteration,
			"attempts": s.Attempts, "output": s.Output, "error": s.Error, "cached": s.Cached,
			"pinned": s.Pinned, "started_at": s.StartedAt, "finished_at": s.FinishedAt,
			"duration_ms": s.DurationMS, "tokens": s.Tokens, "cost_usd": s.CostUSD,
		})
	}
	outputs := res.Outputs
	if outputs == nil {
		outputs = map[string]any{}
	}
	return map[string]any{
		"execution_id": res.RunID, "workflow": res.Workflow, "status": res.Status,
		"outputs": outputs, "error": res.Error, "steps": steps, "verdict": nil,
		"duration_ms": res.DurationMS,
	}
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

var _ = errors.New
