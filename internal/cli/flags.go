package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The flags several commands share are declared here, once, so they have
// one name, one meaning and one help text everywhere.

// Built-in defaults of --dir and --concurrency, used when neither the
// environment nor the configuration file gives one.
const (
	defaultDir         = ".skein"
	defaultConcurrency = 16
)

// addDirFlag adds --dir, the folder of the database and the run folders,
// and --db, a database to use instead of the folder's skein.db. Their
// values are set before the command runs (env.applyDefaults), --db's in
// env.db.
func addDirFlag(fl *pflag.FlagSet, p *string) {
	fl.StringVar(p, "dir", "", "folder of the database (skein.db) and the run folders (default $"+envDir+", else dir: in "+ConfigFile+", else "+defaultDir+")")
	fl.String("db", "", "database instead of <dir>/skein.db: a postgres://user@host:5432/db URL, or a SQLite file (default $"+envDB+"); run folders stay in --dir")
	fl.String("blobs", "", "with a Postgres --db: a folder every worker mounts (a path or file:// URL) for the big values and artifacts of queued runs, instead of the database (default $"+envBlobs+")")
}

// addOutputFlag adds -o/--output, text or json; another value is a usage
// error when the flags are parsed.
func addOutputFlag(cmd *cobra.Command, p *string) {
	*p = "text"
	cmd.Flags().VarP((*outputValue)(p), "output", "o", "output format")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
}

// addConcurrencyFlag adds --concurrency. Its value is set before the
// command runs (env.applyDefaults).
func addConcurrencyFlag(fl *pflag.FlagSet, p *int, what string) {
	fl.IntVar(p, "concurrency", 0, fmt.Sprintf("%s (default $%s, else concurrency: in %s, else %d)", what, envConcurrency, ConfigFile, defaultConcurrency))
}

// addModelFlag adds --model, the model of the LLM entries that name none.
func addModelFlag(fl *pflag.FlagSet, p *string) {
	fl.StringVar(p, "model", "", "model of the LLM entries that name none: llm and agent nodes, checks, repair (default $"+envModel+", else model: in "+ConfigFile+")")
}

// outputValue is the value of --output.
type outputValue string

func (o *outputValue) String() string { return string(*o) }

func (o *outputValue) Set(s string) error {
	if s != "text" && s != "json" {
		return fmt.Errorf("must be text or json")
	}
	*o = outputValue(s)
	return nil
}

func (o *outputValue) Type() string { return "text|json" }

// addFileFlag adds --file, a workflow file to use instead of the run's,
// and --workflow, its former name, hidden (in `runs list`, --workflow is
// a workflow's name).
func addFileFlag(cmd *cobra.Command, p *string, usage string) {
	fl := cmd.Flags()
	fl.StringVar(p, "file", "", usage)
	fl.StringVar(p, "workflow", "", usage)
	_ = fl.MarkHidden("workflow")
	_ = fl.SetAnnotation("workflow", renamedTo, []string{"file"})
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
}

// renamedTo is the annotation of a flag's former name: its value is the
// flag's name now. (pflag's MarkDeprecated says so on stdout, which would
// break -o json.)
const renamedTo = "skein_renamed_to"

// noteRenamed tells on stderr of the former flag names used.
func noteRenamed(cmd *cobra.Command, w io.Writer) {
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if to := f.Annotations[renamedTo]; len(to) > 0 {
			fmt.Fprintf(w, "skein: --%s is now --%s\n", f.Name, to[0])
		}
	})
}
