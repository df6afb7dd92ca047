package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlstore"
)

// Changes are the step records of one generation of a run that were
// written since an earlier look (StepsSince).
type Changes struct {
	// Saved are the step rows written since, by step order, node and
	// visit.
	Saved []*store.Step
	// Planned are the steps planned since, pending, in the order they
	// were planned; one that has a step row is among them too (the
	// caller knows the rows it saw).
	Planned []*store.Step
	// Seen marks this look: the next one passes it to StepsSince.
	Seen string
}

// sinceFilter keeps the rows written by a transaction that the snapshot
// $3 did not see; a NULL $3 keeps every row.
const sinceFilter = ` AND ($3::text IS NULL OR NOT pg_visible_in_snapshot(written, $3::text::pg_snapshot))`

var (
	stepsSinceSQL = sqlstore.StepSelect + ` WHERE run_id = $1 AND generation = $2` + sinceFilter +
		` ORDER BY step_order, node, visit`
	plansSinceSQL = `SELECT steps FROM step_plans WHERE run_id = $1 AND generation = $2` + sinceFilter + ` ORDER BY id`
)

// StepsSince returns what was written of generation gen of the run since
// the look that seen marks (Changes.Seen; "" for every step): its step
// rows and its plans written by transactions that look did not see. The
// rows and plans are read in one snapshot, which the result's Seen marks,
// so a following look returns exactly what committed in between: whoever
// follows a long run reads what changed, not the whole run at each look.
func (s *Store) StepsSince(ctx context.Context, runID string, gen int, seen string) (*Changes, error) {
	op := fmt.Sprintf("reading the steps of run %s", runID)
	var since any
	if seen != "" {
		since = seen
	}
	out := &Changes{}
	b := &pgx.Batch{}
	b.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY`)
	b.Queue(`SELECT pg_current_snapshot()::text, EXISTS (SELECT 1 FROM runs WHERE id = $1)`, runID).QueryRow(func(row pgx.Row) error {
		var exists bool
		if err := row.Scan(&out.Seen, &exists); err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
		}
		return nil
	})
	b.Queue(stepsSinceSQL, runID, gen, since).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			st, err := sqlstore.ScanStep(rows)
			if err != nil {
				return err
			}
			out.Saved = append(out.Saved, st)
		}
		return rows.Err()
	})
	b.Queue(plansSinceSQL, runID, gen, since).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var data []byte
			if err := rows.Scan(&data); err != nil {
				return err
			}
			planned, err := sqlstore.DecodePlan(runID, gen, data)
			if err != nil {
				return fmt.Errorf("decoding the planned steps of generation %d: %w", gen, err)
			}
			out.Planned = append(out.Planned, planned...)
		}
		return rows.Err()
	})
	b.Queue(`COMMIT`)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		return nil, s.failed(op, err)
	}
	return out, nil
}
