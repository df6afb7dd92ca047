package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/skeinhq/skein/internal/store"
)

// Classes of the keys LockKey locks.
const (
	lockWorkflow = 0x736b01 // SaveWorkflow: the versions of a name
	lockChat     = 0x736b02 // AddChatTurn: the turns of a conversation
)

// lockKey takes the dialect's lock on key, if it has one.
func (c *Core) lockKey(ctx context.Context, tx Querier, class int32, key string) error {
	if c.d.LockKey == "" {
		return nil
	}
	_, err := tx.Exec(ctx, c.d.LockKey, class, key)
	return err
}

// SaveWorkflow stores source as the next version of name, unless hash is
// the latest version's.
func (c *Core) SaveWorkflow(ctx context.Context, name string, source []byte, hash string) (store.WorkflowVersion, error) {
	op := fmt.Sprintf("saving workflow %q", name)
	if name == "" {
		return store.WorkflowVersion{}, fmt.Errorf("%s: the name is empty", op)
	}
	var wv store.WorkflowVersion
	err := c.db.Write(ctx, op, func(tx Querier) error {
		if err := c.lockKey(ctx, tx, lockWorkflow, name); err != nil {
			return err
		}
		latest, err := scanWorkflow(tx.QueryRow(ctx, `SELECT `+workflowCols+` FROM workflows
			WHERE name = $1 ORDER BY version DESC LIMIT 1`, name))
		switch {
		case err == nil && latest.Hash == hash:
			wv = latest
			return nil
		case err == nil:
			wv.Version = latest.Version + 1
		case noRows(err):
			wv.Version = 1
		default:
			return err
		}
		wv.Name, wv.Hash, wv.CreatedAt = name, hash, Now()
		wv.Source = append([]byte{}, source...)
		_, err = tx.Exec(ctx, `INSERT INTO workflows (name, version, hash, source, created_at) VALUES ($1, $2, $3, $4, $5)`,
			wv.Name, wv.Version, wv.Hash, wv.Source, c.time(wv.CreatedAt))
		return err
	})
	if err != nil {
		return store.WorkflowVersion{}, err
	}
	return wv, nil
}

// Workflow returns a version of a workflow, the latest for version 0.
func (c *Core) Workflow(ctx context.Context, name string, version int) (store.WorkflowVersion, error) {
	what := fmt.Sprintf("workflow %q", name)
	q := `SELECT ` + workflowCols + ` FROM workflows WHERE name = $1 ORDER BY version DESC LIMIT 1`
	args := []any{name}
	if version != 0 {
		what = fmt.Sprintf("workflow %q version %d", name, version)
		q = `SELECT ` + workflowCols + ` FROM workflows WHERE name = $1 AND version = $2`
		args = append(args, version)
	}
	wv, err := scanWorkflow(c.db.Read().QueryRow(ctx, q, args...))
	if noRows(err) {
		return store.WorkflowVersion{}, fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	if err != nil {
		return store.WorkflowVersion{}, c.db.Failed("reading "+what, err)
	}
	return wv, nil
}

const workflowCols = `name, version, hash, source, created_at`

func scanWorkflow(row Row) (store.WorkflowVersion, error) {
	var wv store.WorkflowVersion
	var created Time
	if err := row.Scan(&wv.Name, &wv.Version, &wv.Hash, &wv.Source, &created); err != nil {
		return store.WorkflowVersion{}, err
	}
	if wv.Source == nil {
		wv.Source = []byte{}
	}
	wv.CreatedAt = created.T
	return wv, nil
}

// CreateRunArgs fills in the defaults of a new run (status pending,
// started now, generation 1) and returns the arguments of SQL.InsertRun.
func (s *Statements) CreateRunArgs(r *store.Run) ([]any, error) {
	if r == nil || r.ID == "" {
		return nil, errors.New("creating a run: the run has no id")
	}
	if r.Status == "" {
		r.Status = "pending"
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = Now()
	}
	if r.Generation <= 0 {
		r.Generation = 1
	}
	args, err := s.c.runArgs(r)
	if err != nil {
		return nil, fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	args = append([]any{r.ID}, args...)
	return append(args, r.Owner.Host, r.Owner.PID, r.Owner.Token, r.Generation, s.c.d.Duration(r.LeaseTTL)), nil
}

// Created reads the row SQL.InsertRun returned for r: the run's lease,
// or store.ErrExists when its id was taken.
func (s *Statements) Created(r *store.Run, row Row) error {
	var until Time
	err := row.Scan(&until)
	if noRows(err) {
		return fmt.Errorf("run %s: %w", r.ID, store.ErrExists)
	}
	if err != nil {
		return err
	}
	if until.Valid {
		r.LeaseUntil = until.T
	}
	return nil
}

// ClaimRun makes o the owner of a run without a live owner.
func (c *Core) ClaimRun(ctx context.Context, id string, o store.Owner, ttl time.Duration, takeover string) (*store.Run, error) {
	if o.Token == "" {
		return nil, fmt.Errorf("claiming run %s: the owner has no token", id)
	}
	var claimed *store.Run
	err := c.db.Write(ctx, "claiming run "+id, func(tx Querier) error {
		// Of claims at once, one updates the row; the others wait for
		// its lock, find the WHERE clause false on the new row and
		// update nothing.
		r, err := ScanRun(tx.QueryRow(ctx, `UPDATE runs SET owner_host = $2, owner_pid = $3, owner_token = $4,
				lease_until = `+c.d.AddMicros(c.d.Now, "$5")+`, generation = generation + 1, status = 'running',
				cancel_requested_at = NULL, finished_at = NULL, error = NULL, wake_at = NULL
			WHERE id = $1 AND (`+c.expired+` OR ($6 <> '' AND owner_token = $6))
			RETURNING `+c.readCols(), id, o.Host, o.PID, o.Token, c.d.Duration(ttl), takeover))
		if err == nil {
			claimed = r
			return nil
		}
		if !noRows(err) {
			return err
		}
		cur, err := ScanRun(tx.QueryRow(ctx, c.st.ReadRun, id))
		if noRows(err) {
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
func (c *Core) RenewLease(ctx context.Context, id, token string, ttl time.Duration) (bool, error) {
	var cancel bool
	err := c.db.Write(ctx, "renewing the lease of run "+id, func(tx Querier) error {
		err := tx.QueryRow(ctx, `UPDATE runs SET lease_until = `+c.d.AddMicros(c.d.Now, "$3")+`
			WHERE id = $1 AND owner_token = $2 AND $2 <> '' RETURNING cancel_requested_at IS NOT NULL`,
			id, token, c.d.Duration(ttl)).Scan(&cancel)
		if noRows(err) {
			if err := exists(ctx, tx, id); err != nil {
				return err
			}
			return fmt.Errorf("run %s: %w", id, store.ErrLeaseLost)
		}
		return err
	})
	return cancel, err
}

// RequestCancel records a cancel request for the run's owner.
// letFinish lets the running nodes finish; a request without it makes an
// earlier one with it stop them, never the reverse.
func (c *Core) RequestCancel(ctx context.Context, id string, letFinish bool) (*store.Run, error) {
	var r *store.Run
	err := c.db.Write(ctx, "requesting the cancel of run "+id, func(tx Querier) error {
		var err error
		r, err = ScanRun(tx.QueryRow(ctx, `UPDATE runs SET cancel_requested_at = COALESCE(cancel_requested_at, $2),
			cancel_let_finish = $3 AND (cancel_requested_at IS NULL OR cancel_let_finish)
			WHERE id = $1 RETURNING `+c.readCols(), id, c.time(Now()), letFinish))
		if noRows(err) {
			return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
		}
		return err
	})
	return r, err
}

// UpdateRun replaces the fields of the run r.ID.
func (c *Core) UpdateRun(ctx context.Context, r *store.Run) error {
	if r == nil || r.ID == "" {
		return errors.New("updating a run: the run has no id")
	}
	op := fmt.Sprintf("updating run %s", r.ID)
	args, err := c.runArgs(r)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	set := make([]string, 0, len(args))
	for i, col := range strings.Split(runCols, ",") {
		set = append(set, fmt.Sprintf("%s = $%d", strings.TrimSpace(col), i+2))
	}
	return c.db.Write(ctx, op, func(tx Querier) error {
		n, err := tx.Exec(ctx, `UPDATE runs SET `+strings.Join(set, ", ")+` WHERE id = $1`, append([]any{r.ID}, args...)...)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("run %s: %w", r.ID, store.ErrNotFound)
		}
		return nil
	})
}

// runCols are the columns of a run after its id, in runArgs' order.
const runCols = `workflow, workflow_version, file, dir, parent_id, trigger_node, status,
	inputs, outputs, error, started_at, finished_at, tokens, cost_usd, source, replay_of`

// readCols are what ScanRun reads: the id, runCols, the owner, the lease
// and whether it expired by the database's clock.
func (c *Core) readCols() string {
	return `id, ` + runCols + `, owner_host, owner_pid, owner_token, lease_until,
	` + c.expired + `, cancel_requested_at, generation, wake_at, cancel_let_finish`
}

func (c *Core) runArgs(r *store.Run) ([]any, error) {
	docs, err := c.encode(r.Error, doc{"inputs", r.Inputs}, doc{"outputs", r.Outputs})
	if err != nil {
		return nil, err
	}
	return []any{r.Workflow, r.WorkflowVersion, r.File, r.Dir, r.ParentID, r.Trigger, r.Status,
		docs[0], docs[1], docs[2], c.time(r.StartedAt), c.timePtr(r.FinishedAt), r.Tokens, r.CostUSD,
		r.Source, r.ReplayOf}, nil
}

// Run returns the run id.
func (c *Core) Run(ctx context.Context, id string) (*store.Run, error) {
	r, err := ScanRun(c.db.Read().QueryRow(ctx, c.st.ReadRun, id))
	if noRows(err) {
		return nil, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, c.db.Failed("reading run "+id, err)
	}
	return r, nil
}

// ListRuns returns the runs that match f, newest first.
func (c *Core) ListRuns(ctx context.Context, f store.RunFilter) ([]*store.Run, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.Workflow != "" {
		where = append(where, "workflow = "+arg(f.Workflow))
	}
	switch f.Status {
	case "":
	case "interrupted":
		// A waiting run has no owner by design: it is not interrupted.
		where = append(where, "status IN ('running', 'pending') AND "+c.expired)
	default:
		where = append(where, "status = "+arg(f.Status))
	}
	if f.Parent != "" {
		where = append(where, "parent_id = "+arg(f.Parent))
	}
	if !f.Before.IsZero() {
		where = append(where, "started_at < "+arg(c.time(f.Before)))
	}
	if !f.DueBy.IsZero() {
		where = append(where, "status = 'waiting' AND wake_at <= "+arg(c.time(f.DueBy))+" AND "+c.expired)
	}
	q := `SELECT ` + c.readCols() + ` FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY started_at DESC, id DESC`
	if f.Limit > 0 {
		q += ` LIMIT ` + arg(f.Limit)
	}
	rows, err := c.db.Read().Query(ctx, q, args...)
	return collect(c, "listing runs", rows, err, ScanRun)
}

// DeleteRuns deletes the runs started before the given time and their
// child runs, keeping those with a live lease and what is under them, and
// returns them oldest first.
func (c *Core) DeleteRuns(ctx context.Context, before time.Time, dryRun bool) ([]*store.Run, error) {
	var runs []*store.Run
	// old: the old top-level runs and, recursively, their children;
	// live: runs with a live lease and, recursively, their parents, which
	// are kept so a live child is never orphaned.
	doomed := `WITH RECURSIVE
		live(id, parent_id) AS (
			SELECT id, parent_id FROM runs WHERE NOT ` + c.expired + `
			UNION SELECT r.id, r.parent_id FROM runs r JOIN live ON r.id = live.parent_id),
		old(id) AS (
			SELECT id FROM runs WHERE started_at < $1 AND (parent_id = '' OR parent_id NOT IN (SELECT id FROM runs))
				AND id NOT IN (SELECT id FROM live)
			UNION SELECT r.id FROM runs r JOIN old ON r.parent_id = old.id WHERE r.id NOT IN (SELECT id FROM live))
		`
	err := c.db.Write(ctx, "deleting old runs", func(tx Querier) error {
		q := doomed + `DELETE FROM runs WHERE id IN (SELECT id FROM old) RETURNING ` + c.readCols()
		if dryRun {
			q = doomed + `SELECT ` + c.readCols() + ` FROM runs WHERE id IN (SELECT id FROM old)`
		}
		rows, err := tx.Query(ctx, q, c.time(before))
		if err != nil {
			return err
		}
		runs, err = collect(c, "deleting old runs", rows, nil, ScanRun)
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

// ScanRun reads a run's row as SQL.ReadRun selects it.
func ScanRun(sc Row) (*store.Run, error) {
	var r store.Run
	var inputs, outputs, runErr []byte
	var started, finished, lease, cancel, wake Time
	if err := sc.Scan(&r.ID, &r.Workflow, &r.WorkflowVersion, &r.File, &r.Dir, &r.ParentID, &r.Trigger, &r.Status,
		&inputs, &outputs, &runErr, &started, &finished, &r.Tokens, &r.CostUSD, &r.Source, &r.ReplayOf,
		&r.Owner.Host, &r.Owner.PID, &r.Owner.Token, &lease, &r.LeaseExpired, &cancel, &r.Generation, &wake,
		&r.CancelLetFinish); err != nil {
		return nil, err
	}
	if r.Owner.Token != "" {
		r.LeaseUntil = lease.T
	}
	r.StartedAt = started.T
	r.FinishedAt, r.CancelRequested, r.WakeAt = finished.Ptr(), cancel.Ptr(), wake.Ptr()
	if err := decode(runErr, &r.Error, decoded{"inputs", inputs, &r.Inputs}, decoded{"outputs", outputs, &r.Outputs}); err != nil {
		return nil, fmt.Errorf("run %s: %w", r.ID, err)
	}
	return &r, nil
}
