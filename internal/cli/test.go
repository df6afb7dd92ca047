package cli

import (
	"fmt"
	"io"
	"os"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/flowtest"
	"github.com/skeinhq/skein/node"
)

func testCmd(e *env) *cobra.Command {
	var output, junit, filter string
	var parallel int
	var updateCassettes bool
	cmd := &cobra.Command{
		Use:   "test [PATH...]",
		Short: "Run workflow tests (*.test.yaml) with mocks and assertions",
		Long: `Run the workflow tests under PATH (files, or folders searched for
*.test.yaml; default the current folder). A test file <name>.test.yaml sits
beside its workflow <name>.yaml and holds cases: inputs (or a trigger and
its payload), mocks that answer nodes without running them (an output, or
an error), and what to expect of the run's status, outputs, steps, verdict
and cost. The format is in docs/testing.md.

Cases run in parallel (--parallel at once), each file's runs in a
temporary folder removed afterwards. Mocked nodes never run: no process,
no request, no tokens. A case that names a cassette (a run recorded with
skein run --record) answers every model, MCP, HTTP and shell request from
it, offline; --update records those cassettes again, live. Every other node
runs as in skein run.

Prints one line per case, ✓ or ✗ with each expectation it missed (what was
compared, what was wanted, what the run gave), then the totals. --junit
writes a JUnit XML report; -o json prints the report as one object
(schema/test.schema.json).

Exit codes: 0 every case passed, 1 a case failed, 2 usage or an invalid
test file (its file and line are named).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return usagef("--output must be text or json, not %q", output)
			}
			if parallel < 1 {
				return usagef("--parallel must be at least 1")
			}
			var re *regexp.Regexp
			if filter != "" {
				var err error
				if re, err = regexp.Compile(filter); err != nil {
					return usagef("--run: %v", err)
				}
			}
			if len(args) == 0 {
				args = []string{"."}
			}
			paths, err := flowtest.Find(args)
			if err != nil {
				return usagef("%v", err)
			}
			if len(paths) == 0 {
				return usagef("no test files (*%s) under %v; write one beside a workflow (docs/testing.md)", flowtest.Suffix, args)
			}
			files := make([]*flowtest.File, 0, len(paths))
			for _, p := range paths {
				f, err := flowtest.Load(p, node.Default)
				if err != nil {
					return exit(ExitInvalid, err)
				}
				files = append(files, f)
			}
			rep := flowtest.Run(cmd.Context(), files, flowtest.Options{Parallel: parallel, Filter: re, LookupEnv: e.getenv, Update: updateCassettes})
			if filter != "" && len(rep.Cases) == 0 {
				return usagef("--run %q matches no case", filter)
			}
			if junit != "" {
				if err := writeJUnit(junit, rep); err != nil {
					return err
				}
			}
			if output == "json" {
				writeJSON(e.stdout, rep)
			} else {
				printReport(e.stdout, rep)
			}
			if rep.Failed > 0 {
				return exit(ExitFailed, nil)
			}
			return nil
		},
	}
	addOutputFlag(cmd, &output)
	fl := cmd.Flags()
	fl.StringVar(&junit, "junit", "", "write a JUnit XML report to this file")
	fl.StringVar(&filter, "run", "", "run only the cases whose name (or file/name) matches this regular expression")
	fl.IntVar(&parallel, "parallel", 8, "most cases running at once")
	fl.BoolVar(&updateCassettes, "update", false, "record the cassettes the cases name again: their runs send their requests live and rewrite the cassette files")
	return cmd
}

func writeJUnit(path string, rep *flowtest.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return usagef("--junit: %v", err)
	}
	if err := rep.WriteJUnit(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// printReport prints a line per case, the problems of those that failed
// under them, and the totals.
func printReport(w io.Writer, rep *flowtest.Report) {
	for _, c := range rep.Cases {
		mark := "✓"
		if !c.Passed {
			mark = "✗"
		}
		fmt.Fprintf(w, "%s %s › %s\n", mark, c.File, c.Name)
		if !c.Passed {
			for _, p := range c.Problems() {
				fmt.Fprintf(w, "    %s\n", p)
			}
		}
	}
	noun := "cases"
	if len(rep.Cases) == 1 {
		noun = "case"
	}
	fmt.Fprintf(w, "\n%d %s: %d passed, %d failed\n", len(rep.Cases), noun, rep.Passed, rep.Failed)
}
