package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/node"
)

func lockCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Manage a workflow's pinned MCP tools (its .skein.lock file)",
		Long: `A workflow's lock file, <name>.skein.lock beside it, pins the tools of its MCP
servers: a hash of each tool's description and input schema, per server. The
first run that uses a server writes its pins; later runs check the tools a
node uses against them, and a tool whose description or input schema
changed, or that the server added, fails the node (mcp_tool_changed) until
you accept it with skein lock update. Commit the lock file with the workflow.`,
		Args: cobra.ArbitraryArgs,
		RunE: groupCmd,
	}
	cmd.AddCommand(lockUpdateCmd(e))
	return cmd
}

func lockUpdateCmd(e *env) *cobra.Command {
	var secretsFile, output string
	var inputs []string
	cmd := &cobra.Command{
		Use:   "update WORKFLOW",
		Short: "Connect to the workflow's MCP servers and pin their tools as they are now",
		Long: `Start or connect to every server in the workflow's mcp_servers, list its
tools, and write the lock file (<name>.skein.lock beside the workflow) with
them, replacing what it held; servers the workflow no longer declares are
dropped (a workflow with no mcp_servers has no lock file). Prints what
changed per server. A server that cannot be reached is
an error, and the lock file is left as it was.

Templates in the servers' definitions get the workflow's input defaults,
-i values, and secrets as skein run reads them. A subworkflow has a lock
of its own: update it with its own file.

-o json prints {file, lock, servers: [{name, tools, changes: [{tool, what}]}],
dropped} (schema/lock-update.schema.json).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := e.config(); err != nil {
				return usagef("%v", err)
			}
			given := map[string]any{}
			for _, p := range inputs {
				k, v, ok := strings.Cut(p, "=")
				if !ok {
					return usagef("-i %q: write name=value", p)
				}
				given[k] = v
			}
			res, err := runner.UpdateLock(cmd.Context(), node.Default, runner.LockRequest{
				File: args[0], LookupEnv: e.getenv, SecretsFile: secretsFile, Inputs: given,
			})
			if err != nil {
				return failure(err)
			}
			if output == "json" {
				writeJSON(e.stdout, res)
				return nil
			}
			for _, s := range res.Servers {
				fmt.Fprintf(e.stdout, "%s: %d %s pinned", s.Name, s.Tools, plural(s.Tools, "tool", "tools"))
				if len(s.Changes) == 0 {
					fmt.Fprintln(e.stdout, ", unchanged")
					continue
				}
				fmt.Fprintln(e.stdout)
				for _, c := range s.Changes {
					fmt.Fprintf(e.stdout, "  %s: %s\n", c.Tool, strings.ReplaceAll(strings.Join(c.What, ", "), "_", " "))
				}
			}
			for _, name := range res.Dropped {
				fmt.Fprintf(e.stdout, "%s: dropped (no longer in mcp_servers)\n", name)
			}
			if res.Lock == "" {
				fmt.Fprintf(e.stdout, "%s declares no mcp_servers: nothing to pin, no lock file\n", args[0])
				return nil
			}
			fmt.Fprintf(e.stdout, "wrote %s\n", res.Lock)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&inputs, "input", "i", nil, "an input for templates in the servers' definitions, as name=value (repeatable)")
	fl.StringVar(&secretsFile, "secrets-file", "", "dotenv file with secret values, as skein run takes")
	addOutputFlag(cmd, &output)
	return cmd
}

// plural picks the word for n things.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
