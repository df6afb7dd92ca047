// Package cli builds the skein command line.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes (DESIGN §6).
const (
	ExitOK        = 0
	ExitFailed    = 1
	ExitInvalid   = 2
	ExitChecks    = 3
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

type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// Main runs the CLI with args and returns the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:           "skein",
		Short:         "Skein runs workflows of tools, commands and AI steps, durably.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		versionCmd(e),
		validateCmd(e),
		runCmd(e),
		resumeCmd(e),
		rerunCmd(e),
		runsCmd(e),
		checkCmd(e),
		cancelCmd(e),
		mcpCmd(e),
	)
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
			fmt.Fprintf(e.stdout, "skein %s\n", Version)
			return nil
		},
	}
}
