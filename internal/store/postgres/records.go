package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlstore"
)

// The writes of steps and events, the hot path of a run, are queued in
// batches: a transaction of two round trips.

// saveBatches writes batches in one transaction (sqlstore.DB) of two
// round trips. It locks the runs' rows in id order (so two transactions
// never wait on each other in a cycle), checks their owner tokens and
// numbers their events, then sends every write with the COMMIT.
func (s *Store) saveBatches(ctx context.Context, op string, bs []sqlstore.Batch) ([]int64, error) {
	var ids []string
	seen := map[string]bool{}
	for _, b := range bs {
		if !seen[b.RunID] {
			seen[b.RunID] = true
			ids = append(ids, b.RunID)
		}
	}
	sort.Strings(ids)
	firsts := make([]int64, len(bs))
	err := s.pipelined(ctx, op, func(begin *pgx.Batch, q batchSender) (*pgx.Batch, error) {
		locked, err := lockRuns(ctx, q, begin, ids)
		if err != nil {
			return nil, err
		}
		b := &pgx.Batch{}
		for i, bt := range bs {
			lr := locked[bt.RunID]
			if bt.Token != "" && lr.owner != bt.Token {
				return nil, fmt.Errorf("run %s: %w", bt.RunID, store.ErrLeaseLost)
			}
			firsts[i] = lr.lastSeq + 1
			lr.lastSeq += int64(len(bt.Events))
			queueBatch(b, bt, firsts[i])
		}
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	return firsts, nil
}

// queueBatch queues the writes of a batch, its events numbered from first.
func queueBatch(b *pgx.Batch, bt sqlstore.Batch, first int64) {
	for _, st := range stmts.Writes(bt, first) {
		b.Queue(st.SQL, st.Args...)
	}
}

// lockedRun is a run whose row the transaction holds: its owner token and
// the seq of its last event.
type lockedRun struct {
	owner   string
	lastSeq int64
}

// lockRunSQL locks a run's row against other writers of its events and
// signals and reads its owner and the seq of its last event (the row's
// count of its events). Under READ COMMITTED a row lock that waited reads
// the row as its previous holder committed it: the count is current.
var lockRunSQL = `SELECT owner_token, event_seq FROM runs WHERE id = $1` + dialect.LockRow

// batchSender sends a batch: a transaction, or a connection.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// lockRuns locks the rows of the runs ids, in that order, in one round
// trip; a missing run is ErrNotFound. The statements are added to b (nil:
// a new batch), whose results must all be read already (a BEGIN).
func lockRuns(ctx context.Context, q batchSender, b *pgx.Batch, ids []string) (map[string]*lockedRun, error) {
	if b == nil {
		b = &pgx.Batch{}
	}
	skip := b.Len()
	for _, id := range ids {
		b.Queue(lockRunSQL, id)
	}
	br := q.SendBatch(ctx, b)
	for range skip {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, err
		}
	}
	out := make(map[string]*lockedRun, len(ids))
	for _, id := range ids {
		var lr lockedRun
		err := br.QueryRow().Scan(&lr.owner, &lr.lastSeq)
		if errors.Is(err, pgx.ErrNoRows) {
			_ = br.Close()
			return nil, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
		}
		if err != nil {
			_ = br.Close()
			return nil, err
		}
		out[id] = &lr
	}
	return out, br.Close()
}
