package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/flowtest"
	"github.com/skeinhq/skein/internal/preflight"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

func validateCmd(e *env) *cobra.Command {
	var output, inputFile, secretsFile, model string
	var inputs []string
	var strict bool
	cmd := &cobra.Command{
		Use:   "validate FILE|FOLDER|GLOB...",
		Short: "Check workflow files and print every problem",
		Long: `Check workflow files: their shape, node parameters, edges and handles, loops
and cycles, and every template reference. Each problem is printed as
file:line:col: severity: message (node id). The problems of a node that
never runs (disabled, or reached by no trigger) are warnings that say why
they are ignored: a half-built branch does not make the file invalid.

A folder stands for every *.yaml and *.yml file in it (not its sub-folders),
and a quoted glob ('flows/*.yaml') for the files it matches. A test file
(*.test.yaml, what skein test runs) is checked as a test file: its keys,
and the nodes, inputs and triggers it names against its workflow.

Then what would stop a run on this machine, all at once, as warnings: models
that are not configured (an llm or agent node with no model in llm: nor
SKEIN_LLM_MODEL, --model or model: in .skein.yaml; an unknown provider; no
API key), secrets that are not set, required inputs. With -i or
--input-file the inputs are checked as skein run checks them, and their
problems are errors; --strict makes every warning of this machine an error.

Exit 0 when every file is valid (warnings allowed), 2 otherwise. -o json
prints {"valid", "diagnostics"} (schema/validate.schema.json).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := e.config(); err != nil {
				return usagef("%v", err)
			}
			files, err := validateFiles(args)
			if err != nil {
				return usagef("%v", err)
			}
			req := preflight.Request{LookupEnv: e.getenv, SecretsFile: secretsFile, Strict: strict}
			if len(inputs) > 0 || inputFile != "" {
				req.Inputs = func(w *workflow.Workflow) (map[string]any, error) {
					raw, _, err := inputValues(w, inputs, inputFile) // what does not convert is a diagnostic
					return raw, err
				}
			}
			all := workflow.Diagnostics{}
			workflows, tests := 0, 0
			for _, f := range files {
				if strings.HasSuffix(f, flowtest.Suffix) {
					tests++
					all = append(all, validateTestFile(f)...)
					continue
				}
				workflows++
				_, ds, err := preflight.Validate(f, node.Default, req)
				if err != nil {
					return err
				}
				all = append(all, ds...)
			}
			if output == "json" {
				writeJSON(e.stdout, validateDoc{Valid: !all.HasErrors(), Diagnostics: all})
			} else {
				for _, d := range all {
					fmt.Fprintln(e.stdout, d.String())
				}
				if !all.HasErrors() {
					fmt.Fprintln(e.stdout, validCount(workflows, tests))
				}
			}
			if all.HasErrors() {
				return exit(ExitInvalid, nil)
			}
			return nil
		},
	}
	addOutputFlag(cmd, &output)
	fl := cmd.Flags()
	addModelFlag(fl, &model) // env.getenv reads it
	fl.StringArrayVarP(&inputs, "input", "i", nil, "check this input as name=value, as skein run would take it (repeatable)")
	fl.StringVar(&inputFile, "input-file", "", "check the inputs of this JSON file")
	fl.StringVar(&secretsFile, "secrets-file", "", "dotenv file with secret values, as skein run would be given")
	fl.BoolVar(&strict, "strict", false, "what would stop a run here (models, secrets, required inputs) is an error, not a warning")
	return cmd
}

// validateFiles expands validate's arguments: a folder is its *.yaml and
// *.yml files (not those of its sub-folders, nor hidden ones), a glob the
// files it matches, anything else a file. Each file comes once, in the
// order the arguments give them (a folder's and a glob's sorted).
func validateFiles(args []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(f string) {
		if !seen[filepath.Clean(f)] {
			seen[filepath.Clean(f)] = true
			out = append(out, f)
		}
	}
	for _, arg := range args {
		fi, statErr := os.Stat(arg)
		switch {
		case statErr == nil && fi.IsDir():
			entries, err := os.ReadDir(arg)
			if err != nil {
				return nil, err
			}
			n := 0
			for _, d := range entries {
				name := d.Name()
				ext := filepath.Ext(name)
				if d.IsDir() || strings.HasPrefix(name, ".") || (ext != ".yaml" && ext != ".yml") {
					continue
				}
				add(filepath.Join(arg, name))
				n++
			}
			if n == 0 {
				return nil, fmt.Errorf("%s is a folder without workflow files (*.yaml, *.yml)", arg)
			}
		case statErr != nil && strings.ContainsAny(arg, "*?["):
			matches, err := filepath.Glob(arg)
			if err != nil {
				return nil, fmt.Errorf("%s is not a valid pattern: %w", arg, err)
			}
			// As a shell expands it: a name that begins with a dot
			// (.skein.yaml) is matched only by a pattern that does.
			if !strings.HasPrefix(filepath.Base(arg), ".") {
				matches = slices.DeleteFunc(matches, func(m string) bool { return strings.HasPrefix(filepath.Base(m), ".") })
			}
			if len(matches) == 0 {
				return nil, fmt.Errorf("no file matches %s", arg)
			}
			slices.Sort(matches)
			for _, m := range matches {
				if fi, err := os.Stat(m); err == nil && !fi.IsDir() {
					add(m)
				}
			}
		default:
			add(arg) // a file, or a path whose problem validation names
		}
	}
	return out, nil
}

// validateTestFile checks a test file as skein test loads it; its one
// problem, if any, is an error of the file.
func validateTestFile(path string) workflow.Diagnostics {
	_, err := flowtest.Load(path, node.Default)
	if err == nil {
		return nil
	}
	d := workflow.Diagnostic{File: path, Severity: workflow.Error, Message: err.Error()}
	if fe, ok := errors.AsType[*flowtest.Error](err); ok {
		d.File, d.Line, d.Message = fe.File, fe.Line, fe.Msg
		if d.Line > 0 {
			d.Col = 1 // the test file names a line: its start
		}
	}
	return workflow.Diagnostics{d}
}

// validCount says how many files were found valid: "1 workflow valid",
// "19 workflows and 19 test files valid".
func validCount(workflows, tests int) string {
	plural := func(n int, noun string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, noun)
		}
		return fmt.Sprintf("%d %ss", n, noun)
	}
	switch {
	case tests == 0:
		return plural(workflows, "workflow") + " valid"
	case workflows == 0:
		return plural(tests, "test file") + " valid"
	}
	return plural(workflows, "workflow") + " and " + plural(tests, "test file") + " valid"
}
