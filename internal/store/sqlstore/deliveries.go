package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/skeinhq/skein/internal/store"
)

func (c *Core) deliveryCols() string {
	return `run_id, generation, attempts, next_at, owner_host, owner_pid, owner_token, lease_until, ` + c.expired
}

// OweDelivery records that a run's execution owes its delivery, held by o.
func (c *Core) OweDelivery(ctx context.Context, runID string, generation int, o store.Owner, ttl time.Duration) error {
	return c.db.Write(ctx, "recording the delivery of run "+runID, func(tx Querier) error {
		_, err := tx.Exec(ctx, `INSERT INTO deliveries (run_id, generation, next_at, owner_host, owner_pid, owner_token, lease_until)
			VALUES ($1, $2, `+c.d.Now+`, $3, $4, $5, `+c.d.AddMicros(c.d.Now, "$6")+`) ON CONFLICT (run_id, generation) DO NOTHING`,
			runID, generation, o.Host, o.PID, o.Token, c.d.Duration(ttl))
		return err
	})
}

// Deliveries returns the deliveries owed, oldest run first.
func (c *Core) Deliveries(ctx context.Context) ([]*store.Delivery, error) {
	rows, err := c.db.Read().Query(ctx, `SELECT `+c.deliveryCols()+` FROM deliveries ORDER BY next_at, run_id, generation`)
	return collect(c, "reading the deliveries owed", rows, err, scanDelivery)
}

// ClaimDelivery makes o the owner of an owed delivery without a live owner.
func (c *Core) ClaimDelivery(ctx context.Context, runID string, generation int, o store.Owner, ttl time.Duration, takeover string) (*store.Delivery, error) {
	if o.Token == "" {
		return nil, fmt.Errorf("claiming the delivery of run %s: the owner has no token", runID)
	}
	var out *store.Delivery
	err := c.db.Write(ctx, "claiming the delivery of run "+runID, func(tx Querier) error {
		// Of claims at once, one updates the row; the others wait for its
		// lock and find the WHERE clause false on the new row.
		d, err := scanDelivery(tx.QueryRow(ctx, `UPDATE deliveries SET owner_host = $3, owner_pid = $4, owner_token = $5,
				lease_until = `+c.d.AddMicros(c.d.Greatest("next_at", c.d.Now), "$6")+`
			WHERE run_id = $1 AND generation = $2 AND (`+c.expired+` OR ($7 <> '' AND owner_token = $7))
			RETURNING `+c.deliveryCols(), runID, generation, o.Host, o.PID, o.Token, c.d.Duration(ttl), takeover))
		if err == nil {
			out = d
			return nil
		}
		if !noRows(err) {
			return err
		}
		cur, err := scanDelivery(tx.QueryRow(ctx, `SELECT `+c.deliveryCols()+` FROM deliveries WHERE run_id = $1 AND generation = $2`, runID, generation))
		if noRows(err) {
			return fmt.Errorf("the delivery of run %s: %w", runID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		return &store.OwnedError{RunID: runID, Owner: cur.Owner, LeaseUntil: cur.LeaseUntil}
	})
	return out, err
}

// DeliveryAttempted records the attempts made and when the next is due.
func (c *Core) DeliveryAttempted(ctx context.Context, runID string, generation int, token string, attempts int, next time.Time, ttl time.Duration) error {
	return c.db.Write(ctx, "recording a delivery attempt of run "+runID, func(tx Querier) error {
		n, err := tx.Exec(ctx, `UPDATE deliveries SET attempts = $4, next_at = $5,
				lease_until = `+c.d.AddMicros(c.d.Greatest("$5", c.d.Now), "$6")+`
			WHERE run_id = $1 AND generation = $2 AND owner_token = $3 AND $3 <> ''`,
			runID, generation, token, attempts, c.time(next), c.d.Duration(ttl))
		return lostUnlessOne(n, err, runID)
	})
}

// EndDelivery forgets a delivery that succeeded or gave up.
func (c *Core) EndDelivery(ctx context.Context, runID string, generation int, token string) error {
	return c.db.Write(ctx, "ending the delivery of run "+runID, func(tx Querier) error {
		n, err := tx.Exec(ctx, `DELETE FROM deliveries WHERE run_id = $1 AND generation = $2 AND owner_token = $3 AND $3 <> ''`,
			runID, generation, token)
		return lostUnlessOne(n, err, runID)
	})
}

func lostUnlessOne(n int64, err error, runID string) error {
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("the delivery of run %s: %w", runID, store.ErrLeaseLost)
	}
	return nil
}

func scanDelivery(row Row) (*store.Delivery, error) {
	d := &store.Delivery{}
	var next, lease Time
	if err := row.Scan(&d.RunID, &d.Generation, &d.Attempts, &next, &d.Owner.Host, &d.Owner.PID, &d.Owner.Token, &lease, &d.LeaseExpired); err != nil {
		return nil, err
	}
	d.NextAt = next.T
	if d.Owner.Token != "" {
		d.LeaseUntil = lease.T
	}
	return d, nil
}
