package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/skeinhq/skein/internal/store/sqlstore"
)

// dialect is Postgres's spelling of what the shared SQL leaves open. Times
// are timestamptz (microseconds, read back in UTC; Go times are truncated
// to the microsecond before they are written, as Postgres would round),
// JSON is json, NULL is no time.
var dialect = sqlstore.Dialect{
	Now: `now()`, // the start of the transaction
	AddMicros: func(t, p string) string {
		return t + " + " + p + "::float8 * interval '1 microsecond'"
	},
	Least:       func(a, b string) string { return "LEAST(" + a + ", " + b + ")" }, // LEAST skips NULLs
	Greatest:    func(a, b string) string { return "GREATEST(" + a + ", " + b + ")" },
	NoTime:      "NULL",
	NoTimeValue: nil,
	// FOR NO KEY UPDATE leaves rows that reference the run (steps,
	// events) free to be inserted by others.
	LockRow: ` FOR NO KEY UPDATE`,
	LockKey: `SELECT pg_advisory_xact_lock($1, hashtext($2))`,
	NoLimit: nil,
	Time:    func(t time.Time) any { return t },
	JSON:    func(b []byte) any { return b },
	// A duration is a float8 number of microseconds (AddMicros).
	Duration:   func(d time.Duration) any { return float64(d.Microseconds()) },
	FinishRuns: finishRuns,
	// A step row names the transaction that last wrote it (migration 19):
	// a follower reads the rows written since its last look (StepsSince).
	StepWritten: `, written = pg_current_xact_id()`,
}

// finishRunsSQL is SQL.FinishRun for several runs: the arguments of each
// are a row of the arrays $1…$9, one array a column.
const finishRunsSQL = `UPDATE runs SET status = v.status, outputs = v.outputs, error = v.error,
	finished_at = v.finished_at, tokens = v.tokens, cost_usd = v.cost_usd, wake_at = v.wake_at,
	owner_host = '', owner_pid = 0, owner_token = '', lease_until = NULL,
	event_seq = COALESCE(v.event_seq, runs.event_seq)
	FROM unnest($1::text[], $2::text[], $3::json[], $4::json[], $5::timestamptz[], $6::bigint[], $7::float8[],
	            $8::timestamptz[], $9::bigint[])
	  AS v(id, status, outputs, error, finished_at, tokens, cost_usd, wake_at, event_seq)
	WHERE runs.id = v.id`

// finishRuns is the dialect's FinishRuns: one statement of finishRunsSQL.
func finishRuns(rows [][]any) sqlstore.Stmt {
	const cols = 9
	args := make([]any, cols)
	for c := range cols {
		col := make([]any, len(rows))
		for r, row := range rows {
			col[r] = row[c]
		}
		args[c] = col
	}
	return sqlstore.Stmt{SQL: finishRunsSQL, Args: args}
}

// stmts are the statements the package runs itself, in Postgres's
// spelling.
var _, stmts = sqlstore.New(nil, dialect)

// db is the Store's pool as the shared core uses it.
type db struct{ s *Store }

func (d db) Read() sqlstore.Querier { return conn{d.s.pool} }

func (d db) Write(ctx context.Context, op string, fn func(tx sqlstore.Querier) error) error {
	return d.s.write(ctx, op, func(tx pgx.Tx) error { return fn(conn{tx}) })
}

func (d db) SaveBatches(ctx context.Context, op string, bs []sqlstore.Batch) ([]int64, error) {
	return d.s.saveBatches(ctx, op, bs)
}

func (d db) Failed(op string, err error) error { return d.s.failed(op, err) }

func (db) IsForeignKey(err error) bool { return pgCode(err) == codeForeignKey }

// conn runs the shared SQL on the pool or a transaction.
type conn struct {
	q interface {
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		batchSender
	}
}

func (c conn) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	return c.q.Query(ctx, q, args...)
}

func (c conn) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return c.q.QueryRow(ctx, q, args...)
}

func (c conn) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := c.q.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

// ExecAll sends the statements in one round trip.
func (c conn) ExecAll(ctx context.Context, stmts []sqlstore.Stmt) error {
	b := &pgx.Batch{}
	for _, st := range stmts {
		b.Queue(st.SQL, st.Args...)
	}
	return sendBatch(ctx, c.q, b)
}

// sendBatch sends the queued statements in one round trip and returns the
// first error.
func sendBatch(ctx context.Context, q batchSender, b *pgx.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	return q.SendBatch(ctx, b).Close()
}
