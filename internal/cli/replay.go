package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/internal/runner"
)

// replayDoc is what skein replay -o json prints.
type replayDoc struct {
	ReplayOf string         `json:"replay_of" jsonschema:"the recorded run that was replayed"`
	Run      *runner.RunDoc `json:"run"`
	// Diverged and Mismatches are never null.
	Diverged   []runner.Divergence       `json:"diverged" jsonschema:"steps whose status or output differ from the recorded run's, by node and visit"`
	Mismatches []*cassette.MismatchError `json:"mismatches" jsonschema:"requests the cassette had no answer for, each with how it differs from the one recorded there"`
	Added      int                       `json:"added" jsonschema:"interactions sent live and appended to the cassette (--allow-new)"`
}

func replaySchema() (*jsonschema.Schema, error) {
	s, err := jsonschema.For[replayDoc](nil)
	if err != nil {
		return nil, err
	}
	s.Properties["run"] = &jsonschema.Schema{Ref: "run.schema.json", Description: "the replay's own run, as skein run -o json prints it"}
	return s, nil
}

func replayCmd(e *env) *cobra.Command {
	var f execFlags
	var wfile string
	var allowNew bool
	cmd := &cobra.Command{
		Use:   "replay RUN_ID",
		Short: "Re-execute a recorded run from its cassette, offline",
		Long: `Re-execute a run recorded with skein run --record (or record: true in its
workflow) as a new run that answers every interaction with the outside world
— model calls, MCP tool calls, HTTP requests, shell commands — from the
run's cassette: nothing is sent, no process is started, no token is spent.

Each request is matched by node, visit, attempt and a hash of the request
(secrets masked). With --file, an edited workflow is replayed: a request
that changed fails its node with the difference from the recorded request;
--allow-new sends such requests live instead and appends their answers to
the cassette. The result lists the steps whose status or output differ from
the recorded run's (diverged).

Exit codes as skein run: 0 completed, 1 failed (a request the cassette has
no answer for fails its node), 2 usage or no cassette.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			if _, err := os.Stat(f.dir); err != nil && e.db == "" {
				return usagef("no runs here: %s does not exist (pass --dir)", f.dir)
			}
			var rr *runner.ReplayResult
			var rn *runner.Runner
			err := executingRendered(cmd.Context(), e, &f, func(ctx context.Context, r *runner.Runner, o runner.Options) (*runner.Result, error) {
				id, err := r.ResolveRunID(ctx, args[0])
				if err != nil {
					return nil, err
				}
				rr, err = r.Replay(ctx, runner.ReplayRequest{RunID: id, WorkflowFile: wfile, AllowNew: allowNew, Options: o})
				if err != nil {
					return nil, err
				}
				rn = r
				return rr.Result, nil
			}, func(ctx context.Context, color bool) {
				if f.output == "json" {
					doc := replayDoc{ReplayOf: rr.Of, Run: rn.Doc(ctx, rr.Result), Diverged: rr.Diverged, Mismatches: rr.Mismatches, Added: rr.Added}
					if doc.Mismatches == nil {
						doc.Mismatches = []*cassette.MismatchError{}
					}
					writeJSON(e.stdout, doc)
					return
				}
				summary(e.stdout, color, rr.Result, noResume)
				fmt.Fprintf(e.stdout, "replay of run %s from its cassette", rr.Of)
				if rr.Added > 0 {
					fmt.Fprintf(e.stdout, " (%d new interactions sent live and appended)", rr.Added)
				}
				fmt.Fprintln(e.stdout)
				for _, m := range rr.Mismatches {
					if allowNew {
						fmt.Fprintf(e.stdout, "↗ sent live, the cassette had no answer: a %s request of %s\n", m.Kind, m.Who())
						continue
					}
					// The diff is in the node's error above.
					fmt.Fprintf(e.stdout, "✗ the cassette has no answer for a %s request of %s\n", m.Kind, m.Who())
				}
				if len(rr.Diverged) == 0 {
					fmt.Fprintln(e.stdout, "no step diverged from the recorded run")
					return
				}
				fmt.Fprintf(e.stdout, "%d step(s) diverged from the recorded run:\n", len(rr.Diverged))
				for _, d := range rr.Diverged {
					fmt.Fprintf(e.stdout, "  %s (visit %d): %s\n", d.Node, d.Visit, divergence(d))
				}
			})
			return err
		},
	}
	f.register(cmd)
	addFileFlag(cmd, &wfile, "replay with this (edited) workflow file")
	cmd.Flags().BoolVar(&allowNew, "allow-new", false, "send a request the cassette has no answer for live, and append its answer to the cassette")
	return cmd
}

// divergence says how a step diverged, in words.
func divergence(d runner.Divergence) string {
	switch d.What {
	case "status":
		return fmt.Sprintf("%v, recorded %v", d.Replayed, d.Recorded)
	case "output":
		return "another output"
	case "only_recorded":
		return "did not run (recorded " + fmt.Sprint(d.Recorded) + ")"
	case "only_replayed":
		return "ran only in the replay (" + fmt.Sprint(d.Replayed) + ")"
	}
	return d.What
}
