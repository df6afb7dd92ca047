package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinhq/skein/internal/store"
)

// Advisory locks (with a key's hashtext) that serialise writers which
// number rows by a key that has no row to lock.
const (
	lockWorkflow = 0x736b01 // SaveWorkflow: the versions of a name
	lockChat     = 0x736b02 // AddChatTurn: the turns of a conversation
)

// SaveWorkflow stores source as the next version of name, unless hash is
// the latest version's.
func (s *Store) SaveWorkflow(ctx context.Context, name string, source []byte, hash string) (store.WorkflowVersion, error) {
	op := fmt.Sprintf("saving workflow %q", name)
	if name == "" {
		return store.WorkflowVersion{}, fmt.Errorf("%s: the name is empty", op)
	}
	var wv store.WorkflowVersion
	err := s.write(ctx, op, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(lockWorkflow), name); err != nil {
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
		case errors.Is(err, pgx.ErrNoRows):
			wv.Version = 1
		default:
			return err
		}
		wv.Name, wv.Hash, wv.CreatedAt = name, hash, now()
		wv.Source = append([]byte{}, source...)
		_, err = tx.Exec(ctx, `INSERT INTO workflows (name, version, hash, source, created_at) VALUES ($1, $2, $3, $4, $5)`,
			wv.Name, wv.Version, wv.Hash, wv.Source, wv.CreatedAt)
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
	q := `SELECT ` + workflowCols + ` FROM workflows WHERE name = $1 ORDER BY version DESC LIMIT 1`
	args := []any{name}
	if version != 0 {
		what = fmt.Sprintf("workflow %q version %d", name, version)
		q = `SELECT ` + workflowCols + ` FROM workflows WHERE name = $1 AND version = $2`
		args = append(args, version)
	}
	wv, err := scanWorkflow(s.pool.QueryRow(ctx, q, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.WorkflowVersion{}, fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	if err != nil {
		return store.WorkflowVersion{}, s.failed("reading "+what, err)
	}
	return wv, nil
}

const workflowCols = `name, version, hash, source, created_at`

func scanWorkflow(row pgx.Row) (store.WorkflowVersion, error) {
	var wv store.WorkflowVersion
	if err := row.Scan(&wv.Name, &wv.Version, &wv.Hash, &wv.Source, &wv.CreatedAt); err != nil {
		return store.WorkflowVersion{}, err
	}
	if wv.Source == nil {
		wv.Source = []byte{}
	}
	wv.CreatedAt = wv.CreatedAt.UTC()
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
	args = append(args, r.Owner.Host, r.Owner.PID, r.Owner.Token, r.Generation, micros(r.LeaseTTL))
	return s.write(ctx, op, func(tx pgx.Tx) error {
		var until *time.Time
		err := tx.QueryRow(ctx, insertRun, args...).Scan(&until)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %s: %w", r.ID, store.ErrExists)
		}
		if err != nil {
			return err
		}
		if until != nil {
			r.LeaseUntil = until.UTC()
		}
		return nil
	})
}

// insertRun creates a run; a run with an owner gets a lease of the given
// length from the database's now.
const insertRun = `INSERT INTO runs (id, ` + runCols + `, owner_host, owner_pid, owner_token, generation, lease_until)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19,
		CASE WHEN $18 <> '' THEN ` + dbNow + ` + $20::float8 * interval '1 microsecond' END)
	ON CONFLICT (id) DO NOTHING RETURNING lease_until`

// ClaimRun makes o the owner of a run without a live owner.
func (s *Store) ClaimRun(ctx context.Context, id string, o store.Owner, ttl time.Duration, takeover string) (*store.Run, error) {
	if o.Token == "" {
		return nil, fmt.Errorf("claiming run %s: the owner has no token", id)
	}
	var claimed *store.Run
	err := s.write(ctx, "claiming run "+id, func(tx pgx.Tx) error {
		// Of claims at once, one updates the row; the others wait for
		// its lock, find the WHERE clause false on the new row and
		// update nothing.
		r, err := scanRun(tx.QueryRow(ctx, `UPDATE runs SET owner_host = $2, owner_pid = $3, owner_token = $4,
				lease_until = `+dbNow+` + $5::float8 * interval '1 microsecond', generation = generation + 1, status = 'running',
				cancel_requested_at = NULL, finished_at = NULL, error = NULL, wake_at = NULL
			WHERE id = $1 AND (owner_token = '' OR lease_until IS NULL OR lease_until < `+dbNow+` OR ($6 <> '' AND owner_token = $6))
			RETURNING `+readCols, id, o.Host, o.PID, o.Token, micros(ttl), takeover))
		if err == nil {
			claimed = r
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		cur, err := scanRun(tx.QueryRow(ctx, `SELECT `+readCols+` FROM runs WHERE id = $1`, id))
		if errors.Is(err, pgx.ErrNoRows) {
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
	var cancel bool
	err := s.write(ctx, "renewing the lease of run "+id, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE runs SET lease_until = `+dbNow+` + $3::float8 * interval '1 microsecond'
			WHERE id = $1 AND owner_token = $2 AND $2 <> '' RETURNING cancel_requested_at IS NOT NULL`,
			id, token, micros(ttl)).Scan(&cancel)
		if errors.Is(err, pgx.ErrNoRows) {
			if err := runExists(ctx, tx, id); err != nil {
				return err
			}
			return fmt.Errorf("run %s: %w", id, store.ErrLeaseLost)
		}
		return err
	})
	return cancel, err
}

// RequestCancel records a cancel request for the run's owner.
func (s *Store) RequestCancel(ctx context.Context, id string, letFinish bool) (*store.Run, error) {
	var r *store.Run
	err := s.write(ctx, "requesting the cancel of run "+id, func(tx pgx.Tx) error {
		var err error
		r, err = scanRun(tx.QueryRow(ctx, `UPDATE runs SET cancel_requested_at = COALESCE(cancel_requested_at, $2),
			cancel_let_finish = $3 AND (cancel_requested_at IS NULL OR cancel_let_finish)
			WHERE id = $1 RETURNING `+readCols, id, now(), letFinish))
		if errors.Is(err, pgx.ErrNoRows) {
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
	for i, c := range strings.Split(runCols, ",") {
		set = append(set, fmt.Sprintf("%s = $%d", strings.TrimSpace(c), i+2))
	}
	return s.write(ctx, op, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE runs SET `+strings.Join(set, ", ")+` WHERE id = $1`, append([]any{r.ID}, args...)...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("run %s: %w", r.ID, store.ErrNotFound)
		}
		return nil
	})
}

// runCols are the columns of a run after its id, in runArgs' order.
const runCols = `workflow, workflow_version, file, dir, parent_id, trigger_node, status,
	inputs, outputs, error, started_at, finished_at, tokens, cost_usd`

// readCols are what scanRun reads: the id, runCols, the owner, the lease
// and whether it expired by the database's clock.
const readCols = `id, ` + runCols + `, owner_host, owner_pid, owner_token, lease_until,
	(owner_token = '' OR lease_until IS NULL OR lease_until < ` + dbNow + `), cancel_requested_at, generation, wake_at, cancel_let_finish`

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
		inputs, outputs, runErr, ts(r.StartedAt), tsPtr(r.FinishedAt), r.Tokens, r.CostUSD}, nil
}

// Run returns the run id.
func (s *Store) Run(ctx context.Context, id string) (*store.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+readCols+` FROM runs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
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
		where = append(where, "status IN ('running', 'pending') AND (owner_token = '' OR lease_until IS NULL OR lease_until < "+dbNow+")")
	default:
		where = append(where, "status = "+arg(f.Status))
	}
	if f.Parent != "" {
		where = append(where, "parent_id = "+arg(f.Parent))
	}
	if !f.Before.IsZero() {
		where = append(where, "started_at < "+arg(ts(f.Before)))
	}
	if !f.DueBy.IsZero() {
		where = append(where, "status = 'waiting' AND wake_at <= "+arg(ts(f.DueBy))+
			" AND (owner_token = '' OR lease_until IS NULL OR lease_until < "+dbNow+")")
	}
	q := `SELECT ` + readCols + ` FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY started_at DESC, id DESC`
	if f.Limit > 0 {
		q += ` LIMIT ` + arg(f.Limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
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
			SELECT id FROM runs WHERE started_at < $1 AND (parent_id = '' OR parent_id NOT IN (SELECT id FROM runs))
				AND id NOT IN (SELECT id FROM live)
			UNION SELECT r.id FROM runs r JOIN old ON r.parent_id = old.id WHERE r.id NOT IN (SELECT id FROM live))
		`
	err := s.write(ctx, "deleting old runs", func(tx pgx.Tx) error {
		q := doomed + `DELETE FROM runs WHERE id IN (SELECT id FROM old) RETURNING ` + readCols
		if dryRun {
			q = doomed + `SELECT ` + readCols + ` FROM runs WHERE id IN (SELECT id FROM old)`
		}
		rows, err := tx.Query(ctx, q, ts(before))
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

func scanRuns(rows pgx.Rows) ([]*store.Run, error) {
	defer rows.Close()
	var runs []*store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, rows.Err()
}

func scanRun(sc pgx.Row) (*store.Run, error) {
	var r store.Run
	var inputs, outputs, runErr []byte
	var lease, finished, cancel, wake *time.Time
	if err := sc.Scan(&r.ID, &r.Workflow, &r.WorkflowVersion, &r.File, &r.Dir, &r.ParentID, &r.Trigger, &r.Status,
		&inputs, &outputs, &runErr, &r.StartedAt, &finished, &r.Tokens, &r.CostUSD,
		&r.Owner.Host, &r.Owner.PID, &r.Owner.Token, &lease, &r.LeaseExpired, &cancel, &r.Generation, &wake,
		&r.CancelLetFinish); err != nil {
		return nil, err
	}
	if lease != nil && r.Owner.Token != "" {
		r.LeaseUntil = lease.UTC()
	}
	r.StartedAt = r.StartedAt.UTC()
	r.FinishedAt, r.CancelRequested, r.WakeAt = utc(finished), utc(cancel), utc(wake)
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
	return &r, nil
}

// runExists returns an error wrapping store.ErrNotFound when there is no
// run id.
func runExists(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, id string) error {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM runs WHERE id = $1`, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	return err
}
