package cli

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skeinhq/skein/internal/mcpserver"
	"github.com/skeinhq/skein/internal/runner"
)

// MCPHandler serves Skein's MCP server over streamable HTTP, as
// `skein mcp --http` does, with --dir dir, until ctx ends. extra adds
// tools and resources to the server before it serves.
func MCPHandler(ctx context.Context, dir string, log io.Writer, extra func(*sdk.Server)) http.Handler {
	srv := mcpserver.New(ctx, mcpserver.Config{Runner: runner.Config{Dir: dir}, Options: runner.Options{Concurrency: 1}, Version: Version, Log: log})
	extra(srv.MCP())
	return srv.Handler(mcpserver.HTTPConfig{})
}

// MainIn runs the CLI as Main does, as if started in folder wd (where
// .skein.yaml is looked for) with environ as its whole environment.
func MainIn(ctx context.Context, wd string, environ map[string]string, args []string, stdout, stderr io.Writer) int {
	lookup := func(k string) (string, bool) { v, ok := environ[k]; return v, ok }
	return mainEnv(ctx, &env{stdin: strings.NewReader(""), stdout: stdout, stderr: stderr, lookupEnv: lookup, wd: wd}, args)
}

// IsTerminal is isTerminal, which picks the live view.
var IsTerminal = isTerminal

// GroupCommands lists the commands that hold subcommands, each as the
// words that name it after `skein` (the root is not one of them).
func GroupCommands() [][]string {
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			p := append(slices.Clone(path), sub.Name())
			if sub.HasSubCommands() {
				out = append(out, p)
				walk(sub, p)
			}
		}
	}
	walk(rootCmd(&env{}), nil)
	return out
}
