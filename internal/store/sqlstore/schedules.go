package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinhq/skein/internal/store"
)

const scheduleCols = `workflow, trigger_node, spec, next_fire, last_fire, last_run_id, updated_at`

// SetSchedule stores a schedule that is new or whose spec changed.
func (c *Core) SetSchedule(ctx context.Context, sc store.Schedule) (store.Schedule, error) {
	if sc.Workflow == "" || sc.Trigger == "" || sc.Spec == "" || sc.NextFire.IsZero() {
		return store.Schedule{}, errors.New("setting a schedule: it needs a workflow, a trigger, a spec and a next fire time")
	}
	var out store.Schedule
	err := c.db.Write(ctx, fmt.Sprintf("setting the schedule %s/%s", sc.Workflow, sc.Trigger), func(tx Querier) error {
		if _, err := tx.Exec(ctx, `INSERT INTO schedules (`+scheduleCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (workflow, trigger_node) DO UPDATE SET spec = excluded.spec, next_fire = excluded.next_fire,
				last_fire = excluded.last_fire, last_run_id = excluded.last_run_id, updated_at = excluded.updated_at
			WHERE schedules.spec <> excluded.spec`,
			sc.Workflow, sc.Trigger, sc.Spec, c.time(sc.NextFire), c.timeOrNone(sc.LastFire), sc.LastRunID, c.time(Now())); err != nil {
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
func (c *Core) AdvanceSchedule(ctx context.Context, sc store.Schedule, from time.Time) (bool, error) {
	var moved bool
	err := c.db.Write(ctx, fmt.Sprintf("advancing the schedule %s/%s", sc.Workflow, sc.Trigger), func(tx Querier) error {
		// Of advances at once, one updates the row; the others wait for
		// its lock and find next_fire moved.
		n, err := tx.Exec(ctx, `UPDATE schedules SET next_fire = $1, last_fire = $2, last_run_id = $3, updated_at = $4
			WHERE workflow = $5 AND trigger_node = $6 AND spec = $7 AND next_fire = $8`,
			c.time(sc.NextFire), c.timeOrNone(sc.LastFire), sc.LastRunID, c.time(Now()),
			sc.Workflow, sc.Trigger, sc.Spec, c.time(from))
		if err != nil {
			return err
		}
		if moved = n == 1; moved {
			return nil
		}
		var one int
		err = tx.QueryRow(ctx, `SELECT 1 FROM schedules WHERE workflow = $1 AND trigger_node = $2`, sc.Workflow, sc.Trigger).Scan(&one)
		if noRows(err) {
			return fmt.Errorf("schedule %s/%s: %w", sc.Workflow, sc.Trigger, store.ErrNotFound)
		}
		return err
	})
	return moved, err
}

// Schedules returns every stored schedule.
func (c *Core) Schedules(ctx context.Context) ([]store.Schedule, error) {
	rows, err := c.db.Read().Query(ctx, `SELECT `+scheduleCols+` FROM schedules ORDER BY workflow, trigger_node`)
	return collect(c, "reading the schedules", rows, err, scanSchedule)
}

func scanSchedule(row Row) (store.Schedule, error) {
	var sc store.Schedule
	var next, last, updated Time
	if err := row.Scan(&sc.Workflow, &sc.Trigger, &sc.Spec, &next, &last, &sc.LastRunID, &updated); err != nil {
		return store.Schedule{}, err
	}
	sc.NextFire, sc.LastFire, sc.UpdatedAt = next.T, last.T, updated.T
	return sc, nil
}
