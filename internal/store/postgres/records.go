package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinhq/skein/internal/store"
)

// SaveSteps inserts or replaces steps, keyed by (run, generation, node,
// visit), in one transaction.
func (s *Store) SaveSteps(ctx context.Context, runID string, steps []*store.Step) error {
	if len(steps) == 0 {
		return nil
	}
	op := fmt.Sprintf("saving steps of run %s", runID)
	args, err := stepsArgs(runID, steps)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return s.write(ctx, op, func(tx pgx.Tx) error {
		if err := runExists(ctx, tx, runID); err != nil {
			return err
		}
		b := &pgx.Batch{}
		queueSteps(b, args)
		return sendBatch(ctx, tx, b)
	})
}

func stepsArgs(runID string, steps []*store.Step) ([][]any, error) {
	out := make([][]any, len(steps))
	for i, st := range steps {
		args, err := stepArgs(runID, st)
		if err != nil {
			return nil, fmt.Errorf("step %s visit %d: %w", st.Node, st.Visit, err)
		}
		out[i] = args
	}
	return out, nil
}

// stepCols are the columns of a step after its key, in stepArgs' order.
const stepCols = `step_order, type, iteration, attempts, status, params, output, output_ref, error,
	config_hash, cached, pinned, started_at, finished_at, duration_ms, tokens, cost_usd, process_group, masked, wake_at`

const upsertStep = `INSERT INTO steps (run_id, generation, node, visit, ` + stepCols + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)
	ON CONFLICT (run_id, generation, node, visit) DO UPDATE SET
		step_order = excluded.step_order, type = excluded.type, iteration = excluded.iteration,
		attempts = excluded.attempts, status = excluded.status, params = excluded.params, output = excluded.output,
		output_ref = excluded.output_ref, error = excluded.error, config_hash = excluded.config_hash,
		cached = excluded.cached, pinned = excluded.pinned, started_at = excluded.started_at,
		finished_at = excluded.finished_at, duration_ms = excluded.duration_ms, tokens = excluded.tokens,
		cost_usd = excluded.cost_usd, process_group = excluded.process_group, masked = excluded.masked,
		wake_at = excluded.wake_at`

func stepArgs(runID string, st *store.Step) ([]any, error) {
	params, err := store.EncodeMap(st.Params)
	if err != nil {
		return nil, fmt.Errorf("encoding the parameters: %w", err)
	}
	output, err := store.EncodeMap(st.Output)
	if err != nil {
		return nil, fmt.Errorf("encoding the output: %w", err)
	}
	stepErr, err := store.EncodeError(st.Error)
	if err != nil {
		return nil, fmt.Errorf("encoding the error: %w", err)
	}
	gen := st.Generation
	if gen <= 0 {
		gen = 1
	}
	return []any{runID, gen, st.Node, st.Visit,
		st.StepOrder, st.Type, st.Iteration, st.Attempts, st.Status, params, output, st.OutputRef, stepErr,
		st.ConfigHash, st.Cached, st.Pinned, tsPtr(st.StartedAt), tsPtr(st.FinishedAt), st.DurationMS, st.Tokens, st.CostUSD,
		st.ProcessGroup, st.Masked, tsPtr(st.WakeAt)}, nil
}

func queueSteps(b *pgx.Batch, steps [][]any) {
	for _, args := range steps {
		b.Queue(upsertStep, args...)
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

// SaveBatch writes the steps, events and final records of several runs in
// one transaction: the group commit of the durable recorder. It locks the
// runs' rows in id order (so two batches never wait on each other in a
// cycle), checks their owner tokens and numbers their events, then sends
// every write in one round trip.
func (s *Store) SaveBatch(ctx context.Context, batches []store.Batch) error {
	type prepared struct {
		steps  [][]any
		data   [][]byte
		finish []any
	}
	ps := make([]prepared, len(batches))
	var ids []string
	seen := map[string]bool{}
	for i, b := range batches {
		args, err := stepsArgs(b.RunID, b.Steps)
		if err != nil {
			return fmt.Errorf("saving steps of run %s: %w", b.RunID, err)
		}
		data, err := eventData(b.Events)
		if err != nil {
			return fmt.Errorf("appending events to run %s: %w", b.RunID, err)
		}
		ps[i] = prepared{steps: args, data: data}
		if b.Finish != nil {
			if ps[i].finish, err = finishArgs(b.Finish); err != nil {
				return fmt.Errorf("finishing run %s: %w", b.RunID, err)
			}
		}
		if !seen[b.RunID] {
			seen[b.RunID] = true
			ids = append(ids, b.RunID)
		}
	}
	sort.Strings(ids)
	firsts := make([]int64, len(batches))
	err := s.pipelined(ctx, "saving a batch of steps and events", func(begin *pgx.Batch, q batchSender) (*pgx.Batch, error) {
		locked, err := lockRuns(ctx, q, begin, ids)
		if err != nil {
			return nil, err
		}
		b := &pgx.Batch{}
		for i, bt := range batches {
			lr := locked[bt.RunID]
			if bt.Token != "" && lr.owner != bt.Token {
				return nil, fmt.Errorf("run %s: %w", bt.RunID, store.ErrLeaseLost)
			}
			queueSteps(b, ps[i].steps)
			firsts[i] = lr.lastSeq + 1
			queueEvents(b, bt.RunID, firsts[i], bt.Events, ps[i].data)
			lr.lastSeq += int64(len(bt.Events))
			if ps[i].finish != nil {
				b.Queue(finishRun, append([]any{bt.RunID}, ps[i].finish...)...)
			}
		}
		return b, nil
	})
	if err != nil {
		return err
	}
	for i, bt := range batches {
		for j := range bt.Events {
			bt.Events[j].RunID, bt.Events[j].Seq = bt.RunID, firsts[i]+int64(j)
		}
	}
	return nil
}

// lockedRun is a run whose row the transaction holds: its owner token and
// the seq of its last event.
type lockedRun struct {
	owner   string
	lastSeq int64
}

// lockRunSQL locks a run's row against other writers of its events and
// signals and reads its owner. FOR NO KEY UPDATE leaves rows that
// reference the run (steps, events) free to be inserted by others.
// lastSeqSQL then reads the run's last event seq: a statement of its own,
// so that under READ COMMITTED its snapshot is taken after the lock is
// held and sees what the previous holder committed.
const (
	lockRunSQL = `SELECT owner_token FROM runs WHERE id = $1 FOR NO KEY UPDATE`
	lastSeqSQL = `SELECT COALESCE(MAX(seq), 0) FROM events WHERE run_id = $1`
)

// batchSender sends a batch: a transaction, or a connection.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// lockRuns locks the rows of the runs ids, in that order, in one round
// trip; a missing run is ErrNotFound. The statements are added to b (nil:
// a new batch), whose results must all be read already (a BEGIN).
func lockRuns(ctx context.Context, q batchSender, b *pgx.Batch, ids []string) (map[string]*lockedRun, error) {
	skip := 0
	if b == nil {
		b = &pgx.Batch{}
	}
	skip = b.Len()
	for _, id := range ids {
		b.Queue(lockRunSQL, id)
		b.Queue(lastSeqSQL, id)
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

const insertEvent = `INSERT INTO events (run_id, seq, time, type, node, visit, iteration, data)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`

func queueEvents(b *pgx.Batch, runID string, first int64, events []store.Event, data [][]byte) {
	for i, ev := range events {
		b.Queue(insertEvent, runID, first+int64(i), ts(ev.Time), ev.Type, ev.Node, ev.Visit, ev.Iteration, data[i])
	}
}

// finishRun writes a run's final record and releases its lease.
const finishRun = `UPDATE runs SET status = $2, outputs = $3, error = $4, finished_at = $5, tokens = $6, cost_usd = $7,
	wake_at = $8, owner_host = '', owner_pid = 0, owner_token = '', lease_until = NULL WHERE id = $1`

func finishArgs(r *store.Run) ([]any, error) {
	outputs, err := store.EncodeMap(r.Outputs)
	if err != nil {
		return nil, fmt.Errorf("encoding the outputs: %w", err)
	}
	runErr, err := store.EncodeError(r.Error)
	if err != nil {
		return nil, fmt.Errorf("encoding the error: %w", err)
	}
	return []any{r.Status, outputs, runErr, tsPtr(r.FinishedAt), r.Tokens, r.CostUSD, tsPtr(r.WakeAt)}, nil
}

// Steps returns the steps of the run's latest generation, by step order.
func (s *Store) Steps(ctx context.Context, runID string) ([]*store.Step, error) {
	return s.steps(ctx, runID, `SELECT run_id, generation, node, visit, `+stepCols+` FROM steps
		WHERE run_id = $1 AND generation = (SELECT MAX(generation) FROM steps WHERE run_id = $1)
		ORDER BY step_order, node, visit`)
}

// StepHistory returns the steps of every generation of the run.
func (s *Store) StepHistory(ctx context.Context, runID string) ([]*store.Step, error) {
	return s.steps(ctx, runID, `SELECT run_id, generation, node, visit, `+stepCols+` FROM steps
		WHERE run_id = $1 ORDER BY generation, step_order, node, visit`)
}

func (s *Store) steps(ctx context.Context, runID, q string) ([]*store.Step, error) {
	op := fmt.Sprintf("reading the steps of run %s", runID)
	rows, err := s.pool.Query(ctx, q, runID)
	if err != nil {
		return nil, s.failed(op, err)
	}
	defer rows.Close()
	var steps []*store.Step
	for rows.Next() {
		st, err := scanStep(rows)
		if err != nil {
			return nil, s.failed(op, err)
		}
		steps = append(steps, st)
	}
	if err := rows.Err(); err != nil {
		return nil, s.failed(op, err)
	}
	if len(steps) == 0 {
		if err := runExists(ctx, s.pool, runID); err != nil {
			return nil, s.failed(op, err)
		}
	}
	return steps, nil
}

func scanStep(sc pgx.Row) (*store.Step, error) {
	var st store.Step
	var params, output, stepErr []byte
	var started, finished, wake *time.Time
	if err := sc.Scan(&st.RunID, &st.Generation, &st.Node, &st.Visit,
		&st.StepOrder, &st.Type, &st.Iteration, &st.Attempts, &st.Status, &params, &output, &st.OutputRef, &stepErr,
		&st.ConfigHash, &st.Cached, &st.Pinned, &started, &finished, &st.DurationMS, &st.Tokens, &st.CostUSD,
		&st.ProcessGroup, &st.Masked, &wake); err != nil {
		return nil, err
	}
	var err error
	if st.Params, err = store.DecodeMap(params); err != nil {
		return nil, fmt.Errorf("step %s visit %d: decoding the parameters: %w", st.Node, st.Visit, err)
	}
	if st.Output, err = store.DecodeMap(output); err != nil {
		return nil, fmt.Errorf("step %s visit %d: decoding the output: %w", st.Node, st.Visit, err)
	}
	if st.Error, err = store.DecodeError(stepErr); err != nil {
		return nil, fmt.Errorf("step %s visit %d: decoding the error: %w", st.Node, st.Visit, err)
	}
	st.StartedAt, st.FinishedAt, st.WakeAt = utc(started), utc(finished), utc(wake)
	return &st, nil
}

// AppendEvents adds events to the run's log, numbering them after the ones
// already there, and sets their RunID and Seq.
func (s *Store) AppendEvents(ctx context.Context, runID string, events []store.Event) error {
	if len(events) == 0 {
		return nil
	}
	op := fmt.Sprintf("appending events to run %s", runID)
	data, err := eventData(events)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	var first int64
	err = s.write(ctx, op, func(tx pgx.Tx) error {
		locked, err := lockRuns(ctx, tx, nil, []string{runID})
		if err != nil {
			return err
		}
		first = locked[runID].lastSeq + 1
		b := &pgx.Batch{}
		queueEvents(b, runID, first, events, data)
		return sendBatch(ctx, tx, b)
	})
	if err != nil {
		return err
	}
	for i := range events {
		events[i].RunID, events[i].Seq = runID, first+int64(i)
	}
	return nil
}

func eventData(events []store.Event) ([][]byte, error) {
	data := make([][]byte, len(events))
	for i := range events {
		var err error
		if data[i], err = store.EncodeMap(events[i].Data); err != nil {
			return nil, fmt.Errorf("encoding the data of a %s event: %w", events[i].Type, err)
		}
	}
	return data, nil
}

// Events returns up to limit of the run's events after afterSeq, in order.
func (s *Store) Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]store.Event, error) {
	op := fmt.Sprintf("reading the events of run %s", runID)
	var lim *int // NULL: no limit
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, time, type, node, visit, iteration, data FROM events
		WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, runID, afterSeq, lim)
	if err != nil {
		return nil, s.failed(op, err)
	}
	defer rows.Close()
	var events []store.Event
	for rows.Next() {
		ev := store.Event{RunID: runID}
		var data []byte
		if err := rows.Scan(&ev.Seq, &ev.Time, &ev.Type, &ev.Node, &ev.Visit, &ev.Iteration, &data); err != nil {
			return nil, s.failed(op, err)
		}
		ev.Time = ev.Time.UTC()
		if ev.Data, err = store.DecodeMap(data); err != nil {
			return nil, fmt.Errorf("%s: event %d: decoding the data: %w", op, ev.Seq, err)
		}
		events = append(events, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, s.failed(op, err)
	}
	if len(events) == 0 {
		if err := runExists(ctx, s.pool, runID); err != nil {
			return nil, s.failed(op, err)
		}
	}
	return events, nil
}

// SaveCheckpoint replaces the run's checkpoint.
func (s *Store) SaveCheckpoint(ctx context.Context, runID string, data []byte) error {
	if data == nil {
		data = []byte{}
	}
	return s.write(ctx, "saving the checkpoint of run "+runID, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO checkpoints (run_id, data, updated_at)
			SELECT id, $2, $3 FROM runs WHERE id = $1
			ON CONFLICT (run_id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`,
			runID, data, now())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
		}
		return nil
	})
}

// Checkpoint returns the run's checkpoint.
func (s *Store) Checkpoint(ctx context.Context, runID string) ([]byte, error) {
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT data FROM checkpoints WHERE run_id = $1`, runID).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("checkpoint of run %s: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return nil, s.failed("reading the checkpoint of run "+runID, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// SaveSignal records a signal; a second one for the same node and visit
// gives store.ErrExists.
func (s *Store) SaveSignal(ctx context.Context, sig *store.Signal) error {
	op := fmt.Sprintf("saving a signal for node %s of run %s", sig.Node, sig.RunID)
	data, err := store.EncodeMap(map[string]any{"data": sig.Data})
	if err != nil {
		return fmt.Errorf("%s: encoding the data: %w", op, err)
	}
	if sig.CreatedAt.IsZero() {
		sig.CreatedAt = now()
	}
	return s.write(ctx, op, func(tx pgx.Tx) error {
		// The run's row lock keeps the run's signals numbered in order.
		if _, err := lockRuns(ctx, tx, nil, []string{sig.RunID}); err != nil {
			return err
		}
		var seq int64
		err := tx.QueryRow(ctx, `INSERT INTO signals (run_id, node, visit, seq, data, created_at)
			SELECT $1, $2, $3, COALESCE(MAX(seq), 0) + 1, $4, $5 FROM signals WHERE run_id = $1
			ON CONFLICT (run_id, node, visit) DO NOTHING RETURNING seq`,
			sig.RunID, sig.Node, sig.Visit, data, ts(sig.CreatedAt)).Scan(&seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("node %s visit %d of run %s has a signal already: %w", sig.Node, sig.Visit, sig.RunID, store.ErrExists)
		}
		if err != nil {
			return err
		}
		sig.Seq = seq
		_, err = tx.Exec(ctx, `UPDATE runs SET wake_at = LEAST(wake_at, $1) WHERE id = $2 AND status = 'waiting'`,
			ts(sig.CreatedAt), sig.RunID)
		return err
	})
}

// Signals returns the run's signals after afterSeq, in order.
func (s *Store) Signals(ctx context.Context, runID string, afterSeq int64) ([]store.Signal, error) {
	op := fmt.Sprintf("reading the signals of run %s", runID)
	rows, err := s.pool.Query(ctx, `SELECT node, visit, seq, data, created_at FROM signals
		WHERE run_id = $1 AND seq > $2 ORDER BY seq`, runID, afterSeq)
	if err != nil {
		return nil, s.failed(op, err)
	}
	defer rows.Close()
	var out []store.Signal
	for rows.Next() {
		sig := store.Signal{RunID: runID}
		var data []byte
		if err := rows.Scan(&sig.Node, &sig.Visit, &sig.Seq, &data, &sig.CreatedAt); err != nil {
			return nil, s.failed(op, err)
		}
		m, err := store.DecodeMap(data)
		if err != nil {
			return nil, fmt.Errorf("%s: signal %d: decoding the data: %w", op, sig.Seq, err)
		}
		sig.Data, sig.CreatedAt = m["data"], sig.CreatedAt.UTC()
		out = append(out, sig)
	}
	if err := rows.Err(); err != nil {
		return nil, s.failed(op, err)
	}
	if len(out) == 0 {
		if err := runExists(ctx, s.pool, runID); err != nil {
			return nil, s.failed(op, err)
		}
	}
	return out, nil
}
