package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/skeinhq/skein/internal/store"
)

const deliveryCols = `run_id, generation, attempts, next_at, owner_host, owner_pid, owner_token, lease_until,
	(owner_token = '' OR lease_until IS NULL OR lease_until < ` + dbNow + `)`

// OweDelivery records that a run's execution owes its delivery, held by o.
func (s *Store) OweDelivery(ctx context.Context, runID string, generation int, o store.Owner, ttl time.Duration) error {
	return s.write(ctx, "recording the delivery of run "+runID, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO deliveries (run_id, generation, next_at, owner_host, owner_pid, owner_token, lease_until)
			VALUES ($1, $2, `+dbNow+`, $3, $4, $5, `+dbNow+` + $6::float8 * interval '1 microsecond') ON CONFLICT (run_id, generation) DO NOTHING`,
			runID, generation, o.Host, o.PID, o.Token, micros(ttl))
		return err
	})
}

// Deliveries returns the deliveries owed, oldest run first.
func (s *Store) Deliveries(ctx context.Context) ([]*store.Delivery, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryCols+` FROM deliveries ORDER BY next_at, run_id, generation`)
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
	err := s.write(ctx, "claiming the delivery of run "+runID, func(tx pgx.Tx) error {
		// Of claims at once, one updates the row; the others wait for its
		// lock and find the WHERE clause false on the new row.
		d, err := scanDelivery(tx.QueryRow(ctx, `UPDATE deliveries SET owner_host = $3, owner_pid = $4, owner_token = $5,
				lease_until = GREATEST(next_at, `+dbNow+`) + $6::float8 * interval '1 microsecond'
			WHERE run_id = $1 AND generation = $2
				AND (owner_token = '' OR lease_until IS NULL OR lease_until < `+dbNow+` OR ($7 <> '' AND owner_token = $7))
			RETURNING `+deliveryCols, runID, generation, o.Host, o.PID, o.Token, micros(ttl), takeover))
		if err == nil {
			out = d
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		cur, err := scanDelivery(tx.QueryRow(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE run_id = $1 AND generation = $2`, runID, generation))
		if errors.Is(err, pgx.ErrNoRows) {
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
	return s.write(ctx, "recording a delivery attempt of run "+runID, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE deliveries SET attempts = $4, next_at = $5,
				lease_until = GREATEST($5, `+dbNow+`) + $6::float8 * interval '1 microsecond'
			WHERE run_id = $1 AND generation = $2 AND owner_token = $3 AND $3 <> ''`,
			runID, generation, token, attempts, ts(next), micros(ttl))
		return lostUnlessOne(tag, err, runID)
	})
}

// EndDelivery forgets a delivery that succeeded or gave up.
func (s *Store) EndDelivery(ctx context.Context, runID string, generation int, token string) error {
	return s.write(ctx, "ending the delivery of run "+runID, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM deliveries WHERE run_id = $1 AND generation = $2 AND owner_token = $3 AND $3 <> ''`,
			runID, generation, token)
		return lostUnlessOne(tag, err, runID)
	})
}

func lostUnlessOne(tag pgconn.CommandTag, err error, runID string) error {
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("the delivery of run %s: %w", runID, store.ErrLeaseLost)
	}
	return nil
}

func scanDelivery(row pgx.Row) (*store.Delivery, error) {
	d := &store.Delivery{}
	var lease *time.Time
	if err := row.Scan(&d.RunID, &d.Generation, &d.Attempts, &d.NextAt, &d.Owner.Host, &d.Owner.PID, &d.Owner.Token, &lease, &d.LeaseExpired); err != nil {
		return nil, err
	}
	d.NextAt = d.NextAt.UTC()
	if lease != nil && d.Owner.Token != "" {
		d.LeaseUntil = lease.UTC()
	}
	return d, nil
}
