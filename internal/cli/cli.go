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
	db     string // --db, else $SKEIN_DB: a database instead of <dir>/skein.db
	blobs  string // --blobs, else $SKEIN_BLOBS: the shared blob folder of queued runs
}

// Main runs the CLI with args and returns the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return mainEnv(ctx, &env{stdin: stdin, stdout: stdout, stderr: stderr, lookupEnv: os.LookupEnv}, args)
}

// rootCmd is the skein command, its commands under it, for e.
func rootCmd(e *env) *cobra.Command {
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
	// Before the commands: cobra's completion command takes the output
	// it writes to when it is added.
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.AddCommand(
		versionCmd(e),
		validateCmd(e),
		runCmd(e),
		resumeCmd(e),
		rerunCmd(e),
		replayCmd(e),
		runsCmd(e),
		checkCmd(e),
		testCmd(e),
		cancelCmd(e),
		signalCmd(e),
		mcpCmd(e),
		lockCmd(e),
		serveCmd(e),
		workerCmd(e),
		tokenCmd(e),
		migrateCmd(e),
	)
	e.setCompletions(root)
	setUsageErrors(root)
	return root
}

// Commands returns the skein command with every command under it, as Main
// runs them, for programs that describe the commands (the man pages of
// cmd/skein-man); running it is Main's work.
func Commands() *cobra.Command {
	return rootCmd(&env{stdin: os.Stdin, stdout: io.Discard, stderr: io.Discard, lookupEnv: os.LookupEnv})
}

func mainEnv(ctx context.Context, e *env, args []string) int {
	stderr := e.stderr
	stdout := &countingWriter{w: e.stdout}
	e.stdout = stdout
	root := rootCmd(e)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	code, cause := ExitInvalid, err // flag and argument errors from cobra are usage errors
	var ee *exitError
	if errors.As(err, &ee) {
		code, cause = ee.code, ee.err
	} else {
		cause = &usageError{msg: err.Error()}
	}
	var de *diagnosticsError
	switch {
	case errors.As(cause, &de):
		for _, d := range de.ds {
			fmt.Fprintln(stderr, d.String())
		}
	case cause != nil:
		fmt.Fprintln(stderr, "skein:", cause)
		var ue *usageError
		if errors.As(cause, &ue) && ue.cmd != nil {
			printUsageHint(stderr, ue.cmd)
		}
	}
	// With -o json a command that failed before printing its result
	// prints the error as one JSON object, so stdout is never empty.
	if cause != nil && stdout.n == 0 && wantsJSON(cmd, args) {
		_, doc := errorOf(cause)
		writeJSON(stdout, errorDoc{Error: doc})
	}
	return code
}

func versionCmd(e *env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output == "json" {
				writeJSON(e.stdout, buildVersion())
				return nil
			}
			fmt.Fprintln(e.stdout, versionLine())
			return nil
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// versionDoc is what skein version -o json prints.
type versionDoc struct {
	Version  string `json:"version" jsonschema:"the module version, or dev"`
	Commit   string `json:"commit,omitempty" jsonschema:"the commit the binary was built from, when the build recorded it"`
	Modified bool   `json:"modified,omitempty" jsonschema:"the build had changes not committed"`
	Go       string `json:"go" jsonschema:"the Go version that built it"`
}

// buildVersion is the module version and the commit the binary was built
// from, when the build recorded them.
func buildVersion() versionDoc {
	d := versionDoc{Version: Version}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return d
	}
	d.Go = info.GoVersion
	if d.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		d.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			d.Commit = s.Value
		case "vcs.modified":
			d.Modified = s.Value == "true"
		}
	}
	return d
}

// versionLine is "skein <version>", with the module version and the
// commit the binary was built from when the build recorded them.
func versionLine() string {
	d := buildVersion()
	if d.Go == "" {
		return "skein " + d.Version
	}
	commit, dirty := d.Commit, ""
	if d.Modified {
		dirty = "+dirty"
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if commit != "" {
		return fmt.Sprintf("skein %s (commit %s%s, %s)", d.Version, commit, dirty, d.Go)
	}
	return fmt.Sprintf("skein %s (%s)", d.Version, d.Go)
}

// groupCmd is the RunE of a command that only groups others: called with
// an unknown subcommand it is a usage error (exit 2), not help and exit 0.
func groupCmd(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		// The help is the answer to a usage error: on stderr, so that
		// stdout holds only the error object under -o json.
		cmd.SetOut(cmd.ErrOrStderr())
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
