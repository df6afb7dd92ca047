package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/skeinhq/skein/internal/store"
)

const scheduleCols = `workflow, trigger_node, spec, next_fire, last_fire, last_run_id, updated_at`

// SetSchedule stores a schedule that is new or whose spec changed.
func (s *Store) SetSchedule(ctx context.Context, sc store.Schedule) (store.Schedule, error) {
	if sc.Workflow == "" || sc.Trigger == "" || sc.Spec == "" || sc.NextFire.IsZero() {
		return store.Schedule{}, errors.New("setting a schedule: it needs a workflow, a trigger, a spec and a next fire time")
	}
	var out store.Schedule
	err := s.write(ctx, fmt.Sprintf("setting the schedule %s/%s", sc.Workflow, sc.Trigger), func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO schedules (`+scheduleCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (workflow, trigger_node) DO UPDATE SET spec = excluded.spec, next_fire = excluded.next_fire,
				last_fire = excluded.last_fire, last_run_id = excluded.last_run_id, updated_at = excluded.updated_at
			WHERE schedules.spec <> excluded.spec`,
			sc.Workflow, sc.Trigger, sc.Spec, micros(sc.NextFire), zeroMicros(sc.LastFire), sc.LastRunID, micros(now())); err != nil {
			return err
		}
		var err error
		out, err = scanSchedule(tx.QueryRowContext(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE workflow = ? AND trigger_node = ?`,
			sc.Workflow, sc.Trigger))
		return err
	})
	return out, err
}

// AdvanceSchedule moves a schedule's next fire time on from `from`, once.
func (s *Store) AdvanceSchedule(ctx context.Context, sc store.Schedule, from time.Time) (bool, error) {
	var moved bool
	err := s.write(ctx, fmt.Sprintf("advancing the schedule %s/%s", sc.Workflow, sc.Trigger), func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE schedules SET next_fire = ?, last_fire = ?, last_run_id = ?, updated_at = ?
			WHERE workflow = ? AND trigger_node = ? AND spec = ? AND next_fire = ?`,
			micros(sc.NextFire), zeroMicros(sc.LastFire), sc.LastRunID, micros(now()),
			sc.Workflow, sc.Trigger, sc.Spec, micros(from))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if moved = n == 1; moved {
			return nil
		}
		var one int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM schedules WHERE workflow = ? AND trigger_node = ?`, sc.Workflow, sc.Trigger).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("schedule %s/%s: %w", sc.Workflow, sc.Trigger, store.ErrNotFound)
		}
		return err
	})
	return moved, err
}

// Schedules returns every stored schedule.
func (s *Store) Schedules(ctx context.Context) ([]store.Schedule, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+scheduleCols+` FROM schedules ORDER BY workflow, trigger_node`)
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

func scanSchedule(row interface{ Scan(...any) error }) (store.Schedule, error) {
	var sc store.Schedule
	var next, last, updated int64
	if err := row.Scan(&sc.Workflow, &sc.Trigger, &sc.Spec, &next, &last, &sc.LastRunID, &updated); err != nil {
		return store.Schedule{}, err
	}
	sc.NextFire, sc.UpdatedAt = fromMicros(next), fromMicros(updated)
	if last != 0 {
		sc.LastFire = fromMicros(last)
	}
	return sc, nil
}

// zeroMicros stores a zero time as 0.
func zeroMicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return micros(t)
}
