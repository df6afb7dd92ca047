package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/auth"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/server"
)

// defaultServeAddr is where `skein serve` listens unless told otherwise.
const defaultServeAddr = "127.0.0.1:7420"

func serveCmd(e *env) *cobra.Command {
	var f execFlags
	var addr, flows string
	var noAuth bool
	var grace, parkAfter time.Duration
	var maxRuns int
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API: start, follow, cancel, resume and rerun the runs of a folder of workflows",
		Long: `Serve Skein's HTTP API (docs/api.md) on --addr for the workflows in
--workflows: every workflow file of the folder that validates is served by
its name; a file that does not is logged and skipped. The folder is loaded
again when a file in it changes and on SIGHUP. Runs are recorded in --dir,
which the CLI may share.

Every route but /healthz needs an API token (Authorization: Bearer
<token>). On first start an admin token is written to <dir>/admin.token;
skein token create makes more. --no-auth serves without tokens, and only on
a loopback address.

A run whose every branch waits — for a signal (POST
/api/runs/{id}/signals/{node}), or for timers due later than --park-after —
is left waiting, held by nothing; a signal resumes it, and so does the
server (this one or the next) when its wake-up time comes.

Schedule triggers fire while the server runs; their fire times are kept in
the database, so a restart neither skips nor doubles a fire. On start the
server takes over the runs a dead process left running (of the workflows it
serves), reusing their completed steps. GET /metrics is in the Prometheus
format; set OTEL_EXPORTER_OTLP_ENDPOINT to send a trace span per run and per
node by OTLP/HTTP.

SIGTERM or Ctrl-C: no new request or run is taken, running nodes get
--shutdown-grace to finish (then they are stopped), and unfinished runs are
left interrupted, to be resumed (or waiting, when they only wait).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.concurrency < 1 {
				return usagef("--concurrency must be at least 1")
			}
			if err := checkServeAddr(addr, noAuth); err != nil {
				return err
			}
			if st, err := os.Stat(flows); err != nil || !st.IsDir() {
				if errors.Is(err, fs.ErrNotExist) || err == nil {
					return usagef("--workflows %s is not a folder; put the workflow files to serve in one and pass it", flows)
				}
				return usagef("--workflows %s: %v", flows, err)
			}
			log := newLogger(e)
			r, err := e.openRunner(f.dir)
			if err != nil {
				return err
			}
			defer r.Close()
			cfg := server.Config{Runner: r, Workflows: flows, Log: log, Options: f.options(nil, nil), Grace: grace, MaxRunning: maxRuns, ParkAfter: parkAfter}
			cfg.Options.Park = nil // the server's: --park-after
			if parkAfter >= 0 {
				cfg.Options.Park = &engine.Park{After: parkAfter}
			}
			tp, stopTracing, err := server.TracerFromEnv(cmd.Context(), os.LookupEnv, Version)
			if err != nil {
				return exit(ExitFailed, fmt.Errorf("OpenTelemetry tracing: %w", err))
			}
			if tp != nil {
				cfg.Tracer = tp
				log.Info("sending traces by OTLP/HTTP", "endpoint", firstEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"))
				defer func() {
					ctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), 5*time.Second)
					defer cancel()
					if err := stopTracing(ctx); err != nil {
						log.Warn("sending the last traces", "err", err)
					}
				}()
			}
			var tokenPath string
			var made bool
			if !noAuth {
				tokens := r.Tokens()
				if tokenPath, made, err = server.EnsureAdminToken(cmd.Context(), tokens, f.dir); err != nil {
					return exit(ExitFailed, err)
				}
				cfg.Auth = tokens
			}
			srv, err := server.New(cfg)
			if err != nil {
				return exit(ExitFailed, err)
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return exit(ExitFailed, fmt.Errorf("--addr: %w", err))
			}
			if noAuth {
				log.Warn("serving without authentication (--no-auth): anyone on this machine may start and cancel runs")
			} else {
				msg := "admin token in " + tokenPath
				if made {
					msg = "made an admin token, written to " + tokenPath + " (mode 0600)"
				}
				log.Info(msg, "use", fmt.Sprintf(`curl -H "Authorization: Bearer $(cat %s)" http://%s/api/workflows`, tokenPath, ln.Addr()),
					"more_tokens", "skein token create --scope read|run|admin --dir "+f.dir)
			}
			ctx, stop := context.WithCancel(cmd.Context())
			defer stop()
			go reloadOnHUP(ctx, srv)
			served := make(chan struct{})
			defer close(served)
			go stopOnSecondSignal(srv, served)
			go func() {
				if err := srv.Watch(ctx); err != nil {
					log.Warn("not watching the workflows folder; reload with SIGHUP", "err", err)
				}
			}()
			if err := srv.Serve(ctx, ln); err != nil {
				return exit(ExitFailed, err)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&addr, "addr", defaultServeAddr, "address to listen on (host:port)")
	fl.StringVar(&flows, "workflows", "./flows", "folder of the workflow files to serve")
	fl.BoolVar(&noAuth, "no-auth", false, "serve without API tokens (loopback addresses only)")
	fl.DurationVar(&grace, "shutdown-grace", 30*time.Second, "on shutdown, how long running nodes may take to finish before they are stopped")
	fl.IntVar(&maxRuns, "max-runs", server.DefaultMaxRunning, "most executions in progress at once; a request that would start one more waits a second, then gets 503 busy")
	fl.DurationVar(&parkAfter, "park-after", time.Minute, "a run whose branches all wait, for signals or for timers due later than this, is left waiting and held by nothing (negative: hold every wait)")
	f.registerRun(fl, "most nodes running at once, per run")
	return cmd
}

func tokenCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Make API tokens for skein serve",
		Args:  cobra.ArbitraryArgs,
		RunE:  groupCmd,
	}
	var dir, scope, name string
	create := &cobra.Command{
		Use:   "create --scope read|run|admin [--name NAME]",
		Short: "Make an API token and print it (once: only its hash is kept)",
		Long: `Make an API token for skein serve's API and print it on stdout. It is shown
this once: the database keeps only its SHA-256. Scopes: read (list and show
workflows and runs, follow events), run (also start, cancel, resume and
rerun runs), admin (everything).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sc, err := auth.ParseScope(scope)
			if err != nil {
				return usagef("--scope: %v", err)
			}
			r, err := e.openRunner(dir)
			if err != nil {
				return err
			}
			defer r.Close()
			text, rec, err := r.Tokens().Create(cmd.Context(), sc, name)
			if err != nil {
				return exit(ExitFailed, err)
			}
			fmt.Fprintln(e.stdout, text)
			fmt.Fprintf(e.stderr, "token %s (scope %s) made; it is not shown again. Send it as Authorization: Bearer <token>\n", rec.ID, rec.Scope)
			return nil
		},
	}
	addDirFlag(create.Flags(), &dir)
	create.Flags().StringVar(&scope, "scope", "", "read, run or admin")
	create.Flags().StringVar(&name, "name", "", "a name to remember the token by")
	_ = create.MarkFlagRequired("scope")
	cmd.AddCommand(create)
	return cmd
}

// firstEnv returns the value of the first of the variables that is set.
func firstEnv(names ...string) string {
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok {
			return v
		}
	}
	return ""
}

// checkServeAddr refuses an address that is not host:port, and --no-auth
// on an address other machines can reach.
func checkServeAddr(addr string, noAuth bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--addr %s: %v (write host:port, e.g. %s)", addr, err, defaultServeAddr)
	}
	if noAuth && !isLoopbackHost(host) {
		return usagef("--no-auth is only allowed on a loopback address (127.0.0.1, ::1, localhost), and %s is reachable from other machines; "+
			"drop --no-auth and use an API token, or listen on 127.0.0.1", addr)
	}
	return nil
}

// newLogger logs to stderr: JSON lines when stderr is not a terminal (a
// service manager, a container), text for people otherwise.
func newLogger(e *env) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if isTerminal(e.stderr) {
		return slog.New(slog.NewTextHandler(e.stderr, opts))
	}
	return slog.New(slog.NewJSONHandler(e.stderr, opts))
}

// stopOnSecondSignal stops running nodes at once on the second Ctrl-C or
// SIGTERM (the first, which ends the command's context, gives them the
// grace period), until done is closed.
func stopOnSecondSignal(srv *server.Server, done <-chan struct{}) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	for n := 0; ; {
		select {
		case <-sigs:
			if n++; n == 2 {
				srv.StopNow()
				return
			}
		case <-done:
			return
		}
	}
}

// reloadOnHUP reloads the workflows on each SIGHUP until ctx ends.
func reloadOnHUP(ctx context.Context, srv *server.Server) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			_ = srv.Reload()
		}
	}
}
