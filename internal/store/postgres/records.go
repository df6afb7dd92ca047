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
// batches sent in one round trip.

// SaveSteps inserts or replaces steps, keyed by (run, generation, node,
// visit), in one transaction.
func (s *Store) SaveSteps(ctx context.Context, runID string, steps []*store.Step) error {
	if len(steps) == 0 {
		return nil
	}
	op := fmt.Sprintf("saving steps of run %s", runID)
	args, err := stmts.StepsArgs(runID, steps)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return s.write(ctx, op, func(tx pgx.Tx) error {
		if err := sqlstore.Exists(ctx, conn{tx}, runID); err != nil {
			return err
		}
		b := &pgx.Batch{}
		queueRows(b, stmts.UpsertStep, args)
		return sendBatch(ctx, tx, b)
	})
}

// AppendEvents adds events to the run's log, numbering them after the ones
// already there, and sets their RunID and Seq.
func (s *Store) AppendEvents(ctx context.Context, runID string, events []store.Event) error {
	if len(events) == 0 {
		return nil
	}
	bs, err := stmts.Batches([]store.Batch{{RunID: runID, Events: events}})
	if err != nil {
		return err
	}
	var first int64
	err = s.write(ctx, fmt.Sprintf("appending events to run %s", runID), func(tx pgx.Tx) error {
		locked, err := lockRuns(ctx, tx, nil, []string{runID})
		if err != nil {
			return err
		}
		first = locked[runID].lastSeq + 1
		b := &pgx.Batch{}
		queueRows(b, stmts.InsertEvent, stmts.EventArgs(bs[0], first))
		return sendBatch(ctx, tx, b)
	})
	if err != nil {
		return err
	}
	bs[0].Numbered(first)
	return nil
}

// SaveBatch writes the steps, events and final records of several runs in
// one transaction: the group commit of the durable recorder. It locks the
// runs' rows in id order (so two batches never wait on each other in a
// cycle), checks their owner tokens and numbers their events, then sends
// every write in one round trip.
func (s *Store) SaveBatch(ctx context.Context, batches []store.Batch) error {
	bs, err := stmts.Batches(batches)
	if err != nil {
		return err
	}
	var ids []string
	seen := map[string]bool{}
	for _, b := range batches {
		if !seen[b.RunID] {
			seen[b.RunID] = true
			ids = append(ids, b.RunID)
		}
	}
	sort.Strings(ids)
	firsts := make([]int64, len(bs))
	err = s.pipelined(ctx, "saving a batch of steps and events", func(begin *pgx.Batch, q batchSender) (*pgx.Batch, error) {
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
		return err
	}
	for i, b := range bs {
		b.Numbered(firsts[i])
	}
	return nil
}

// queueBatch queues the writes of a batch, its events numbered from first.
func queueBatch(b *pgx.Batch, bt sqlstore.Batch, first int64) {
	queueRows(b, stmts.UpsertStep, bt.Steps)
	queueRows(b, stmts.InsertEvent, stmts.EventArgs(bt, first))
	if bt.Finish != nil {
		b.Queue(stmts.FinishRun, bt.Finish...)
	}
}

func queueRows(b *pgx.Batch, q string, rows [][]any) {
	for _, args := range rows {
		b.Queue(q, args...)
	}
}

// sendBatch sends the queued statements in one round trip and returns the
// first error.
func sendBatch(ctx context.Context, tx batchSender, b *pgx.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

// lockedRun is a run whose row the transaction holds: its owner token and
// the seq of its last event.
type lockedRun struct {
	owner   string
	lastSeq int64
}

// lockRunSQL locks a run's row against other writers of its events and
// signals and reads its owner. The last seq (stmts.LastSeq) is then read
// by a statement of its own, so that under READ COMMITTED its snapshot is
// taken after the lock is held and sees what the previous holder
// committed.
var lockRunSQL = stmts.RunOwner + dialect.LockRow

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
		b.Queue(stmts.LastSeq, id)
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
		err := br.QueryRow().Scan(&lr.owner)
		if err == nil {
			err = br.QueryRow().Scan(&lr.lastSeq)
		}
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
