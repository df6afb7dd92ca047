package queue

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// logSchema creates the history table, the table of workers' leases
// (rescue.go) and the index of the running runs asked to cancel, which
// every worker looks for each second (work.go). It is the queue's own,
// beside the store's schema (whose migrations mirror SQLite's one for
// one).
const logSchema = `CREATE TABLE IF NOT EXISTS ` + logTable + ` (
    run_id text        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq    bigint      NOT NULL,
    kind   text        NOT NULL,
    at     timestamptz NOT NULL,
    node   text        NOT NULL DEFAULT '',
    visit  integer     NOT NULL DEFAULT 0,
    body   json        NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX IF NOT EXISTS skein_queue_log_by_kind ON ` + logTable + ` (run_id, kind, node, visit);
DO $$ BEGIN
    -- Looked up first: CREATE INDEX IF NOT EXISTS would lock the runs
    -- table against every write, and wait for those under way, at each
    -- start of a worker or server.
    IF to_regclass('skein_runs_cancel_asked') IS NULL THEN
        CREATE INDEX skein_runs_cancel_asked ON runs (id) WHERE status = 'running' AND cancel_requested_at IS NOT NULL;
    END IF;
END $$;
CREATE TABLE IF NOT EXISTS ` + workersTable + ` (
    id              text        PRIMARY KEY,
    host            text        NOT NULL,
    pid             integer     NOT NULL,
    lease_ms        bigint      NOT NULL,
    started_at      timestamptz NOT NULL DEFAULT now(),
    seen_at         timestamptz NOT NULL DEFAULT now(),
    connected_since timestamptz NOT NULL DEFAULT now()
)`

// migrateLock is the advisory lock key of the queue's migrations.
const migrateLock int64 = 0x736b65696e71 // "skeinq"

// MigrateResult says what Migrate changed.
type MigrateResult struct {
	// River lists the River migrations applied (versions).
	River []int
}

// Migrate creates or updates River's tables and the queue's history table
// in the database of pool (its search_path's schema), after the store's
// own migrations ran. It is safe to run again.
//
// Processes that start at once (a server and its workers) take turns: the
// migrations run under a session advisory lock of the database.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (*MigrateResult, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrating the queue's tables: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrateLock); err != nil {
		return nil, fmt.Errorf("migrating the queue's tables: waiting for another process's migrations: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrateLock) }()
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return nil, fmt.Errorf("preparing River's migrations: %w", err)
	}
	res, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return nil, fmt.Errorf("migrating River's tables: %w", err)
	}
	out := &MigrateResult{}
	for _, v := range res.Versions {
		out.River = append(out.River, v.Version)
	}
	if _, err := pool.Exec(ctx, logSchema); err != nil {
		return nil, fmt.Errorf("creating the queue's history table: %w", err)
	}
	return out, nil
}
