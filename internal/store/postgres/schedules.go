package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinhq/skein/internal/store"
)

const scheduleCols = `workflow, trigger_node, spec, next_fire, last_fire, last_run_id, updated_at`

// SetSchedule stores a schedule that is new or whose spec changed.
func (s *Store) SetSchedule(ctx context.Context, sc store.Schedule) (store.Schedule, error) {
	if sc.Workflow == "" || sc.Trigger == "" || sc.Spec == "" || sc.NextFire.IsZero() {
		return store.Schedule{}, errors.New("setting a schedule: it needs a workflow, a trigger, a spec and a next fire time")
	}
	var out store.Schedule
	err := s.write(ctx, fmt.Sprintf("setting the schedule %s/%s", sc.Workflow, sc.Trigger), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO schedules (`+scheduleCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (workflow, trigger_node) DO UPDATE SET spec = excluded.spec, next_fire = excluded.next_fire,
				last_fire = excluded.last_fire, last_run_id = excluded.last_run_id, updated_at = excluded.updated_at
			WHERE schedules.spec <> excluded.spec`,
			sc.Workflow, sc.Trigger, sc.Spec, ts(sc.NextFire), tsZero(sc.LastFire), sc.LastRunID, now()); err != nil {
			return err
		}
		var err error
		out, err = scanSchedule(tx.QueryRow(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE workflow = $1 AND trigger_node = $2`,
			sc.Workflow, sc.Trigger))
		return err
	})
	return out, err
}

// AdvanceSchedule moves a schedule's next fire time on from `from`, once.
func (s *Store) AdvanceSchedule(ctx context.Context, sc store.Schedule, from time.Time) (bool, error) {
	var moved bool
	err := s.write(ctx, fmt.Sprintf("advancing the schedule %s/%s", sc.Workflow, sc.Trigger), func(tx pgx.Tx) error {
		// Of advances at once, one updates the row; the others wait for
		// its lock and find next_fire moved.
		tag, err := tx.Exec(ctx, `UPDATE schedules SET next_fire = $1, last_fire = $2, last_run_id = $3, updated_at = $4
			WHERE workflow = $5 AND trigger_node = $6 AND spec = $7 AND next_fire = $8`,
			ts(sc.NextFire), tsZero(sc.LastFire), sc.LastRunID, now(),
			sc.Workflow, sc.Trigger, sc.Spec, ts(from))
		if err != nil {
			return err
		}
		if moved = tag.RowsAffected() == 1; moved {
			return nil
		}
		var one int
		err = tx.QueryRow(ctx, `SELECT 1 FROM schedules WHERE workflow = $1 AND trigger_node = $2`, sc.Workflow, sc.Trigger).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("schedule %s/%s: %w", sc.Workflow, sc.Trigger, store.ErrNotFound)
		}
		return err
	})
	return moved, err
}

// Schedules returns every stored schedule.
func (s *Store) Schedules(ctx context.Context) ([]store.Schedule, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+scheduleCols+` FROM schedules ORDER BY workflow, trigger_node`)
	if err != nil {
		return nil, s.failed("reading the schedules", err)
	}
	defer rows.Close()
	var out []store.Schedule
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, s.failed("reading the schedules", err)
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, s.failed("reading the schedules", err)
	}
	return out, nil
}

func scanSchedule(row pgx.Row) (store.Schedule, error) {
	var sc store.Schedule
	var last *time.Time
	if err := row.Scan(&sc.Workflow, &sc.Trigger, &sc.Spec, &sc.NextFire, &last, &sc.LastRunID, &sc.UpdatedAt); err != nil {
		return store.Schedule{}, err
	}
	sc.NextFire, sc.UpdatedAt = sc.NextFire.UTC(), sc.UpdatedAt.UTC()
	if last != nil {
		sc.LastFire = last.UTC()
	}
	return sc, nil
}
