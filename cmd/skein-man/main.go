// Command skein-man writes the man pages of skein, one per command, into a
// folder: `go run ./cmd/skein-man DIR` (make man writes them to man/).
// They are generated from the same definitions as `skein --help`. It is a
// program of its own so that skein does not carry the Markdown and roff
// libraries the pages are made with: every skein process would initialise
// them (2–6 ms of each start on the build machine, BENCHMARKS.md).
package main

import (
	"fmt"
	"os"
	"regexp"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/skeinhq/skein/internal/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: skein-man DIR (writes a man page per skein command into DIR)")
		os.Exit(2)
	}
	if err := write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "skein-man:", err)
		os.Exit(1)
	}
	fmt.Printf("man pages written to %s\n", os.Args[1])
}

// write writes a man page per skein command into dir.
func write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root := cli.Commands()
	root.DisableAutoGenTag = true
	// Help texts are plain text; man pages are made from Markdown, which
	// would drop <name> as an HTML tag.
	escapeMarkdown(root)
	header := &doc.GenManHeader{Title: "SKEIN", Section: "1", Source: root.Version, Manual: "Skein Manual"}
	if err := doc.GenManTree(root, header, dir); err != nil {
		return fmt.Errorf("writing man pages: %w", err)
	}
	return nil
}

// escapeMarkdown escapes the <name>s of the help texts and flag usages of
// root and the commands under it, once each.
func escapeMarkdown(root *cobra.Command) {
	tag := regexp.MustCompile(`<([A-Za-z])`)
	esc := func(s string) string { return tag.ReplaceAllString(s, `\<$1`) }
	seen := map[*pflag.Flag]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Long = esc(c.Long)
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if !seen[f] {
					seen[f] = true
					f.Usage = esc(f.Usage)
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
