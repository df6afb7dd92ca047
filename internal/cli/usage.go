package cli

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"
)

// setUsageErrors makes the argument and flag errors of every command under
// root usage errors (exit 2) that say, in words, what the command takes,
// followed by its usage line and a pointer to its --help.
func setUsageErrors(root *cobra.Command) {
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return exit(ExitInvalid, &usageError{msg: err.Error(), cmd: cmd})
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := args(cmd, a); err != nil {
					return exit(ExitInvalid, &usageError{msg: argCountWords(cmd, err.Error()), cmd: cmd})
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// argCount is a message of one of cobra's argument validators, with what
// it says in words.
type argCount struct {
	re    *regexp.Regexp
	words func(m []string) string
}

// cobraArgCounts are the messages of cobra's argument validators, compiled
// on first use (by a usage error).
var cobraArgCounts = sync.OnceValue(func() []argCount {
	return []argCount{
		{regexp.MustCompile(`^accepts (\d+) arg\(s\), received (\d+)$`), func(m []string) string {
			return "takes " + arguments(m[1]) + ", got " + m[2]
		}},
		{regexp.MustCompile(`^requires at least (\d+) arg\(s\), only received (\d+)$`), func(m []string) string {
			return "takes at least " + arguments(m[1]) + ", got " + m[2]
		}},
		{regexp.MustCompile(`^accepts at most (\d+) arg\(s\), received (\d+)$`), func(m []string) string {
			return "takes at most " + arguments(m[1]) + ", got " + m[2]
		}},
		{regexp.MustCompile(`^accepts between (\d+) and (\d+) arg\(s\), received (\d+)$`), func(m []string) string {
			return "takes " + m[1] + " to " + arguments(m[2]) + ", got " + m[3]
		}},
	}
})

// argCountWords turns cobra's "accepts 1 arg(s), received 0" for skein
// run into "run takes 1 argument, got 0"; another message is kept as it is.
func argCountWords(cmd *cobra.Command, msg string) string {
	for _, c := range cobraArgCounts() {
		if m := c.re.FindStringSubmatch(msg); m != nil {
			return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ") + " " + c.words(m)
		}
	}
	return msg
}

func arguments(n string) string {
	if i, _ := strconv.Atoi(n); i == 1 {
		return n + " argument"
	}
	return n + " arguments"
}

// printUsageHint writes, after a usage error of cmd, its usage line and
// where its help is.
func printUsageHint(w io.Writer, cmd *cobra.Command) {
	fmt.Fprintf(w, "usage: %s\nrun '%s --help' for its arguments, flags and examples\n", cmd.UseLine(), cmd.CommandPath())
}
