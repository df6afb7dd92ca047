package sqlite

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skeinhq/skein/internal/store/sqlstore"
)

// dialect is SQLite's spelling of what the shared SQL leaves open. Times
// are INTEGER microseconds since the Unix epoch (0: none), JSON is TEXT.
var dialect = sqlstore.Dialect{
	Now:       `CAST(unixepoch('subsec') * 1000000 AS INTEGER)`,
	AddMicros: func(t, p string) string { return t + " + " + p },
	// MIN and MAX of several arguments are SQLite's scalar functions;
	// MIN is NULL when an argument is.
	Least:       func(a, b string) string { return "MIN(COALESCE(" + a + ", " + b + "), " + b + ")" },
	Greatest:    func(a, b string) string { return "MAX(" + a + ", " + b + ")" },
	NoTime:      "0",
	NoTimeValue: int64(0),
	NoLimit:     -1,
	Time:        func(t time.Time) any { return t.UnixMicro() },
	JSON:        text,
	Duration:    func(d time.Duration) any { return d.Microseconds() },
	// A step row carries its node's node_started and node_finished when
	// written with them (carry).
	StepEvents: true,
	// Every write goes through the one write connection in a BEGIN
	// IMMEDIATE transaction: writers take turns without a row or key lock.
}

// text passes JSON to a TEXT column: NULL for nil.
func text(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// db is the Store's connections as the shared core uses them.
type db struct{ s *Store }

func (d db) Read() sqlstore.Querier { return conn{d.s.r} }

func (d db) Write(ctx context.Context, op string, fn func(tx sqlstore.Querier) error) error {
	return d.s.write(ctx, op, func(tx *sql.Tx) error { return fn(conn{tx}) })
}

func (d db) SaveBatches(ctx context.Context, op string, bs []sqlstore.Batch) ([]int64, error) {
	return d.s.saveBatches(ctx, op, bs)
}

func (d db) Failed(op string, err error) error { return d.s.failed(op, err) }

// IsForeignKey tells SQLite's error for a row that names a missing row.
func (db) IsForeignKey(err error) bool {
	return strings.Contains(err.Error(), "FOREIGN KEY constraint failed")
}

// conn runs the shared SQL on a pool or a transaction of database/sql.
type conn struct {
	q interface {
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	}
}

func (c conn) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	rows, err := c.q.QueryContext(ctx, rebind(q), args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (c conn) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return c.q.QueryRowContext(ctx, rebind(q), args...)
}

func (c conn) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := c.q.ExecContext(ctx, rebind(q), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// ExecAll runs the statements one by one: SQLite is in the process, a
// statement costs no round trip.
func (c conn) ExecAll(ctx context.Context, stmts []sqlstore.Stmt) error {
	for _, st := range stmts {
		if _, err := c.Exec(ctx, st.SQL, st.Args...); err != nil {
			return err
		}
	}
	return nil
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// rebound holds the statements rebind rewrote, by their shared text.
var rebound sync.Map

// rebind spells the parameters of a shared statement ($1, $2…) as
// SQLite's, which take the same arguments: a statement whose parameters
// come in order, $1, $2… each once, gets anonymous ones (?); another,
// numbered ones (?1, ?2…). The driver asks SQLite the name of each
// parameter it binds, and SQLite finds a numbered parameter's name by
// walking the list of the statement's names: binding the 1,536
// parameters of a 64-row insert so took ~1.2 million steps, half of
// `skein run`'s CPU on a long chain. Anonymous parameters have no names
// to walk.
func rebind(q string) string {
	if v, ok := rebound.Load(q); ok {
		return v.(string)
	}
	anonymous := true
	n := 0
	for i := 0; i < len(q); i++ {
		if num, end := paramAt(q, i); end > i {
			n++
			if num != n {
				anonymous = false
				break
			}
			i = end - 1
		}
	}
	var b strings.Builder
	b.Grow(len(q))
	for i := 0; i < len(q); i++ {
		num, end := paramAt(q, i)
		if end == i {
			b.WriteByte(q[i])
			continue
		}
		b.WriteByte('?')
		if !anonymous {
			b.WriteString(strconv.Itoa(num))
		}
		i = end - 1
	}
	r := b.String()
	rebound.Store(q, r)
	return r
}

// paramAt reads a parameter $N at q[i]: its number and the index after
// it; end == i when there is none.
func paramAt(q string, i int) (num, end int) {
	if q[i] != '$' {
		return 0, i
	}
	end = i + 1
	for end < len(q) && q[end] >= '0' && q[end] <= '9' {
		num = num*10 + int(q[end]-'0')
		end++
	}
	if end == i+1 {
		return 0, i
	}
	return num, end
}
