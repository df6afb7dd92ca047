package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/mcpserver"
	"github.com/skeinhq/skein/internal/runner"
)

// mcpCmd is `skein mcp`: its flags configure the MCP server
// (internal/mcpserver), which it serves on stdio or HTTP.
func mcpCmd(e *env) *cobra.Command {
	var (
		flags     = execFlags{output: "json"}
		addr      string
		hc        mcpserver.HTTPConfig
		local     bool
		workflows string
		lookupEnv = e.getenv
	)
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve Skein as an MCP server: tools to validate, run and inspect workflows",
		Long: `Serve Skein over the Model Context Protocol, on stdin/stdout by default or
over streamable HTTP with --http ADDR (at ` + mcpserver.Path + `).

Tools: validate_workflow, run_workflow, list_runs, get_run, resume_run,
cancel_run, signal_run.
Resources: skein://runs/{id}/events, a run's events as JSON lines.
Runs are recorded in --dir like those of ` + "`skein run`" + `; workflow paths are
taken from the folder skein mcp was started in. Over HTTP the tools take
only the workflow files inside that folder (symlinks resolved), or inside
--workflows when it is given; over stdio, any path, or those inside
--workflows. With --db postgres://… a
run's nodes go to the queue, as with skein run: skein worker processes
run them (--local runs them in this process).

--http refuses an address other than loopback unless --token (or
$SKEIN_MCP_TOKEN) is set; with a token every request must carry
Authorization: Bearer <token>. An HTTP session that receives no request
for --session-idle is closed; a request naming it is then answered 404
Not Found, and the client starts a new session. At most --max-sessions
sessions are kept: a new one past that closes the least recently used
session that has no call in progress (answered 404 from then on), and
when every session has a call in progress the new one is refused with
503 Service Unavailable and Retry-After.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if flags.concurrency < 1 {
				return usagef("--concurrency must be at least 1")
			}
			if hc.SessionIdle < 0 {
				return usagef("--session-idle must not be negative")
			}
			if hc.MaxSessions < 1 {
				return usagef("--max-sessions must be at least 1")
			}
			if hc.Token == "" {
				hc.Token = os.Getenv("SKEIN_MCP_TOKEN")
			}
			if workflows != "" {
				fi, err := os.Stat(workflows)
				if err != nil || !fi.IsDir() {
					return usagef("--workflows %s is not a folder; give the folder of the workflow files the tools may take", workflows)
				}
			}
			var ln net.Listener
			if addr != "" {
				if err := checkMCPAddr(addr, hc.Token); err != nil {
					return err
				}
				var err error
				if ln, err = net.Listen("tcp", addr); err != nil {
					return exit(ExitFailed, fmt.Errorf("--http: %w", err))
				}
			}
			rc := runner.Config{Dir: flags.dir, DB: e.db, Blobs: e.blobs, LookupEnv: lookupEnv}
			if local {
				rc.Placement = runner.PlaceLocal
			}
			ctx, stop := context.WithCancel(cmd.Context())
			srv := mcpserver.New(ctx, mcpserver.Config{Runner: rc, Options: flags.options(nil, nil), Version: Version, Log: e.stderr, Workflows: workflows})
			var err error
			if ln == nil {
				if err = srv.ServeStdio(ctx, e.stdin, e.stdout); err != nil {
					err = exit(ExitFailed, fmt.Errorf("mcp: %w", err))
				}
			} else {
				fmt.Fprintf(e.stderr, "skein mcp: listening on http://%s%s\n", ln.Addr(), mcpserver.Path)
				if err = srv.ServeStreamableHTTP(ctx, ln, hc); err != nil {
					err = exit(ExitFailed, fmt.Errorf("--http: %w", err))
				}
			}
			// Calls still running (the client left) are cancelled: a run
			// ends cancelled and is recorded.
			stop()
			srv.Close()
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&addr, "http", "", "serve streamable HTTP on this address (e.g. 127.0.0.1:7070) instead of stdio")
	fl.StringVar(&hc.Token, "token", "", "bearer token every HTTP request must carry (default $SKEIN_MCP_TOKEN)")
	fl.DurationVar(&hc.SessionIdle, "session-idle", 10*time.Minute, "close an HTTP session that receives no request for this long (0: never)")
	fl.IntVar(&hc.MaxSessions, "max-sessions", mcpserver.DefaultMaxSessions, "most HTTP sessions kept at once; past it the least recently used idle session is closed")
	fl.StringVar(&workflows, "workflows", "", "the folder whose workflow files the tools take, symlinks resolved (default: over HTTP the working folder, over stdio any path)")
	fl.BoolVar(&local, "local", false, "with --db postgres://…: run the nodes in this process, not on the queue's workers")
	flags.registerRun(fl, "most nodes running at once, per run")
	return cmd
}

// checkMCPAddr refuses to listen beyond this machine without a token.
func checkMCPAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--http %s: %v (write host:port, e.g. 127.0.0.1:7070)", addr, err)
	}
	if token != "" || isLoopbackHost(host) {
		return nil
	}
	return usagef("--http %s is reachable from other machines; pass --token (clients then send Authorization: Bearer <token>) or listen on 127.0.0.1", addr)
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
