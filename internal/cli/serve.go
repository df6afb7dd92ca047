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
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/auth"
	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/server"
)

// defaultServeAddr is where `skein serve` listens unless told otherwise.
const defaultServeAddr = "127.0.0.1:7420"

func serveCmd(e *env) *cobra.Command {
	var f execFlags
	var addr, metricsAddr, flows, folders string
	var noAuth, queued, withWorker, local bool
	var grace, parkAfter, rescueAfter time.Duration
	var maxRuns int
	var lf logFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API: start, follow, cancel, resume and rerun the runs of a folder of workflows",
		Long: `Serve Skein's HTTP API (docs/api.md) on --addr for the workflows in
--workflows: every workflow file of the folder that validates is served by
its name; a file that does not is logged and skipped. The folder is loaded
again when a file in it changes and on SIGHUP. Runs are recorded in --dir,
which the CLI may share.

Every route but the probes (/healthz, /readyz) needs an API token (Authorization: Bearer
<token>). On first start an admin token is written to <dir>/admin.token;
skein token create makes more. --no-auth serves without tokens, and only on
a loopback address.

A run whose every branch waits — for a signal (POST
/api/runs/{id}/signals/{node}), or for timers due later than --park-after —
is left waiting, held by nothing; a signal resumes it, and so does the
server (this one or the next) when its wake-up time comes.

Schedule triggers fire while the server runs; their fire times are kept in
the database, so a restart neither skips nor doubles a fire. On start, and
every 30 s after, the server takes over the runs a dead process left running
(of the workflows it serves), reusing their completed steps. GET /metrics
is in the Prometheus format, with a read token, or without one on
--metrics-addr (an address only the scraper reaches); set
OTEL_EXPORTER_OTLP_ENDPOINT to send a trace span per run and per node by
OTLP/HTTP.

SIGTERM or Ctrl-C: no new request or run is taken, running nodes get
--shutdown-grace to finish (then they are stopped), and unfinished runs are
left interrupted, to be resumed (or waiting, when they only wait).

With --db postgres://… the server runs no node itself: each run's nodes
are jobs for skein worker processes on the same database, and the server
follows the runs for the API and its events. --worker adds a worker of the
default queue to the server process; --local runs the nodes in the server
process instead, as without a Postgres --db. Queued runs are left to their
workers when the server stops.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			collectEarly(e)
			if f.concurrency < 1 {
				return usagef("--concurrency must be at least 1")
			}
			log, err := newLogger(e, lf)
			if err != nil {
				return err
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
			var onDemand bool
			switch folders {
			case "on-demand":
				onDemand = true
			case "always":
			default:
				return usagef("--run-folders %q: give on-demand or always", folders)
			}
			if queued && local || withWorker && local {
				return usagef("--local runs the nodes in this process; it does not go with --queue or --worker")
			}
			// Where runs' nodes run is the runner's decision: on the
			// queue with a Postgres --db, unless asked otherwise.
			rcfg := runner.Config{Dir: f.dir, DB: e.db, Blobs: e.blobs, LookupEnv: e.getenv, OnDemandFolders: onDemand}
			switch {
			case local:
				rcfg.Placement = runner.PlaceLocal
			case queued:
				rcfg.Placement = runner.PlaceQueue
			}
			if (queued || withWorker) && !runner.IsDatabaseURL(e.db) {
				return usagef("--queue and --worker need --db postgres://user@host:5432/db: queued runs are jobs in Postgres")
			}
			if withWorker && !rcfg.Queued() {
				return usagef("--worker runs the nodes of queued runs; give --db postgres://… (without --local)")
			}
			if rescueAfter < 100*time.Millisecond {
				return usagef("--rescue-after must be at least 100ms")
			}
			if runner.IsDatabaseURL(e.db) && !strings.Contains(e.db, "pool_max_conns") {
				// A webhook's intake holds a connection for its
				// transaction, a worker in this process one per running
				// node: pgxpool's default (4 on two cores) would queue the
				// intake behind a few of them.
				rcfg.PoolSize = serveConns
				if withWorker {
					rcfg.PoolSize = min(serveConns+int32(f.concurrency), 64)
				}
			}
			r, err := runner.Open(rcfg)
			if err != nil {
				return failure(err) // a bad --db is a usage error
			}
			defer r.Close()
			if rcfg.Queued() {
				// The queue opens now, not at the first queued run: the
				// webhooks that come first would wait for it (~50 ms).
				jobs, err := r.QueueJobs(cmd.Context())
				if err != nil {
					return exit(ExitFailed, fmt.Errorf("opening the queue: %w", err))
				}
				var waiting int64
				for _, j := range jobs {
					waiting += j.Count
				}
				log.Info("queue opened: the runs' nodes are jobs for skein workers", "jobs_not_ended", waiting)
			}
			cfg := server.Config{Runner: r, Workflows: flows, Log: log, Options: f.options(nil, nil), Grace: grace, MaxRunning: maxRuns, ParkAfter: parkAfter}
			cfg.Options.Park = nil // the server's: --park-after
			if parkAfter >= 0 {
				cfg.Options.Park = &runner.Park{After: parkAfter}
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
					"more_tokens", "skein token create --scope read|run|edit|admin --dir "+f.dir)
			}
			ctx, stop := context.WithCancel(cmd.Context())
			defer stop()
			if metricsAddr != "" {
				mln, err := net.Listen("tcp", metricsAddr)
				if err != nil {
					return exit(ExitFailed, fmt.Errorf("--metrics-addr: %w", err))
				}
				metricsDone := make(chan error, 1)
				go func() { metricsDone <- srv.ServeMetrics(ctx, mln) }()
				defer func() {
					stop()
					if err := <-metricsDone; err != nil {
						log.Warn("serving metrics", "err", err)
					}
				}()
				log.Info("serving metrics without a token (--metrics-addr)", "addr", mln.Addr().String(),
					"url", "http://"+mln.Addr().String()+"/metrics")
			}
			go reloadOnHUP(ctx, srv)
			served := make(chan struct{})
			defer close(served)
			go stopOnSecondSignal(srv, served)
			// Watched before the first request is answered: a file written
			// from then on is seen.
			if watch, err := srv.Watch(); err != nil {
				log.Warn("not watching the workflows folder; reload with SIGHUP", "err", err)
			} else {
				go watch(ctx)
			}
			if withWorker {
				// The worker drains after the server stopped taking runs.
				wctx, stopWorker := context.WithCancel(context.WithoutCancel(ctx))
				done := make(chan error, 1)
				go func() {
					done <- r.Work(wctx, runner.WorkRequest{Queues: map[string]int{queue.DefaultQueue: f.concurrency},
						Grace: grace, SecretsFile: f.secretsFile, DenyPrivate: f.denyPrivate, RescueAfter: rescueAfter, Logger: log})
				}()
				defer func() {
					stopWorker()
					if err := <-done; err != nil {
						log.Error("the worker stopped with an error", "err", err)
					}
				}()
				log.Info("working the default queue in this process (--worker)", "concurrency", f.concurrency)
			}
			if err := srv.Serve(ctx, ln); err != nil {
				return exit(ExitFailed, err)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&addr, "addr", defaultServeAddr, "address to listen on (host:port)")
	fl.StringVar(&metricsAddr, "metrics-addr", "", "also serve GET /metrics, without a token, on this address (host:port) for a Prometheus scraper; /metrics on --addr keeps needing a read token")
	addLogFlags(cmd, &lf)
	fl.StringVar(&flows, "workflows", "./flows", "folder of the workflow files to serve")
	fl.BoolVar(&noAuth, "no-auth", false, "serve without API tokens (loopback addresses only)")
	fl.DurationVar(&grace, "shutdown-grace", 30*time.Second, "on shutdown, how long running nodes may take to finish before they are stopped")
	fl.IntVar(&maxRuns, "max-runs", server.DefaultMaxRunning, "most executions in progress at once; a request that would start one more waits a second, then gets 503 busy")
	fl.DurationVar(&parkAfter, "park-after", time.Minute, "a run whose branches all wait, for signals or for timers due later than this, is left waiting and held by nothing (negative: hold every wait)")
	fl.BoolVar(&queued, "queue", false, "hand the runs' nodes to skein workers (jobs in the database's queue) instead of running them in this process: the default with --db postgres://…")
	fl.BoolVar(&local, "local", false, "with --db postgres://…: run the nodes in this process, not on the queue's workers")
	fl.BoolVar(&withWorker, "worker", false, "with --db postgres://…: also run a worker of the default queue in this process")
	fl.DurationVar(&rescueAfter, "rescue-after", queue.DefaultRescueAfter, "with --worker: how long this process's worker may go silent before the nodes it runs count as lost and run again elsewhere (skein worker --help)")
	fl.StringVar(&folders, "run-folders", "on-demand", "on-demand: a run gets a folder under <dir>/runs only when it keeps files (artifacts, big outputs, verdicts); always: every run gets one, with run.json and events.jsonl")
	f.registerRun(fl, "most nodes running at once, per run")
	return cmd
}

// serveConns is how many connections to a Postgres database skein serve
// opens at most (more with --worker; pool_max_conns in the URL sets it).
const serveConns = 16

func tokenCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Make, list and revoke the API tokens of skein serve",
		Args:  cobra.ArbitraryArgs,
		RunE:  groupCmd,
	}
	var dir, scope, name, createOutput string
	create := &cobra.Command{
		Use:   "create --scope read|run|edit|admin [--name NAME]",
		Short: "Make an API token and print it (once: only its hash is kept)",
		Long: `Make an API token for skein serve's API and print it on stdout. It is shown
this once: the database keeps only its SHA-256. Scopes: read (list and show
workflows and runs, follow events), run (also start, cancel, resume and
rerun runs), edit (also create and change the workflow files of
--workflows, as the web editor does), admin (everything).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sc, err := auth.ParseScope(scope)
			if err != nil {
				return usagef("--scope: %v", err)
			}
			if cfg := (runner.Config{Dir: dir, DB: e.db}); !runner.HasDatabase(cfg) {
				// A token is for the server of a folder that exists: one
				// made in a new database (a typo in --dir) no server takes.
				return usagef("no database here: %s does not exist; pass the --dir (or --db) of the server the token is for, or make it first (skein serve, or skein migrate)", runner.DBName(cfg))
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
			if createOutput == "json" {
				writeJSON(e.stdout, tokenCreateDoc{Token: text, tokenDoc: tokenDoc{ID: rec.ID, Name: rec.Name, Scope: rec.Scope, CreatedAt: rec.CreatedAt.UTC()}})
				return nil
			}
			fmt.Fprintln(e.stdout, text)
			fmt.Fprintf(e.stderr, "token %s (scope %s) made; it is not shown again. Send it as Authorization: Bearer <token>\n", rec.ID, rec.Scope)
			return nil
		},
	}
	addDirFlag(create.Flags(), &dir)
	addOutputFlag(create, &createOutput)
	create.Flags().StringVar(&scope, "scope", "", "read, run, edit or admin")
	create.Flags().StringVar(&name, "name", "", "a name to remember the token by")
	_ = create.MarkFlagRequired("scope")

	var listDir, output string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the API tokens: id, name, scope and when each was made",
		Long: `List the API tokens of the folder, oldest first. A token's text is not
kept, so it is not shown; its id is the part after skn_ and before the next
underscore. -o json prints {"tokens": [{id, name, scope, created_at}]}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := e.openExisting(listDir)
			if err != nil {
				return err
			}
			defer r.Close()
			toks, err := r.Tokens().List(cmd.Context())
			if err != nil {
				return exit(ExitFailed, err)
			}
			if output == "json" {
				doc := tokenListDoc{Tokens: make([]tokenDoc, 0, len(toks))}
				for _, t := range toks {
					doc.Tokens = append(doc.Tokens, tokenDoc{t.ID, t.Name, t.Scope, t.CreatedAt.UTC()})
				}
				writeJSON(e.stdout, doc)
				return nil
			}
			if len(toks) == 0 {
				fmt.Fprintln(e.stderr, "no tokens; skein token create --scope run makes one")
				return nil
			}
			tw := newTable(e.stdout)
			fmt.Fprintln(tw, "ID\tNAME\tSCOPE\tCREATED")
			for _, t := range toks {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Scope, t.CreatedAt.Local().Format("2006-01-02 15:04:05"))
			}
			return tw.Flush()
		},
	}
	addDirFlag(list.Flags(), &listDir)
	addOutputFlag(list, &output)

	var revokeDir string
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API token: from now on it is refused",
		Long: `Revoke the API token ID (skein token list shows the ids; a token's id is
the part after skn_ and before the next underscore). A running server
refuses it from its next request.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := e.openExisting(revokeDir)
			if err != nil {
				return err
			}
			defer r.Close()
			id := args[0]
			if rest, ok := strings.CutPrefix(id, "skn_"); ok {
				id, _, _ = strings.Cut(rest, "_") // the whole token was given
			}
			if err := r.Tokens().Revoke(cmd.Context(), id); err != nil {
				if errors.Is(err, runner.ErrNoRecord) {
					return usagef("no token %q; skein token list shows the ids", id) // not found, as a run is: exit 2
				}
				return exit(ExitFailed, err)
			}
			fmt.Fprintf(e.stderr, "token %s revoked\n", id)
			return nil
		},
	}
	addDirFlag(revoke.Flags(), &revokeDir)
	cmd.AddCommand(create, list, revoke)
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

// logFlags are --log-format and --log-level of the long-running commands
// (serve, worker).
type logFlags struct {
	format, level string
}

func addLogFlags(cmd *cobra.Command, lf *logFlags) {
	fl := cmd.Flags()
	fl.StringVar(&lf.format, "log-format", "", "text or json (default: json when stderr is not a terminal — a service manager, a container — else text)")
	fl.StringVar(&lf.level, "log-level", "info", "the least severe level logged: debug, info, warn or error (debug adds the probes' and metrics' requests)")
	_ = cmd.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions([]string{"debug", "info", "warn", "error"}, cobra.ShellCompDirectiveNoFileComp))
}

// newLogger logs to stderr in --log-format from --log-level up: JSON lines
// when stderr is not a terminal (a service manager, a container), text for
// people otherwise, unless told.
func newLogger(e *env, lf logFlags) (*slog.Logger, error) {
	var level slog.Level
	switch lf.level {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		return nil, usagef("--log-level %q: give debug, info, warn or error", lf.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch lf.format {
	case "text":
		return slog.New(slog.NewTextHandler(e.stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(e.stderr, opts)), nil
	case "":
		if isTerminal(e.stderr) {
			return slog.New(slog.NewTextHandler(e.stderr, opts)), nil
		}
		return slog.New(slog.NewJSONHandler(e.stderr, opts)), nil
	}
	return nil, usagef("--log-format %q: give text or json", lf.format)
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
