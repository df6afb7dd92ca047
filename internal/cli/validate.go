package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

func validateCmd(e *env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check workflow files and print every problem",
		Long: `Check workflow files: their shape, node parameters, edges and handles, loops
and cycles, and every template reference. Each problem is printed as
file:line:col: error: message (node id). Exit 0 when every file is valid
(warnings allowed), 2 otherwise.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			if output != "text" && output != "json" {
				return exit(ExitInvalid, fmt.Errorf("--output must be text or json, not %q", output))
			}
			all := workflow.Diagnostics{}
			for _, f := range files {
				_, ds := workflow.Load(f, node.Default)
				all = append(all, ds...)
			}
			if output == "json" {
				enc := json.NewEncoder(e.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(all); err != nil {
					return exit(ExitFailed, err)
				}
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
	return cmd
}
