package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/skeinhq/skein/internal/store"
)

const deliveryCols = `run_id, generation, attempts, next_at, owner_host, owner_pid, owner_token, lease_until,
	(owner_token = '' OR lease_until < ` + dbNow + `)`

// OweDelivery records that a run's execution owes its delivery, held by o.
func (s *Store) OweDelivery(ctx context.Context, runID string, generation int, o store.Owner, ttl time.Duration) error {
	return s.write(ctx, "recording the delivery of run "+runID, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO deliveries (run_id, generation, next_at, owner_host, owner_pid, owner_token, lease_until)
			VALUES (?, ?, ?, ?, ?, ?, `+dbNow+` + ?) ON CONFLICT (run_id, generation) DO NOTHING`,
			runID, generation, micros(now()), o.Host, o.PID, o.Token, ttl.Microseconds())
		return err
	})
}

// Deliveries returns the deliveries owed, oldest run first.
func (s *Store) Deliveries(ctx context.Context) ([]*store.Delivery, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+deliveryCols+` FROM deliveries ORDER BY next_at, run_id, generation`)
	if err != nil {
		return nil, s.failed("reading the deliveries owed", err)
	}
	defer rows.Close()
	var out []*store.Delivery
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, s.failed("reading the deliveries owed", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, s.failed("reading the deliveries owed", err)
	}
	return out, nil
}

// ClaimDelivery makes o the owner of an owed delivery without a live owner.
func (s *Store) ClaimDelivery(ctx context.Context, runID string, generation int, o store.Owner, ttl time.Duration, takeover string) (*store.Delivery, error) {
	if o.Token == "" {
		return nil, fmt.Errorf("claiming the delivery of run %s: the owner has no token", runID)
	}
	var out *store.Delivery
	err := s.write(ctx, "claiming the delivery of run "+runID, func(tx *sql.Tx) error {
		d, err := scanDelivery(tx.QueryRowContext(ctx, `UPDATE deliveries SET owner_host = ?, owner_pid = ?, owner_token = ?,
				lease_until = MAX(next_at, `+dbNow+`) + ?
			WHERE run_id = ? AND generation = ? AND (owner_token = '' OR lease_until < `+dbNow+` OR (? <> '' AND owner_token = ?))
			RETURNING `+deliveryCols, o.Host, o.PID, o.Token, ttl.Microseconds(), runID, generation, takeover, takeover))
		if err == nil {
			out = d
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		cur, err := scanDelivery(tx.QueryRowContext(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE run_id = ? AND generation = ?`, runID, generation))
		if errors.Is(err, sql.ErrNoRows) {
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
func (s *Store) DeliveryAttempted(ctx context.Context, runID string, generation int, token string, attempts int, next time.Time, ttl time.Duration) error {
	return s.write(ctx, "recording a delivery attempt of run "+runID, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE deliveries SET attempts = ?, next_at = ?, lease_until = MAX(?, `+dbNow+`) + ?
			WHERE run_id = ? AND generation = ? AND owner_token = ? AND ? <> ''`,
			attempts, micros(next), micros(next), ttl.Microseconds(), runID, generation, token, token)
		return lostUnlessOne(res, err, runID)
	})
}

// EndDelivery forgets a delivery that succeeded or gave up.
func (s *Store) EndDelivery(ctx context.Context, runID string, generation int, token string) error {
	return s.write(ctx, "ending the delivery of run "+runID, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM deliveries WHERE run_id = ? AND generation = ? AND owner_token = ? AND ? <> ''`,
			runID, generation, token, token)
		return lostUnlessOne(res, err, runID)
	})
}

func lostUnlessOne(res sql.Result, err error, runID string) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("the delivery of run %s: %w", runID, store.ErrLeaseLost)
	}
	return nil
}

func scanDelivery(row interface{ Scan(...any) error }) (*store.Delivery, error) {
	d := &store.Delivery{}
	var next, lease int64
	if err := row.Scan(&d.RunID, &d.Generation, &d.Attempts, &next, &d.Owner.Host, &d.Owner.PID, &d.Owner.Token, &lease, &d.LeaseExpired); err != nil {
		return nil, err
	}
	d.NextAt = fromMicros(next)
	if d.Owner.Token != "" {
		d.LeaseUntil = fromMicros(lease)
	}
	return d, nil
}
