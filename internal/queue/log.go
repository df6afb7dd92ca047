package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

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
// lossless encoding. decodeEvent reads it with encoding/json; appendBody
// writes it without, the same bytes (TestEventEncodingKeepsTheStoredFormat
// holds the two to the same fields, in the same order).
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

// parts are an event's maps and error in the store's lossless encoding
// (store.EncodeMap, store.EncodeError): what its body holds of them.
type parts struct {
	payload, output, directives, params, data, err []byte
}

func (e *event) parts() (parts, error) {
	var p parts
	var err error
	enc := func(m map[string]any) []byte {
		if err != nil || m == nil {
			return nil
		}
		var raw []byte
		raw, err = store.EncodeMap(m)
		return raw
	}
	p.payload = enc(e.Payload)
	p.output = enc(e.Output)
	p.directives = enc(e.Directives)
	p.params = enc(e.Params)
	if e.Kind == kindSignal {
		p.data = enc(map[string]any{"data": e.Data})
	}
	if err != nil {
		return parts{}, err
	}
	if e.Err != nil {
		if p.err, err = store.EncodeError(e.Err); err != nil {
			return parts{}, err
		}
	}
	return p, nil
}

func (e *event) encode() ([]byte, error) {
	raw, _, err := e.encodeParts()
	return raw, err
}

// encodeParts returns e's body and the parts it was made of.
func (e *event) encodeParts() ([]byte, parts, error) {
	p, err := e.parts()
	if err != nil {
		return nil, parts{}, err
	}
	raw, err := e.appendBody(make([]byte, 0, bodyRoom(p)), p)
	return raw, p, err
}

// appendBody appends e's body (the JSON of body) made of its parts: the
// bytes json.Marshal writes for it, without its reflection and its second
// pass over each part.
func (e *event) appendBody(b []byte, p parts) ([]byte, error) {
	b = append(b, '{')
	field := func(name string) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
	}
	raw := func(name string, v []byte) {
		if len(v) > 0 {
			field(name)
			b = appendEscapedHTML(b, v)
		}
	}
	num := func(name string, n int64) {
		if n != 0 {
			field(name)
			b = strconv.AppendInt(b, n, 10)
		}
	}
	var err error
	marshal := func(name string, v any) {
		if err != nil {
			return
		}
		var j []byte
		if j, err = json.Marshal(v); err == nil {
			field(name)
			b = append(b, j...)
		}
	}
	raw("payload", p.payload)
	num("task", e.Task)
	raw("output", p.output)
	raw("directives", p.directives)
	raw("error", p.err)
	raw("params", p.params)
	if !e.Started.IsZero() {
		marshal("started", e.Started)
	}
	if e.NotStarted {
		field("not_started")
		b = append(b, "true"...)
	}
	if e.Hash != "" {
		marshal("hash", e.Hash)
	}
	if e.RanOn != nil {
		marshal("ran_on", e.RanOn)
	}
	num("timer", e.Timer)
	raw("data", p.data)
	if !e.Sent.IsZero() {
		marshal("sent", e.Sent)
	}
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// bodyRoom is room enough for a body of parts p and its other fields.
func bodyRoom(p parts) int {
	return 192 + len(p.payload) + len(p.output) + len(p.directives) + len(p.params) + len(p.data) + len(p.err)
}

// appendEscapedHTML appends the compact JSON v as encoding/json writes a
// json.RawMessage: with <, >, & and U+2028, U+2029 escaped.
func appendEscapedHTML(b, v []byte) []byte {
	if !bytes.ContainsAny(v, "<>&\u2028\u2029") {
		return append(b, v...)
	}
	var buf bytes.Buffer
	json.HTMLEscape(&buf, v)
	return append(b, buf.Bytes()...)
}

func decodeEvent(seq int64, kind string, at time.Time, node string, visit int, raw []byte) (*event, error) {
	var b body
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, err
	}
	e := &event{Seq: seq, Kind: kind, At: at.UTC(), Node: node, Visit: visit, Task: b.Task, Timer: b.Timer, NotStarted: b.NotStarted, Hash: b.Hash, RanOn: b.RanOn}
	p := parts{payload: b.Payload, output: b.Output, directives: b.Directives, params: b.Params, data: b.Data, err: b.Err}
	if err := e.decodeParts(p); err != nil {
		return nil, err
	}
	if b.Started != nil {
		e.Started = b.Started.UTC()
	}
	if b.Sent != nil {
		e.Sent = b.Sent.UTC()
	}
	return e, nil
}

// decodeParts sets e's maps and error from their encoding p.
func (e *event) decodeParts(p parts) error {
	var err error
	dec := func(raw []byte) map[string]any {
		if err != nil || len(raw) == 0 {
			return nil
		}
		var m map[string]any
		m, err = store.DecodeMap(raw)
		return m
	}
	e.Payload = dec(p.payload)
	e.Output = dec(p.output)
	e.Directives = dec(p.directives)
	e.Params = dec(p.params)
	if d := dec(p.data); d != nil {
		e.Data = d["data"]
	}
	if err != nil {
		return err
	}
	if len(p.err) > 0 {
		if e.Err, err = store.DecodeError(p.err); err != nil {
			return err
		}
	}
	return nil
}

// roundTrip returns e as it reads back from the history, so the worker
// that applies it feeds the scheduler what a replay will: its maps and
// error decoded from the encoding its body holds (decoded), not the whole
// body read again (TestEventEncodingKeepsTheStoredFormat).
// The bytes returned are what is stored: sealed when they hold a secret.
func (e *event) roundTrip(s *sealer) (*event, []byte, error) {
	raw, p, err := e.encodeParts()
	if err != nil {
		return nil, nil, err
	}
	stored, err := s.seal(raw, e.Task, e.Timer)
	if err != nil {
		return nil, nil, err
	}
	back, err := e.decoded(p)
	return back, stored, err
}

// decoded is e as decodeEvent reads it from a body of parts p: its maps
// and error decoded from their encoding, its times in UTC, the rest as
// they are.
func (e *event) decoded(p parts) (*event, error) {
	back := &event{Seq: e.Seq, Kind: e.Kind, At: e.At.UTC(), Node: e.Node, Visit: e.Visit, Task: e.Task, Timer: e.Timer, NotStarted: e.NotStarted, Hash: e.Hash}
	if !utf8.ValidString(e.Hash) {
		back.Hash = ""
		if err := readBackJSON(e.Hash, &back.Hash); err != nil {
			return nil, err
		}
	}
	if on := e.RanOn; on != nil {
		ranOn := *on
		back.RanOn = &ranOn
		if !utf8.ValidString(on.Host) || !utf8.ValidString(on.Worker) { // its text fields
			back.RanOn = &record.Place{}
			if err := readBackJSON(on, back.RanOn); err != nil {
				return nil, err
			}
		}
	}
	if err := back.decodeParts(p); err != nil {
		return nil, err
	}
	if !e.Started.IsZero() {
		back.Started = readBack(e.Started)
	}
	if !e.Sent.IsZero() {
		back.Sent = readBack(e.Sent)
	}
	return back, nil
}

// readBackJSON sets *dst to v as it reads back from its JSON: what a
// replay reads of a value whose text is not UTF-8.
func readBackJSON(v, dst any) error {
	raw, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(raw, dst)
	}
	return err
}

// readBack is t as it reads back from its JSON, in UTC: the same instant,
// unless its zone's offset has seconds, which RFC 3339 does not write.
func readBack(t time.Time) time.Time {
	if _, offset := t.Zone(); offset%60 == 0 {
		return t.UTC()
	}
	var back time.Time
	raw, err := t.MarshalJSON()
	if err == nil {
		err = back.UnmarshalJSON(raw)
	}
	if err != nil {
		return t.UTC() // not reached: appendBody wrote t
	}
	return back.UTC()
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
