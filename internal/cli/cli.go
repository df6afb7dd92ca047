// Package cli builds the skein command line.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Exit codes (DESIGN §6).
const (
	ExitOK      = 0
	ExitFailed  = 1
	ExitInvalid = 2
	ExitChecks  = 3
	// ExitWaiting: the run waits for a signal (skein signal) and no
	// process holds it; it has not ended.
	ExitWaiting   = 4
	ExitCancelled = 130
)

// Version is set at build time with -ldflags "-X github.com/skeinhq/skein/internal/cli.Version=v1.2.3".
var Version = "dev"

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exit returns an error that makes Main exit with code. A nil err means the
// message was already printed.
func exit(code int, err error) error { return &exitError{code: code, err: err} }

func init() {
	// Every command's defaults are applied by the root's
	// PersistentPreRunE, even under a command that has one of its own.
	cobra.EnableTraverseRunHooks = true
}

// env is what a command sees of its process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// lookupEnv reads the environment; wd is the folder the project
	// configuration is looked for from (empty: the current folder).
	lookupEnv func(string) (string, bool)
	wd        string

	cfg    *projectConfig // read on first use (config)
	cfgErr error
	model  string // --model, when given
}

// Main runs the CLI with args and returns the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return mainEnv(ctx, &env{stdin: stdin, stdout: stdout, stderr: stderr, lookupEnv: os.LookupEnv}, args)
}

func mainEnv(ctx context.Context, e *env, args []string) int {
	stderr := e.stderr
	root := &cobra.Command{
		Use:           "skein",
		Short:         "Skein runs workflows of tools, commands and AI steps, durably.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			noteRenamed(cmd, e.stderr)
			return e.applyDefaults(cmd)
		},
	}
	root.Version = versionLine()
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetArgs(args)
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.AddCommand(
		versionCmd(e),
		validateCmd(e),
		runCmd(e),
		resumeCmd(e),
		rerunCmd(e),
		runsCmd(e),
		checkCmd(e),
		cancelCmd(e),
		signalCmd(e),
		mcpCmd(e),
		serveCmd(e),
		tokenCmd(e),
		manCmd(e),
	)
	e.setCompletions(root)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		var de *diagnosticsError
		switch {
		case errors.As(ee.err, &de):
			for _, d := range de.ds {
				fmt.Fprintln(stderr, d.String())
			}
		case ee.err != nil:
			fmt.Fprintln(stderr, "skein:", ee.err)
		}
		return ee.code
	}
	// Flag and argument errors from cobra are usage errors.
	fmt.Fprintln(stderr, "skein:", err)
	return ExitInvalid
}

func versionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(e.stdout, versionLine())
			return nil
		},
	}
}

// versionLine is "skein <version>", with the module version and the
// commit the binary was built from when the build recorded them.
func versionLine() string {
	v := Version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "skein " + v
	}
	if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	var commit, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if commit != "" {
		return fmt.Sprintf("skein %s (commit %s%s, %s)", v, commit, dirty, info.GoVersion)
	}
	return fmt.Sprintf("skein %s (%s)", v, info.GoVersion)
}

// groupCmd is the RunE of a command that only groups others: called with
// an unknown subcommand it is a usage error (exit 2), not help and exit 0.
func groupCmd(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		_ = cmd.Help()
		return usagef("%s needs a subcommand", cmd.CommandPath())
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	}
	return usagef("%s (see %s --help)", msg, cmd.CommandPath())
}
