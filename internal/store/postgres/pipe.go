package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Pipe is a transaction on one connection of the store's pool whose
// statements go out pipelined: what its holder defers (its BEGIN, the
// writes it queued, a notification) is sent in front of its next
// statement that needs an answer, or with its COMMIT, in the same round
// trip. A transaction that reads, writes and commits thus costs a round
// trip per answer it waits for, not one per statement.
//
// It is a pgx.Tx, so River's calls run in it (river.Client's JobCancelTx)
// with the holder's writes riding in front. It has no savepoints (Begin
// fails). A Pipe is used by one goroutine.
type Pipe struct {
	conn *pgxpool.Conn
	// pending are the statements deferred to the next round trip.
	pending []*pgx.QueuedQuery
	// deferExec defers Exec statements too (DeferExec).
	deferExec bool
	done      bool
}

// Interface guard.
var _ pgx.Tx = (*Pipe)(nil)

// errSavepoint: a Pipe has no savepoints.
var errSavepoint = errors.New("postgres: a pipelined transaction has no savepoints")

// BeginPipe returns a transaction on a connection of the pool; its BEGIN
// goes out with its first statement.
func (s *Store) BeginPipe(ctx context.Context) (*Pipe, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	p := &Pipe{conn: conn}
	p.pending = append(p.pending, &pgx.QueuedQuery{SQL: "BEGIN"})
	return p, nil
}

// Defer queues the statements of b to go out with the transaction's next
// round trip; b is then empty. Their errors come back from that round
// trip's statement (or from Commit), and their callbacks, if any, run
// then.
func (p *Pipe) Defer(b *pgx.Batch) {
	p.pending = append(p.pending, b.QueuedQueries...)
	b.QueuedQueries = nil
}

// DeferExec makes the Exec statements that follow deferred (on) or sent
// at once (off): an Exec whose result nobody reads but its error, such as
// River's notification of the jobs it inserted, then rides with the
// COMMIT. Its error fails the transaction.
func (p *Pipe) DeferExec(on bool) { p.deferExec = on }

// batch returns a batch of the pending statements and then b's.
func (p *Pipe) batch(b *pgx.Batch) (*pgx.Batch, int) {
	n := len(p.pending)
	if n == 0 {
		return b, 0
	}
	out := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, n+b.Len())}
	for _, q := range p.pending {
		c := *q
		out.QueuedQueries = append(out.QueuedQueries, &c)
	}
	p.pending = nil
	out.QueuedQueries = append(out.QueuedQueries, b.QueuedQueries...)
	return out, n
}

// SendBatch sends the pending statements and then b's in one round trip.
func (p *Pipe) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	all, n := p.batch(b)
	br := p.conn.SendBatch(ctx, all)
	if n == 0 {
		return br
	}
	return &pipeResults{br: br, skip: all.QueuedQueries[:n]}
}

// pipeResults are a batch's results after the pending statements sent in
// front of it, which it reads first (running their callbacks).
type pipeResults struct {
	br   pgx.BatchResults
	skip []*pgx.QueuedQuery
	err  error
}

// front reads the results of the pending statements; their first error
// fails what follows.
func (r *pipeResults) front() error {
	for len(r.skip) > 0 && r.err == nil {
		q := r.skip[0]
		r.skip = r.skip[1:]
		if q.Fn != nil {
			r.err = q.Fn(r.br)
		} else {
			_, r.err = r.br.Exec()
		}
	}
	r.skip = nil
	return r.err
}

func (r *pipeResults) Exec() (pgconn.CommandTag, error) {
	if err := r.front(); err != nil {
		return pgconn.CommandTag{}, err
	}
	return r.br.Exec()
}

func (r *pipeResults) Query() (pgx.Rows, error) {
	if err := r.front(); err != nil {
		return errRows{err}, err
	}
	return r.br.Query()
}

func (r *pipeResults) QueryRow() pgx.Row {
	if err := r.front(); err != nil {
		return errRows{err}
	}
	return r.br.QueryRow()
}

// Tx is nil: the batch began no transaction (Batch.BeginTx).
func (r *pipeResults) Tx() pgx.Tx { return nil }

func (r *pipeResults) Close() error {
	err := r.front()
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// Exec sends the statement with the pending ones, or defers it
// (DeferExec).
func (p *Pipe) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	b := &pgx.Batch{}
	if p.deferExec {
		b.Queue(sql, args...)
		p.Defer(b)
		return pgconn.CommandTag{}, nil
	}
	var tag pgconn.CommandTag
	b.Queue(sql, args...).Exec(func(t pgconn.CommandTag) error {
		tag = t
		return nil
	})
	err := p.SendBatch(ctx, b).Close()
	return tag, err
}

// Query sends the query with the pending statements in front of it.
func (p *Pipe) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if len(p.pending) == 0 {
		return p.conn.Query(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := p.SendBatch(ctx, b)
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return errRows{err}, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// QueryRow is Query of one row.
func (p *Pipe) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if len(p.pending) == 0 {
		return p.conn.QueryRow(ctx, sql, args...)
	}
	rows, _ := p.Query(ctx, sql, args...)
	return rowOf{rows}
}

// Commit sends the pending statements and the COMMIT in one round trip,
// and gives the connection back. An error leaves nothing committed.
func (p *Pipe) Commit(ctx context.Context) error {
	if p.done {
		return pgx.ErrTxClosed
	}
	b := &pgx.Batch{}
	b.Queue("COMMIT")
	err := p.SendBatch(ctx, b).Close()
	if err == nil && p.conn.Conn().PgConn().TxStatus() != 'I' {
		err = pgx.ErrTxCommitRollback // a failed transaction's COMMIT rolls it back
	}
	if err != nil {
		p.rollback(ctx)
	}
	p.release()
	return err
}

// Rollback rolls the transaction back, if it began and is not over, and
// gives the connection back; after Commit it does nothing.
func (p *Pipe) Rollback(ctx context.Context) error {
	if p.done {
		return nil
	}
	p.pending = nil
	p.rollback(ctx)
	p.release()
	return nil
}

func (p *Pipe) rollback(ctx context.Context) {
	if p.conn.Conn().PgConn().TxStatus() == 'I' {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, _ = p.conn.Exec(rctx, "ROLLBACK")
}

// release gives the connection back to the pool, which closes it when it
// is still in a transaction (a ROLLBACK that failed).
func (p *Pipe) release() {
	p.done = true
	p.conn.Release()
}

// Begin fails: a Pipe has no savepoints.
func (p *Pipe) Begin(context.Context) (pgx.Tx, error) { return nil, errSavepoint }

// CopyFrom sends the pending statements, then copies.
func (p *Pipe) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if err := p.flush(ctx); err != nil {
		return 0, err
	}
	return p.conn.CopyFrom(ctx, table, cols, src)
}

// Prepare sends the pending statements, then prepares.
func (p *Pipe) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := p.flush(ctx); err != nil {
		return nil, err
	}
	return p.conn.Conn().Prepare(ctx, name, sql)
}

// LargeObjects is not supported: its zero value fails.
func (p *Pipe) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

// Conn returns the transaction's connection.
func (p *Pipe) Conn() *pgx.Conn { return p.conn.Conn() }

// flush sends the pending statements.
func (p *Pipe) flush(ctx context.Context) error {
	if len(p.pending) == 0 {
		return nil
	}
	return p.SendBatch(ctx, &pgx.Batch{}).Close()
}

// batchRows are the rows of a batch's last statement; closing them closes
// the batch.
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	closed bool
	err    error
}

func (r *batchRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.br.Close()
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// rowOf is the first row of rows, as pgx's QueryRow reads it.
type rowOf struct{ rows pgx.Rows }

func (r rowOf) Scan(dest ...any) error {
	defer r.rows.Close()
	if err := r.rows.Err(); err != nil {
		return err
	}
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// errRows are the rows of a statement that failed before it ran.
type errRows struct{ err error }

func (e errRows) Close()                                       {}
func (e errRows) Err() error                                   { return e.err }
func (e errRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (e errRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (e errRows) Next() bool                                   { return false }
func (e errRows) Scan(...any) error                            { return e.err }
func (e errRows) Values() ([]any, error)                       { return nil, e.err }
func (e errRows) RawValues() [][]byte                          { return nil }
func (e errRows) Conn() *pgx.Conn                              { return nil }
func (e errRows) TypeMap() *pgtype.Map                         { return nil }
