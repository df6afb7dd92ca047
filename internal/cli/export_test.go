package cli

import (
	"context"
	"io"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skeinhq/skein/node"
)

// MCPHandler serves Skein's MCP server over streamable HTTP, as
// `skein mcp --http` does, with --dir dir, until ctx ends. extra adds
// tools and resources to the server before it serves.
func MCPHandler(ctx context.Context, dir string, log io.Writer, extra func(*sdk.Server)) http.Handler {
	srv := newMCPServer(ctx, &mcpService{flags: execFlags{output: "json", dir: dir, concurrency: 1}}, log)
	extra(srv)
	return mcpHTTPHandler(srv, mcpHTTPConfig{})
}

// AddMCPTool adds a tool the way Skein adds its own: a *node.Error the
// handler returns is a tool error.
func AddMCPTool[In, Out any](srv *sdk.Server, t *sdk.Tool, h func(context.Context, In) (Out, *node.Error)) {
	addTool(srv, t, h)
}

// MainIn runs the CLI as Main does, as if started in folder wd (where
// .skein.yaml is looked for) with environ as its whole environment.
func MainIn(ctx context.Context, wd string, environ map[string]string, args []string, stdout, stderr io.Writer) int {
	lookup := func(k string) (string, bool) { v, ok := environ[k]; return v, ok }
	return mainEnv(ctx, &env{stdin: strings.NewReader(""), stdout: stdout, stderr: stderr, lookupEnv: lookup, wd: wd}, args)
}

// IsTerminal is isTerminal, which picks the live view.
var IsTerminal = isTerminal
