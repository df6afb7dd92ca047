package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/skeinhq/skein/internal/store"
)

// SaveWorkflow stores source as the next version of name, unless hash is
// the latest version's.
func (s *Store) SaveWorkflow(ctx context.Context, name string, source []byte, hash string) (store.WorkflowVersion, error) {
	op := fmt.Sprintf("saving workflow %q", name)
	if name == "" {
		return store.WorkflowVersion{}, fmt.Errorf("%s: the name is empty", op)
	}
	var wv store.WorkflowVersion
	err := s.write(ctx, op, func(tx *sql.Tx) error {
		latest, err := scanWorkflow(tx.QueryRowContext(ctx, `SELECT `+workflowCols+` FROM workflows
			WHERE name = ? ORDER BY version DESC LIMIT 1`, name))
		switch {
		case err == nil && latest.Hash == hash:
			wv = latest
			return nil
		case err == nil:
			wv.Version = latest.Version + 1
		case errors.Is(err, sql.ErrNoRows):
			wv.Version = 1
		default:
			return err
		}
		wv.Name, wv.Hash, wv.CreatedAt = name, hash, now()
		wv.Source = append([]byte{}, source...)
		_, err = tx.ExecContext(ctx, `INSERT INTO workflows (name, version, hash, source, created_at) VALUES (?, ?, ?, ?, ?)`,
			wv.Name, wv.Version, wv.Hash, wv.Source, micros(wv.CreatedAt))
		return err
	})
	if err != nil {
		return store.WorkflowVersion{}, err
	}
	return wv, nil
}

// Workflow returns a version of a workflow, the latest for version 0.
func (s *Store) Workflow(ctx context.Context, name string, version int) (store.WorkflowVersion, error) {
	what := fmt.Sprintf("workflow %q", name)
	q := `SELECT ` + workflowCols + ` FROM workflows WHERE name = ? ORDER BY version DESC LIMIT 1`
	args := []any{name}
	if version != 0 {
		what = fmt.Sprintf("workflow %q version %d", name, version)
		q = `SELECT ` + workflowCols + ` FROM workflows WHERE name = ? AND version = ?`
		args = append(args, version)
	}
	wv, err := scanWorkflow(s.r.QueryRowContext(ctx, q, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return store.WorkflowVersion{}, fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	if err != nil {
		return store.WorkflowVersion{}, s.failed("reading "+what, err)
	}
	return wv, nil
}

const workflowCols = `name, version, hash, source, created_at`

func scanWorkflow(row *sql.Row) (store.WorkflowVersion, error) {
	var wv store.WorkflowVersion
	var created int64
	if err := row.Scan(&wv.Name, &wv.Version, &wv.Hash, &wv.Source, &created); err != nil {
		return store.WorkflowVersion{}, err
	}
	if wv.Source == nil {
		wv.Source = []byte{}
	}
	wv.CreatedAt = fromMicros(created)
	return wv, nil
}

// CreateRun stores a new run.
func (s *Store) CreateRun(ctx context.Context, r *store.Run) error {
	if r == nil || r.ID == "" {
		return errors.New("creating a run: the run has no id")
	}
	op := fmt.Sprintf("creating run %s", r.ID)
	if r.Status == "" {
		r.Status = "pending"
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = now()
	}
	if r.Generation <= 0 {
		r.Generation = 1
	}
	args, err := runArgs(r)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	args = append([]any{r.ID}, args...)
	args = append(args, r.Owner.Host, r.Owner.PID, r.Owner.Token, r.Generation, r.Owner.Token, r.LeaseTTL.Microseconds())
	if err := s.prepared(ctx); err != nil {
		return s.failed(op, err)
	}
	if err := ctx.Err(); err != nil {
		return s.failed(op, err) // the group's transaction would not see it
	}
	return s.creates.do(ctx, s, &create{run: r, args: args, op: op})
}

// create is one CreateRun waiting for its transaction.
type create struct {
	run  *store.Run
	args []any
	op   string
	err  error
	done chan struct{}
}

// creates groups the CreateRun calls made at the same time into one
// transaction: a server taking hundreds of webhooks a second pays one
// commit for all the runs that arrived while the last one was written.
// The first caller with nothing in progress writes the group; the others
// wait for it.
type creates struct {
	mu      sync.Mutex
	queue   []*create
	writing bool
}

func (g *creates) do(ctx context.Context, s *Store, c *create) error {
	c.done = make(chan struct{})
	g.mu.Lock()
	g.queue = append(g.queue, c)
	if g.writing {
		g.mu.Unlock()
		<-c.done
		return c.err
	}
	g.writing = true
	for len(g.queue) > 0 {
		group := g.queue
		g.queue = nil
		g.mu.Unlock()
		s.createGroup(context.WithoutCancel(ctx), group)
		for _, c := range group {
			close(c.done)
		}
		g.mu.Lock()
	}
	g.writing = false
	g.mu.Unlock()
	return c.err
}

// createGroup inserts the runs of a group in one transaction; each that
// exists already fails alone (store.ErrExists). When the transaction
// fails, each run is tried in a transaction of its own, so one bad run
// fails no other.
func (s *Store) createGroup(ctx context.Context, group []*create) {
	insert := func(tx *sql.Tx, c *create) error {
		var until int64
		err := tx.StmtContext(ctx, s.insertRunSt).QueryRowContext(ctx, c.args...).Scan(&until)
		if errors.Is(err, sql.ErrNoRows) {
			c.err = s.failed(c.op, fmt.Errorf("run %s: %w", c.run.ID, store.ErrExists))
			return nil
		}
		if err != nil {
			return err
		}
		c.err = nil
		if until > 0 {
			c.run.LeaseUntil = fromMicros(until)
		}
		return nil
	}
	if len(group) > 1 {
		err := s.write(ctx, "creating runs", func(tx *sql.Tx) error {
			for _, c := range group {
				if err := insert(tx, c); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			return
		}
	}
	for _, c := range group {
		if err := s.write(ctx, c.op, func(tx *sql.Tx) error { return insert(tx, c) }); err != nil {
			c.err = err
		}
	}
}

// insertRun creates a run; a run with an owner gets a lease of the given
// length from the database's now.
const insertRun = `INSERT INTO runs (id, ` + runCols + `, owner_host, owner_pid, owner_token, generation, lease_until)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, CASE WHEN ? <> '' THEN ` + dbNow + ` + ? ELSE 0 END)
	ON CONFLICT (id) DO NOTHING RETURNING lease_until`

// dbNow is the database's clock in microseconds: leases are timed by it,
// so the processes that share a database agree on who holds what.
const dbNow = `CAST(unixepoch('subsec') * 1000000 AS INTEGER)`

// ClaimRun makes o the owner of a run without a live owner.
func (s *Store) ClaimRun(ctx context.Context, id string, o store.Owner, ttl time.Duration, takeover string) (*store.Run, error) {
	if o.Token == "" {
		return nil, fmt.Errorf("claiming run %s: the owner has no token", id)
	}
	var claimed *store.Run
	err := s.write(ctx, "claiming run "+id, func(tx *sql.Tx) error {
		r, err := scanRun(tx.QueryRowContext(ctx, `UPDATE runs SET owner_host = ?, owner_pid = ?, owner_token = ?,
				lease_until = `+dbNow+` + ?, generation = generation + 1, status = 'running',
				cancel_requested_at = NULL, finished_at = NULL, error = NULL, wake_at = NULL
			WHERE id = ? AND (owner_token = '' OR lease_until < `+dbNow+` OR (? <> '' AND owner_token = ?))
			RETURNING id, `+readCols, o.Host, o.PID, o.Token, ttl.Microseconds(), id, takeover, takeover))
		if err == nil {
			claimed = r
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		cur, err := scanRun(tx.QueryRowContext(ctx, `SELECT id, `+readCols+` FROM runs WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		return &store.OwnedError{RunID: id, Owner: cur.Owner, LeaseUntil: cur.LeaseUntil}
	})
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// RenewLease extends the lease of token and reports a cancel request.
func (s *Store) RenewLease(ctx context.Context, id, token string, ttl time.Duration) (bool, error) {
	var cancel sql.NullInt64
	err := s.write(ctx, "renewing the lease of run "+id, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `UPDATE runs SET lease_until = `+dbNow+` + ?
			WHERE id = ? AND owner_token = ? AND ? <> '' RETURNING cancel_requested_at`,
			ttl.Microseconds(), id, token, token).Scan(&cancel)
		if errors.Is(err, sql.ErrNoRows) {
			if err := runExists(ctx, tx, id); err != nil {
				return err
			}
			return fmt.Errorf("run %s: %w", id, store.ErrLeaseLost)
		}
		return err
	})
	return cancel.Valid, err
}

// RequestCancel records a cancel request for the run's owner.
func (s *Store) RequestCancel(ctx context.Context, id string, letFinish bool) (*store.Run, error) {
	var r *store.Run
	err := s.write(ctx, "requesting the cancel of run "+id, func(tx *sql.Tx) error {
		var err error
		r, err = scanRun(tx.QueryRowContext(ctx, `UPDATE runs SET cancel_requested_at = COALESCE(cancel_requested_at, ?),
			cancel_let_finish = ? AND (cancel_requested_at IS NULL OR cancel_let_finish)
			WHERE id = ? RETURNING id, `+readCols, micros(now()), letFinish, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
		}
		return err
	})
	return r, err
}

// UpdateRun replaces the fields of the run r.ID.
func (s *Store) UpdateRun(ctx context.Context, r *store.Run) error {
	if r == nil || r.ID == "" {
		return errors.New("updating a run: the run has no id")
	}
	op := fmt.Sprintf("updating run %s", r.ID)
	args, err := runArgs(r)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	set := make([]string, 0, len(args))
	for _, c := range strings.Split(runCols, ",") {
		set = append(set, strings.TrimSpace(c)+" = ?")
	}
	return s.write(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET `+strings.Join(set, ", ")+` WHERE id = ?`, append(args, r.ID)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("run %s: %w", r.ID, store.ErrNotFound)
		}
		return nil
	})
}

// runCols are the columns of a run after its id, in runArgs' order.
const runCols = `workflow, workflow_version, file, dir, parent_id, trigger_node, status,
	inputs, outputs, error, started_at, finished_at, tokens, cost_usd`

// readCols are what scanRun reads after the id: runCols, the owner, the
// lease and whether it expired by the database's clock.
const readCols = runCols + `, owner_host, owner_pid, owner_token, lease_until,
	(owner_token = '' OR lease_until < ` + dbNow + `), cancel_requested_at, generation, wake_at, cancel_let_finish`

func runArgs(r *store.Run) ([]any, error) {
	inputs, err := store.EncodeMap(r.Inputs)
	if err != nil {
		return nil, fmt.Errorf("encoding the inputs: %w", err)
	}
	outputs, err := store.EncodeMap(r.Outputs)
	if err != nil {
		return nil, fmt.Errorf("encoding the outputs: %w", err)
	}
	runErr, err := store.EncodeError(r.Error)
	if err != nil {
		return nil, fmt.Errorf("encoding the error: %w", err)
	}
	return []any{r.Workflow, r.WorkflowVersion, r.File, r.Dir, r.ParentID, r.Trigger, r.Status,
		text(inputs), text(outputs), text(runErr), micros(r.StartedAt), microsPtr(r.FinishedAt), r.Tokens, r.CostUSD}, nil
}

// Run returns the run id.
func (s *Store) Run(ctx context.Context, id string) (*store.Run, error) {
	r, err := scanRun(s.r.QueryRowContext(ctx, `SELECT id, `+readCols+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, s.failed("reading run "+id, err)
	}
	return r, nil
}

// ListRuns returns the runs that match f, newest first.
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]*store.Run, error) {
	var where []string
	var args []any
	if f.Workflow != "" {
		where, args = append(where, "workflow = ?"), append(args, f.Workflow)
	}
	switch f.Status {
	case "":
	case "interrupted":
		// A waiting run has no owner by design: it is not interrupted.
		where = append(where, "status IN ('running', 'pending') AND (owner_token = '' OR lease_until < "+dbNow+")")
	default:
		where, args = append(where, "status = ?"), append(args, f.Status)
	}
	if f.Parent != "" {
		where, args = append(where, "parent_id = ?"), append(args, f.Parent)
	}
	if !f.Before.IsZero() {
		where, args = append(where, "started_at < ?"), append(args, micros(f.Before))
	}
	if !f.DueBy.IsZero() {
		where = append(where, "status = 'waiting' AND wake_at <= ? AND (owner_token = '' OR lease_until < "+dbNow+")")
		args = append(args, micros(f.DueBy))
	}
	q := `SELECT id, ` + readCols + ` FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY started_at DESC, id DESC`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.failed("listing runs", err)
	}
	runs, err := scanRuns(rows)
	if err != nil {
		return nil, s.failed("listing runs", err)
	}
	return runs, nil
}

// DeleteRuns deletes the runs started before the given time and their
// child runs, keeping those with a live lease and what is under them, and
// returns them oldest first.
func (s *Store) DeleteRuns(ctx context.Context, before time.Time, dryRun bool) ([]*store.Run, error) {
	var runs []*store.Run
	// doomed: the old top-level runs and, recursively, their children;
	// live: runs with a live lease and, recursively, their parents, which
	// are kept so a live child is never orphaned.
	const doomed = `WITH RECURSIVE
		live(id, parent_id) AS (
			SELECT id, parent_id FROM runs WHERE owner_token <> '' AND lease_until >= ` + dbNow + `
			UNION SELECT r.id, r.parent_id FROM runs r JOIN live ON r.id = live.parent_id),
		old(id) AS (
			SELECT id FROM runs WHERE started_at < ? AND (parent_id = '' OR parent_id NOT IN (SELECT id FROM runs))
				AND id NOT IN (SELECT id FROM live)
			UNION SELECT r.id FROM runs r JOIN old ON r.parent_id = old.id WHERE r.id NOT IN (SELECT id FROM live))
		SELECT id FROM old`
	err := s.write(ctx, "deleting old runs", func(tx *sql.Tx) error {
		q := `DELETE FROM runs WHERE id IN (` + doomed + `) RETURNING id, ` + readCols
		if dryRun {
			q = `SELECT id, ` + readCols + ` FROM runs WHERE id IN (` + doomed + `)`
		}
		rows, err := tx.QueryContext(ctx, q, micros(before))
		if err != nil {
			return err
		}
		runs, err = scanRuns(rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].StartedAt.Equal(runs[j].StartedAt) {
			return runs[i].StartedAt.Before(runs[j].StartedAt)
		}
		return runs[i].ID < runs[j].ID
	})
	return runs, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanRuns(rows *sql.Rows) ([]*store.Run, error) {
	defer func() { _ = rows.Close() }()
	var runs []*store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return runs, rows.Close()
}

func scanRun(sc scanner) (*store.Run, error) {
	var r store.Run
	var inputs, outputs, runErr []byte
	var started, lease int64
	var finished, cancel, wake sql.NullInt64
	if err := sc.Scan(&r.ID, &r.Workflow, &r.WorkflowVersion, &r.File, &r.Dir, &r.ParentID, &r.Trigger, &r.Status,
		&inputs, &outputs, &runErr, &started, &finished, &r.Tokens, &r.CostUSD,
		&r.Owner.Host, &r.Owner.PID, &r.Owner.Token, &lease, &r.LeaseExpired, &cancel, &r.Generation, &wake,
		&r.CancelLetFinish); err != nil {
		return nil, err
	}
	if lease > 0 {
		r.LeaseUntil = fromMicros(lease)
	}
	r.CancelRequested = fromMicrosPtr(cancel)
	r.WakeAt = fromMicrosPtr(wake)
	var err error
	if r.Inputs, err = store.DecodeMap(inputs); err != nil {
		return nil, fmt.Errorf("run %s: decoding the inputs: %w", r.ID, err)
	}
	if r.Outputs, err = store.DecodeMap(outputs); err != nil {
		return nil, fmt.Errorf("run %s: decoding the outputs: %w", r.ID, err)
	}
	if r.Error, err = store.DecodeError(runErr); err != nil {
		return nil, fmt.Errorf("run %s: decoding the error: %w", r.ID, err)
	}
	r.StartedAt = fromMicros(started)
	r.FinishedAt = fromMicrosPtr(finished)
	return &r, nil
}

// Times are stored as microseconds since the Unix epoch.

func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

func micros(t time.Time) int64 { return t.UnixMicro() }

func microsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMicro()
}

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func fromMicrosPtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

// text passes JSON to a TEXT column: NULL for nil.
func text(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}
