package cli

import (
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/runner"
)

func workerCmd(e *env) *cobra.Command {
	var dir, secretsFile string
	var queues []string
	var concurrency int
	var grace, rescueAfter time.Duration
	var denyPrivate bool
	var lf logFlags
	cmd := &cobra.Command{
		Use:   "worker --db postgres://…",
		Short: "Run the nodes of queued runs: a worker of the Postgres job queue",
		Long: `Run the nodes of queued runs (skein run and skein serve on the same
Postgres database).

Each node attempt is a job in the database's queue (River); a worker takes
jobs from the queues it is given, runs them and, in the same transaction as
their steps, queues what follows. Start as many workers as you like, on any
machine that reaches the database; a node with queue: gpu runs only on a
worker given --queues gpu (add default to take the other nodes too).

SIGTERM or Ctrl-C drains the worker: it takes no new job and lets running
nodes finish within --grace; nodes still running then are stopped and run
again by another worker.

A worker renews a lease in the database as it runs. One that goes silent
for --rescue-after (killed, out of memory, paused, cut off from the
database) is lost: another worker records the attempts it ran as failed
(worker_lost), and each node's retries decide — the node runs again with
attempt + 1 and the same idempotency key, or fails. A lost worker that
comes back cannot record a result over them. When the database restarts,
workers reconnect by themselves, retrying with backoff. A worker opens up to one database connection per
job it runs at once, plus 4 (at most 64; pool_max_conns in the URL sets
it).`,
		Example: `  skein worker --db postgres://skein@db:5432/skein
  skein worker --db postgres://skein@db:5432/skein --queues gpu --concurrency 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			collectEarly(e)
			if !runner.IsDatabaseURL(e.db) {
				return usagef("skein worker needs --db postgres://user@host:5432/db (or $%s): workers share runs through Postgres", envDB)
			}
			if concurrency < 1 {
				return usagef("--concurrency must be at least 1")
			}
			log, err := newLogger(e, lf)
			if err != nil {
				return err
			}
			if rescueAfter < 100*time.Millisecond {
				return usagef("--rescue-after must be at least 100ms")
			}
			qs := map[string]int{}
			for _, q := range queues {
				q = strings.TrimSpace(q)
				if q == "" {
					continue
				}
				qs[q] = concurrency
			}
			if len(qs) == 0 {
				return usagef("--queues names no queue")
			}
			cfg := runner.Config{Dir: dir, DB: e.db, Blobs: e.blobs, LookupEnv: e.getenv}
			if !strings.Contains(e.db, "pool_max_conns") {
				// A connection per running node, and River's own (its
				// listener, fetches, completions).
				cfg.PoolSize = int32(min(concurrency*len(qs)+4, 64))
			}
			r, err := runner.Open(cfg)
			if err != nil {
				return failure(err)
			}
			defer r.Close()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log.Info("working", "queues", strings.Join(queues, ","), "concurrency", concurrency, "db", runner.RedactURL(e.db))
			err = r.Work(ctx, runner.WorkRequest{Queues: qs, Grace: grace, SecretsFile: secretsFile, DenyPrivate: denyPrivate,
				RescueAfter: rescueAfter, Logger: log})
			if err != nil {
				return failure(err)
			}
			log.Info("drained, stopped")
			return nil
		},
	}
	fl := cmd.Flags()
	addDirFlag(fl, &dir)
	addLogFlags(cmd, &lf)
	fl.StringSliceVar(&queues, "queues", []string{"default"}, "queues to take jobs from (comma-separated)")
	addConcurrencyFlag(fl, &concurrency, "nodes run at once per queue")
	fl.DurationVar(&grace, "grace", 5*time.Minute, "on SIGTERM, how long running nodes may finish before they are stopped (0: as long as they take)")
	fl.DurationVar(&rescueAfter, "rescue-after", queue.DefaultRescueAfter, "how long this worker may go silent (killed, paused, cut off from the database) before the nodes it runs count as lost and run again elsewhere")
	fl.StringVar(&secretsFile, "secrets-file", "", "dotenv file with secret values")
	fl.BoolVar(&denyPrivate, "deny-private-networks", false, "http nodes refuse loopback, private, link-local and metadata addresses")
	return cmd
}
