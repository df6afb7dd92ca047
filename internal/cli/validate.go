package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/preflight"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

func validateCmd(e *env) *cobra.Command {
	var output, inputFile, secretsFile, model string
	var inputs []string
	var strict bool
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check workflow files and print every problem",
		Long: `Check workflow files: their shape, node parameters, edges and handles, loops
and cycles, and every template reference. Each problem is printed as
file:line:col: severity: message (node id). The problems of a node that
never runs (disabled, or reached by no trigger) are warnings that say why
they are ignored: a half-built branch does not make the file invalid.

Then what would stop a run on this machine, all at once, as warnings: models
that are not configured (an llm or agent node with no model in llm: nor
SKEIN_LLM_MODEL, --model or model: in .skein.yaml; an unknown provider; no
API key), secrets that are not set, required inputs. With -i or
--input-file the inputs are checked as skein run checks them, and their
problems are errors; --strict makes every warning of this machine an error.

Exit 0 when every file is valid (warnings allowed), 2 otherwise. -o json
prints {"valid", "diagnostics"} (schema/validate.schema.json).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			if _, err := e.config(); err != nil {
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
			for _, f := range files {
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
					n := len(files)
					noun := "workflow"
					if n > 1 {
						noun = "workflows"
					}
					fmt.Fprintf(e.stdout, "%d %s valid\n", n, noun)
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
