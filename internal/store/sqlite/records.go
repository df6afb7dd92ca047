package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/skeinhq/skein/internal/store"
)

// SaveSteps inserts or replaces steps, keyed by (run, node, visit), in one
// transaction.
func (s *Store) SaveSteps(ctx context.Context, runID string, steps []*store.Step) error {
	if len(steps) == 0 {
		return nil
	}
	op := fmt.Sprintf("saving steps of run %s", runID)
	args, err := stepsArgs(runID, steps)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return s.writeHot(ctx, op, func(tx *sql.Tx) error {
		if err := s.runExistsTx(ctx, tx, runID); err != nil {
			return err
		}
		return s.saveStepsTx(ctx, tx, args)
	})
}

func stepsArgs(runID string, steps []*store.Step) ([][]any, error) {
	args := make([][]any, len(steps))
	for i, st := range steps {
		a, err := stepArgs(runID, st)
		if err != nil {
			return nil, fmt.Errorf("step %s visit %d: %w", st.Node, st.Visit, err)
		}
		args[i] = a
	}
	return args, nil
}

const upsertStep = `INSERT INTO steps (run_id, generation, node, visit, ` + stepCols + `)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)` + upsertStepTail

// upsertStepTail replaces a step saved again (a retry, a finish).
const upsertStepTail = `
			ON CONFLICT (run_id, generation, node, visit) DO UPDATE SET
				step_order = excluded.step_order, type = excluded.type, iteration = excluded.iteration,
				attempts = excluded.attempts, status = excluded.status, params = excluded.params,
				output = excluded.output, output_ref = excluded.output_ref, error = excluded.error,
				config_hash = excluded.config_hash, cached = excluded.cached, pinned = excluded.pinned,
				started_at = excluded.started_at, finished_at = excluded.finished_at,
				duration_ms = excluded.duration_ms, tokens = excluded.tokens, cost_usd = excluded.cost_usd,
				process_group = excluded.process_group, masked = excluded.masked, wake_at = excluded.wake_at`

func (s *Store) saveStepsTx(ctx context.Context, tx *sql.Tx, args [][]any) error {
	return s.insertRows(ctx, tx, s.upsertStepSt, insertStepHead, upsertStepTail, args)
}

const insertStepHead = `INSERT INTO steps (run_id, generation, node, visit, ` + stepCols + `) VALUES `

// maxRowsPerInsert bounds the rows of one multi-row INSERT (23 columns ×
// 64 rows stays far below SQLite's limit of bound variables).
const maxRowsPerInsert = 64

// insertRows inserts rows with as few statements as it can: a statement
// costs more than a row, so rows go by multi-row INSERTs of 64, 16 and 4
// rows, the rest one by one with single (prepared once).
func (s *Store) insertRows(ctx context.Context, tx *sql.Tx, single *sql.Stmt, head, tail string, rows [][]any) error {
	for len(rows) > 0 {
		n := 1
		for _, m := range multiRowSizes {
			if len(rows) >= m {
				n = m
				break
			}
		}
		if n == 1 {
			if _, err := tx.StmtContext(ctx, single).ExecContext(ctx, rows[0]...); err != nil {
				return err
			}
			rows = rows[1:]
			continue
		}
		st := s.multiStmt(head, n)
		args := make([]any, 0, n*len(rows[0]))
		for _, r := range rows[:n] {
			args = append(args, r...)
		}
		if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// stepArgCount is the number of values of a step row: its key and stepCols.
var stepArgCount = 4 + strings.Count(stepCols, ",") + 1

// multiRowSizes are the row counts of the multi-row INSERTs prepared with
// the hot statements.
var multiRowSizes = []int{maxRowsPerInsert, 16, 4}

// multiInsert is the statement head (?, …), … tail of n rows of cols
// values each.
func multiInsert(head, tail string, cols, n int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	return head + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ") + tail
}

// multiStmt returns the prepared multi-row INSERT of head with n rows.
func (s *Store) multiStmt(head string, n int) *sql.Stmt {
	return s.multi[multiKey{head, n}]
}

// SaveBatch writes the steps and events of several runs in one
// transaction: the group commit of the durable recorder.
func (s *Store) SaveBatch(ctx context.Context, batches []store.Batch) error {
	type prepared struct {
		runID  string
		token  string
		steps  [][]any
		data   [][]byte
		evs    []store.Event
		finish []any
	}
	ps := make([]prepared, 0, len(batches))
	for _, b := range batches {
		args, err := stepsArgs(b.RunID, b.Steps)
		if err != nil {
			return fmt.Errorf("saving steps of run %s: %w", b.RunID, err)
		}
		data, err := eventData(b.Events)
		if err != nil {
			return fmt.Errorf("appending events to run %s: %w", b.RunID, err)
		}
		p := prepared{runID: b.RunID, token: b.Token, steps: args, data: data, evs: b.Events}
		if b.Finish != nil {
			if p.finish, err = finishArgs(b.Finish); err != nil {
				return fmt.Errorf("finishing run %s: %w", b.RunID, err)
			}
		}
		ps = append(ps, p)
	}
	lasts := make([]int64, len(ps))
	err := s.writeHot(ctx, "saving a batch of steps and events", func(tx *sql.Tx) error {
		// The rows of every batch go in together: a statement costs more
		// than a row, and a group holds a batch of each of many runs.
		type fence struct{ run, token string }
		fenced := map[fence]bool{}
		seqs := map[string]int64{} // the last event of each run so far
		var steps, events [][]any
		for i, p := range ps {
			if f := (fence{p.runID, p.token}); !fenced[f] {
				if err := s.fenceTx(ctx, tx, p.runID, p.token); err != nil {
					return err
				}
				fenced[f] = true
			}
			steps = append(steps, p.steps...)
			if len(p.evs) == 0 {
				continue
			}
			prev, ok := seqs[p.runID]
			if !ok {
				if err := tx.StmtContext(ctx, s.lastSeqSt).QueryRowContext(ctx, p.runID).Scan(&prev); err != nil {
					return err
				}
			}
			for j, ev := range p.evs {
				events = append(events, []any{p.runID, prev + 1 + int64(j), micros(ev.Time), ev.Type, ev.Node, ev.Visit, ev.Iteration, text(p.data[j])})
			}
			lasts[i] = prev + int64(len(p.evs))
			seqs[p.runID] = lasts[i]
		}
		if err := s.saveStepsTx(ctx, tx, steps); err != nil {
			return err
		}
		if err := s.insertRows(ctx, tx, s.insertEvSt, insertEventHead, "", events); err != nil {
			return err
		}
		for _, p := range ps {
			if p.finish != nil {
				if _, err := tx.StmtContext(ctx, s.finishRunSt).ExecContext(ctx, append(p.finish, p.runID)...); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, p := range ps {
		first := lasts[i] - int64(len(p.evs)) + 1
		for j := range p.evs {
			p.evs[j].RunID, p.evs[j].Seq = p.runID, first+int64(j)
		}
	}
	return nil
}

// stepCols are the columns of a step after its key, in stepArgs' order.
const stepCols = `step_order, type, iteration, attempts, status, params, output, output_ref, error,
	config_hash, cached, pinned, started_at, finished_at, duration_ms, tokens, cost_usd, process_group, masked, wake_at`

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
		st.StepOrder, st.Type, st.Iteration, st.Attempts, st.Status, text(params), text(output), st.OutputRef, text(stepErr),
		st.ConfigHash, st.Cached, st.Pinned, microsPtr(st.StartedAt), microsPtr(st.FinishedAt), st.DurationMS, st.Tokens, st.CostUSD,
		st.ProcessGroup, st.Masked, microsPtr(st.WakeAt)}, nil
}

// Steps returns the steps of the run's latest generation, by step order.
func (s *Store) Steps(ctx context.Context, runID string) ([]*store.Step, error) {
	return s.steps(ctx, runID, `SELECT run_id, generation, node, visit, `+stepCols+` FROM steps
		WHERE run_id = ?1 AND generation = (SELECT MAX(generation) FROM steps WHERE run_id = ?1)
		ORDER BY step_order, node, visit`)
}

// StepHistory returns the steps of every generation of the run.
func (s *Store) StepHistory(ctx context.Context, runID string) ([]*store.Step, error) {
	return s.steps(ctx, runID, `SELECT run_id, generation, node, visit, `+stepCols+` FROM steps
		WHERE run_id = ?1 ORDER BY generation, step_order, node, visit`)
}

func (s *Store) steps(ctx context.Context, runID, q string) ([]*store.Step, error) {
	op := fmt.Sprintf("reading the steps of run %s", runID)
	rows, err := s.r.QueryContext(ctx, q, runID)
	if err != nil {
		return nil, s.failed(op, err)
	}
	defer func() { _ = rows.Close() }()
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
		if err := runExists(ctx, s.r, runID); err != nil {
			return nil, s.failed(op, err)
		}
	}
	return steps, nil
}

func scanStep(sc scanner) (*store.Step, error) {
	var st store.Step
	var params, output, stepErr []byte
	var started, finished, wake sql.NullInt64
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
	st.StartedAt = fromMicrosPtr(started)
	st.FinishedAt = fromMicrosPtr(finished)
	st.WakeAt = fromMicrosPtr(wake)
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
	var last int64
	err = s.writeHot(ctx, op, func(tx *sql.Tx) error {
		if err := s.runExistsTx(ctx, tx, runID); err != nil {
			return err
		}
		var err error
		last, err = s.appendEventsTx(ctx, tx, runID, events, data)
		return err
	})
	if err != nil {
		return err
	}
	first := last - int64(len(events)) + 1
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

// appendEventsTx numbers and inserts events; it returns the last seq.
//
// The next seq is read as the run's largest, through the events' primary
// key (run_id, seq): one B-tree descent, and nothing written but the events
// themselves. The runs.event_seq counter of schema version 1 is no longer
// kept: updating it on every commit rewrote the run's whole row (inputs,
// outputs and all) into the write-ahead log each time. Events are only ever
// deleted with their run, so the largest seq is the last one given out.
// Seqs stay unique and increasing because every write goes through the one
// write connection in a BEGIN IMMEDIATE transaction.
const (
	lastSeq         = `SELECT COALESCE(MAX(seq), 0) FROM events WHERE run_id = ?`
	insertEventHead = `INSERT INTO events (run_id, seq, time, type, node, visit, iteration, data) VALUES `
	insertEvent     = insertEventHead + `(?, ?, ?, ?, ?, ?, ?, ?)`
)

func (s *Store) runExistsTx(ctx context.Context, tx *sql.Tx, id string) error {
	return s.fenceTx(ctx, tx, id, "")
}

// fenceTx checks that the run exists and, when token is set, that token
// is its owner's.
func (s *Store) fenceTx(ctx context.Context, tx *sql.Tx, id, token string) error {
	var owner string
	err := tx.StmtContext(ctx, s.runExistsSt).QueryRowContext(ctx, id).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	if err == nil && token != "" && owner != token {
		return fmt.Errorf("run %s: %w", id, store.ErrLeaseLost)
	}
	return err
}

// finishRun writes a run's final record and releases its lease.
const finishRun = `UPDATE runs SET status = ?, outputs = ?, error = ?, finished_at = ?, tokens = ?, cost_usd = ?, wake_at = ?,
	owner_host = '', owner_pid = 0, owner_token = '', lease_until = 0 WHERE id = ?`

func finishArgs(r *store.Run) ([]any, error) {
	outputs, err := store.EncodeMap(r.Outputs)
	if err != nil {
		return nil, fmt.Errorf("encoding the outputs: %w", err)
	}
	runErr, err := store.EncodeError(r.Error)
	if err != nil {
		return nil, fmt.Errorf("encoding the error: %w", err)
	}
	return []any{r.Status, text(outputs), text(runErr), microsPtr(r.FinishedAt), r.Tokens, r.CostUSD, microsPtr(r.WakeAt)}, nil
}

func (s *Store) appendEventsTx(ctx context.Context, tx *sql.Tx, runID string, events []store.Event, data [][]byte) (int64, error) {
	var prev int64
	if err := tx.StmtContext(ctx, s.lastSeqSt).QueryRowContext(ctx, runID).Scan(&prev); err != nil {
		return 0, err
	}
	first := prev + 1
	last := prev + int64(len(events))
	rows := make([][]any, len(events))
	for i, ev := range events {
		rows[i] = []any{runID, first + int64(i), micros(ev.Time), ev.Type, ev.Node, ev.Visit, ev.Iteration, text(data[i])}
	}
	if err := s.insertRows(ctx, tx, s.insertEvSt, insertEventHead, "", rows); err != nil {
		return 0, err
	}
	return last, nil
}

// Events returns up to limit of the run's events after afterSeq, in order.
func (s *Store) Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]store.Event, error) {
	op := fmt.Sprintf("reading the events of run %s", runID)
	if limit <= 0 {
		limit = -1 // no limit
	}
	rows, err := s.r.QueryContext(ctx, `SELECT seq, time, type, node, visit, iteration, data FROM events
		WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`, runID, afterSeq, limit)
	if err != nil {
		return nil, s.failed(op, err)
	}
	defer func() { _ = rows.Close() }()
	var events []store.Event
	for rows.Next() {
		ev := store.Event{RunID: runID}
		var t int64
		var data []byte
		if err := rows.Scan(&ev.Seq, &t, &ev.Type, &ev.Node, &ev.Visit, &ev.Iteration, &data); err != nil {
			return nil, s.failed(op, err)
		}
		ev.Time = fromMicros(t)
		if ev.Data, err = store.DecodeMap(data); err != nil {
			return nil, fmt.Errorf("%s: event %d: decoding the data: %w", op, ev.Seq, err)
		}
		events = append(events, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, s.failed(op, err)
	}
	if len(events) == 0 {
		if err := runExists(ctx, s.r, runID); err != nil {
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
	return s.write(ctx, "saving the checkpoint of run "+runID, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO checkpoints (run_id, data, updated_at)
			SELECT id, ?, ? FROM runs WHERE id = ?
			ON CONFLICT (run_id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`,
			data, micros(now()), runID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
		}
		return nil
	})
}

// Checkpoint returns the run's checkpoint.
func (s *Store) Checkpoint(ctx context.Context, runID string) ([]byte, error) {
	var data []byte
	err := s.r.QueryRowContext(ctx, `SELECT data FROM checkpoints WHERE run_id = ?`, runID).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
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

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// runExists returns an error wrapping store.ErrNotFound when there is no
// run id.
func runExists(ctx context.Context, q querier, id string) error {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	return err
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
	return s.write(ctx, op, func(tx *sql.Tx) error {
		if err := runExists(ctx, tx, sig.RunID); err != nil {
			return err
		}
		var seq int64
		err := tx.QueryRowContext(ctx, `INSERT INTO signals (run_id, node, visit, seq, data, created_at)
			SELECT ?1, ?2, ?3, COALESCE(MAX(seq), 0) + 1, ?4, ?5 FROM signals WHERE run_id = ?1
			ON CONFLICT (run_id, node, visit) DO NOTHING RETURNING seq`,
			sig.RunID, sig.Node, sig.Visit, string(data), micros(sig.CreatedAt)).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("node %s visit %d of run %s has a signal already: %w", sig.Node, sig.Visit, sig.RunID, store.ErrExists)
		}
		if err != nil {
			return err
		}
		sig.Seq = seq
		_, err = tx.ExecContext(ctx, `UPDATE runs SET wake_at = MIN(COALESCE(wake_at, ?1), ?1)
			WHERE id = ?2 AND status = 'waiting'`, micros(sig.CreatedAt), sig.RunID)
		return err
	})
}

// Signals returns the run's signals after afterSeq, in order.
func (s *Store) Signals(ctx context.Context, runID string, afterSeq int64) ([]store.Signal, error) {
	op := fmt.Sprintf("reading the signals of run %s", runID)
	rows, err := s.r.QueryContext(ctx, `SELECT node, visit, seq, data, created_at FROM signals
		WHERE run_id = ? AND seq > ? ORDER BY seq`, runID, afterSeq)
	if err != nil {
		return nil, s.failed(op, err)
	}
	defer func() { _ = rows.Close() }()
	var out []store.Signal
	for rows.Next() {
		sig := store.Signal{RunID: runID}
		var data []byte
		var created int64
		if err := rows.Scan(&sig.Node, &sig.Visit, &sig.Seq, &data, &created); err != nil {
			return nil, s.failed(op, err)
		}
		m, err := store.DecodeMap(data)
		if err != nil {
			return nil, fmt.Errorf("%s: signal %d: decoding the data: %w", op, sig.Seq, err)
		}
		sig.Data, sig.CreatedAt = m["data"], fromMicros(created)
		out = append(out, sig)
	}
	if err := rows.Err(); err != nil {
		return nil, s.failed(op, err)
	}
	if len(out) == 0 {
		if err := runExists(ctx, s.r, runID); err != nil {
			return nil, s.failed(op, err)
		}
	}
	return out, nil
}
