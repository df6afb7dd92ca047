package queue

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlstore"
	"github.com/skeinhq/skein/node"
)

// Kinds of history events.
const (
	kindStart    = "start"
	kindFinished = "finished"
	kindTimer    = "timer"
	kindSignal   = "signal"
	kindCancel   = "cancel"
	// kindBegan: a worker took a task's job and starts its node. The
	// scheduler is not fed; the step is marked running.
	kindBegan = "began"
	// kindUnbegan: a stopping worker stopped the task's node; its job runs
	// again. The step is pending again.
	kindUnbegan = "unbegan"
	// kindWaiting: the task's node waits for a child run it started. The
	// scheduler is not fed; the step is marked waiting.
	kindWaiting = "waiting"
)

// event is one entry of a run's history: what the scheduler was fed.
type event struct {
	Seq  int64
	Kind string
	// At is when the event was applied: the time of the steps it changed.
	At time.Time

	Payload map[string]any // start

	Task       int64 // finished, began, unbegan, waiting
	Output     map[string]any
	Directives map[string]any
	Err        *node.Error
	Params     map[string]any
	Started    time.Time
	// NotStarted: the task was withdrawn before it ran (its run stops).
	NotStarted bool
	// Hash is the attempt's config hash (engine.ConfigHash).
	Hash string
	// RanOn is, for began, the worker that took the task's job.
	RanOn *record.Place

	Timer int64 // timer

	Node  string // signal
	Visit int
	Data  any
	Sent  time.Time
}

// body is how an event's fields are kept: maps and errors in the store's
// lossless encoding.
type body struct {
	Payload    json.RawMessage `json:"payload,omitempty"`
	Task       int64           `json:"task,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	Directives json.RawMessage `json:"directives,omitempty"`
	Err        json.RawMessage `json:"error,omitempty"`
	Params     json.RawMessage `json:"params,omitempty"`
	Started    *time.Time      `json:"started,omitempty"`
	NotStarted bool            `json:"not_started,omitempty"`
	Hash       string          `json:"hash,omitempty"`
	RanOn      *record.Place   `json:"ran_on,omitempty"`
	Timer      int64           `json:"timer,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	Sent       *time.Time      `json:"sent,omitempty"`
}

func (e *event) encode() ([]byte, error) {
	var b body
	var err error
	enc := func(m map[string]any) json.RawMessage {
		if err != nil || m == nil {
			return nil
		}
		var raw []byte
		raw, err = store.EncodeMap(m)
		return raw
	}
	b.Payload = enc(e.Payload)
	b.Output = enc(e.Output)
	b.Directives = enc(e.Directives)
	b.Params = enc(e.Params)
	if e.Kind == kindSignal {
		b.Data = enc(map[string]any{"data": e.Data})
	}
	if err != nil {
		return nil, err
	}
	if e.Err != nil {
		if b.Err, err = store.EncodeError(e.Err); err != nil {
			return nil, err
		}
	}
	b.Task, b.Timer, b.NotStarted, b.Hash, b.RanOn = e.Task, e.Timer, e.NotStarted, e.Hash, e.RanOn
	if !e.Started.IsZero() {
		b.Started = &e.Started
	}
	if !e.Sent.IsZero() {
		b.Sent = &e.Sent
	}
	return json.Marshal(b)
}

func decodeEvent(seq int64, kind string, at time.Time, node string, visit int, raw []byte) (*event, error) {
	var b body
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, err
	}
	e := &event{Seq: seq, Kind: kind, At: at.UTC(), Node: node, Visit: visit, Task: b.Task, Timer: b.Timer, NotStarted: b.NotStarted, Hash: b.Hash, RanOn: b.RanOn}
	var err error
	dec := func(raw json.RawMessage) map[string]any {
		if err != nil || len(raw) == 0 {
			return nil
		}
		var m map[string]any
		m, err = store.DecodeMap(raw)
		return m
	}
	e.Payload = dec(b.Payload)
	e.Output = dec(b.Output)
	e.Directives = dec(b.Directives)
	e.Params = dec(b.Params)
	if d := dec(b.Data); d != nil {
		e.Data = d["data"]
	}
	if err != nil {
		return nil, err
	}
	if len(b.Err) > 0 {
		if e.Err, err = store.DecodeError(b.Err); err != nil {
			return nil, err
		}
	}
	if b.Started != nil {
		e.Started = b.Started.UTC()
	}
	if b.Sent != nil {
		e.Sent = b.Sent.UTC()
	}
	return e, nil
}

// roundTrip returns e as it reads back from the history, so the worker
// that applies it feeds the scheduler what a replay will.
// The bytes returned are what is stored: sealed when they hold a secret.
func (e *event) roundTrip(s *sealer) (*event, []byte, error) {
	raw, err := e.encode()
	if err != nil {
		return nil, nil, err
	}
	stored, err := s.seal(raw, e.Task, e.Timer)
	if err != nil {
		return nil, nil, err
	}
	back, err := decodeEvent(e.Seq, e.Kind, e.At, e.Node, e.Visit, raw)
	return back, stored, err
}

// outcome is a finished event's task outcome.
func (e *event) outcome() engine.Outcome {
	return engine.Outcome{Output: e.Output, Directives: e.Directives, Err: e.Err, NotStarted: e.NotStarted}
}

const logTable = `skein_queue_log`

const readLogSQL = `SELECT seq, kind, at, node, visit, body FROM ` + logTable + `
	WHERE run_id = $1 AND seq > $2 ORDER BY seq`

// queueExpectLog queues in b a statement that fails the transaction
// (postgres.Unexpected) when the run's history holds an event after seq:
// what a transaction queues after it, computed from a state that ends at
// seq, is then not written. Queued after the statement that holds the
// run's row, it reads the history as the row's previous holder committed
// it.
func queueExpectLog(b *pgx.Batch, runID string, seq int64) {
	b.Queue(expectLogSQL, runID, seq)
}

const expectLogSQL = `SELECT 1 / (1 - count(*)::int) FROM (SELECT 1 FROM ` + logTable + `
	WHERE run_id = $1 AND seq > $2 LIMIT 1) AS later`

// queueReadLog queues in b the read of the run's history after seq into
// *dst.
func queueReadLog(b *pgx.Batch, runID string, s *sealer, after int64, dst *[]*event) {
	b.Queue(readLogSQL, runID, after).Query(func(rows pgx.Rows) error {
		evs, err := scanLog(rows, runID, s)
		*dst = evs
		return err
	})
}

func scanLog(rows pgx.Rows, runID string, s *sealer) ([]*event, error) {
	raws, err := scanRawLog(rows, runID)
	if err != nil {
		return nil, err
	}
	return openLog(raws, runID, s)
}

// rawEvent is a row of the history as stored: its body sealed when it
// holds a secret.
type rawEvent struct {
	seq   int64
	kind  string
	at    time.Time
	node  string
	visit int
	body  []byte
}

// queueReadRawLog queues in b the read of the run's whole history into
// *dst, to be opened (openLog) once the run's sealer is known.
func queueReadRawLog(b *pgx.Batch, runID string, dst *[]rawEvent) {
	b.Queue(readLogSQL, runID, 0).Query(func(rows pgx.Rows) error {
		raws, err := scanRawLog(rows, runID)
		*dst = raws
		return err
	})
}

func scanRawLog(rows pgx.Rows, runID string) ([]rawEvent, error) {
	defer rows.Close()
	var out []rawEvent
	for rows.Next() {
		var r rawEvent
		if err := rows.Scan(&r.seq, &r.kind, &r.at, &r.node, &r.visit, &r.body); err != nil {
			return nil, fmt.Errorf("reading the history of run %s: %w", runID, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the history of run %s: %w", runID, err)
	}
	return out, nil
}

// openLog opens and decodes the rows of a run's history.
func openLog(raws []rawEvent, runID string, s *sealer) ([]*event, error) {
	out := make([]*event, 0, len(raws))
	for _, r := range raws {
		body, err := s.open(r.body)
		if err != nil {
			return nil, fmt.Errorf("reading event %d of run %s: %w", r.seq, runID, err)
		}
		e, err := decodeEvent(r.seq, r.kind, r.at, r.node, r.visit, body)
		if err != nil {
			return nil, fmt.Errorf("reading event %d of run %s: %w", r.seq, runID, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// logRow is the values of an event's row in the history.
func logRow(runID string, e *event, raw []byte) []any {
	return []any{runID, e.Seq, e.Kind, e.At, e.Node, e.Visit, raw}
}

// maxLogRows bounds the rows of one insert of queueLogRows.
const maxLogRows = 64

// queueLogRows queues in b the insert of history rows (logRow), several
// to a statement: a statement costs the database more than a row.
func queueLogRows(b *pgx.Batch, rows [][]any) {
	for len(rows) > 0 {
		n := min(len(rows), maxLogRows)
		args := make([]any, 0, n*7)
		for _, r := range rows[:n] {
			args = append(args, r...)
		}
		b.Queue(logInsert(n), args...)
		rows = rows[n:]
	}
}

// logInsert is the history's insert of n rows.
func logInsert(n int) string {
	return sqlstore.RowsSQL(`INSERT INTO `+logTable+` (run_id, seq, kind, at, node, visit, body) VALUES `, "", 7, n)
}
