package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/auth"
	"github.com/skeinhq/skein/internal/runner"
)

// Shell completion comes from cobra (`skein completion bash|zsh|fish|
// powershell`); these functions add what cobra cannot know: run ids,
// workflow files and the values of flags.

// completionRuns is how many of the newest runs are offered for a run id.
const completionRuns = 500

// runsAccepted are the statuses of the runs a command takes, by command
// path, for the commands that refuse some runs: resume refuses a completed
// run and one a live process runs, cancel one that ended, signal one that
// does not wait. Other commands take every run.
var runsAccepted = map[string][]string{
	"skein resume": {"failed", "cancelled", string(runner.StatusInterrupted), "waiting"},
	"skein cancel": {"pending", "running", "waiting", string(runner.StatusInterrupted)},
	"skein signal": {"waiting"},
}

// completeRunID completes a command's RUN_ID argument with the ids of the
// runs in its --dir folder that the command takes, newest first, each
// described by its workflow, status and start.
func (e *env) completeRunID(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return e.runIDs(cmd, toComplete, runsAccepted[cmd.CommandPath()])
}

// completeRunIDFlag completes a flag whose value is a run id.
func (e *env) completeRunIDFlag(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return e.runIDs(cmd, toComplete, nil)
}

// runIDs offers the runs whose id begins with prefix and, unless statuses
// is empty, whose status is one of them.
func (e *env) runIDs(cmd *cobra.Command, prefix string, statuses []string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if e.applyDefaults(cmd) != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	f := cmd.Flags().Lookup("dir")
	if f == nil {
		return nil, cobra.ShellCompDirectiveError
	}
	r, err := runner.OpenExisting(runner.Config{Dir: f.Value.String(), DB: e.db, LookupEnv: e.getenv})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer r.Close()
	runs, err := r.List(cmd.Context(), runner.ListRequest{Limit: completionRuns})
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []cobra.Completion
	for _, run := range runs {
		if strings.HasPrefix(run.ID, prefix) && (len(statuses) == 0 || slices.Contains(statuses, string(run.Status))) {
			out = append(out, cobra.CompletionWithDesc(run.ID, fmt.Sprintf("%s %s %s", run.Workflow, run.Status, run.StartedAt.Local().Format("2006-01-02 15:04"))))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

// workflowFiles completes workflow file arguments.
func workflowFiles(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return []cobra.Completion{"yaml", "yml", "json"}, cobra.ShellCompDirectiveFilterFileExt
}

// setCompletions adds cobra's completion command, and the completions of
// every command under root.
func (e *env) setCompletions(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			// An unknown shell is a usage error, as an unknown
			// subcommand is everywhere else.
			c.Args, c.RunE = cobra.ArbitraryArgs, groupCmd
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if strings.Contains(c.Use, "RUN_ID") {
			c.ValidArgsFunction = e.completeRunID
		}
		if strings.Contains(c.Use, "FILE") {
			c.ValidArgsFunction = workflowFiles
		}
		if c.Flags().Lookup("parent") != nil {
			_ = c.RegisterFlagCompletionFunc("parent", e.completeRunIDFlag)
		}
		if c.Flags().Lookup("scope") != nil {
			_ = c.RegisterFlagCompletionFunc("scope", cobra.FixedCompletions(auth.Names(), cobra.ShellCompDirectiveNoFileComp))
		}
		if c.Flags().Lookup("status") != nil {
			_ = c.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(runStatuses, cobra.ShellCompDirectiveNoFileComp))
		}
		for _, name := range []string{"dir"} {
			if c.Flags().Lookup(name) != nil {
				_ = c.MarkFlagDirname(name)
			}
		}
		if c.PersistentFlags().Lookup("dir") != nil {
			_ = c.MarkPersistentFlagDirname("dir")
		}
		for _, name := range []string{"input-file"} {
			if c.Flags().Lookup(name) != nil {
				_ = c.MarkFlagFilename(name, "json")
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
