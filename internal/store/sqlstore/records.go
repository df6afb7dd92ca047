package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
)

// stepCols are the columns of a step after its key, in StepArgs' order.
const stepCols = `step_order, type, iteration, attempts, status, params, output, output_ref, error,
	config_hash, cached, pinned, started_at, finished_at, duration_ms, tokens, cost_usd, process_group, masked, wake_at, skip_reason,
	taken_handle, ran_host, ran_pid, ran_worker, confidence`

// stepEventCols are the columns in which a step row carries its node's
// node_finished event and the node_started just before it (the seq of
// the finish less one; started_time NULL when not carried), in a dialect
// whose writer does (Dialect.StepEvents): after stepCols in a step row's
// values; written, never read as the step's.
const stepEventCols = `started_time, finished_seq, finished_time, finished_data`

// stepArgCount is the number of values of a step row: its key, stepCols
// and stepEventCols.
var stepArgCount = 4 + strings.Count(stepCols, ",") + 1 + StepEventArgs

// StepEventArgs is the number of values of stepEventCols, the last of a
// step row's: NULL unless the dialect's writer sets them (StepArgs).
const StepEventArgs = 4

// StepArgCount is the number of values of a step row (StepArgs).
func StepArgCount() int { return stepArgCount }

const insertStepHead = `INSERT INTO steps (run_id, generation, node, visit, ` + stepCols + `, ` + stepEventCols + `) VALUES `

// upsertStepTail replaces a step saved again (a retry, a finish). The
// events a step row carries stay unless the new row carries others.
const upsertStepTail = `
	ON CONFLICT (run_id, generation, node, visit) DO UPDATE SET
		step_order = excluded.step_order, type = excluded.type, iteration = excluded.iteration,
		attempts = excluded.attempts, status = excluded.status, params = excluded.params,
		output = excluded.output, output_ref = excluded.output_ref, error = excluded.error,
		config_hash = excluded.config_hash, cached = excluded.cached, pinned = excluded.pinned,
		started_at = excluded.started_at, finished_at = excluded.finished_at,
		duration_ms = excluded.duration_ms, tokens = excluded.tokens, cost_usd = excluded.cost_usd,
		process_group = excluded.process_group, masked = excluded.masked, wake_at = excluded.wake_at,
		skip_reason = excluded.skip_reason, taken_handle = excluded.taken_handle,
		ran_host = excluded.ran_host, ran_pid = excluded.ran_pid, ran_worker = excluded.ran_worker,
		confidence = excluded.confidence,
		started_time = CASE WHEN excluded.finished_seq IS NULL THEN steps.started_time ELSE excluded.started_time END,
		finished_seq = COALESCE(excluded.finished_seq, steps.finished_seq),
		finished_time = CASE WHEN excluded.finished_seq IS NULL THEN steps.finished_time ELSE excluded.finished_time END,
		finished_data = CASE WHEN excluded.finished_seq IS NULL THEN steps.finished_data ELSE excluded.finished_data END`

// rareStepCols are the columns of a step row that most steps leave at
// their defaults (the zero of their type, NULL): a row whose values of
// them all are so can be written lean, without them (AppendLeanStepRow), so
// fewer values are bound to the statement: the SQLite store does, whose
// table's defaults are those zeros.
// Where a step ran (ran_host, ran_pid) is not one of them: every step
// that started has it.
var rareStepCols = []string{"output_ref", "cached", "pinned", "tokens", "cost_usd", "process_group", "masked",
	"wake_at", "skip_reason", "taken_handle", "ran_worker", "confidence"}

// leanStep is the shape of a lean step row: the indexes in a step row
// (StepArgs) of the values it keeps and of those it leaves out, and the
// head of its INSERT.
var leanStep = func() (l struct {
	keep, rare []int
	head       string
}) {
	cols := strings.Split(`run_id, generation, node, visit, `+stepCols+`, `+stepEventCols, ",")
	var kept []string
	for i, c := range cols {
		c = strings.TrimSpace(c)
		if slices.Contains(rareStepCols, c) {
			l.rare = append(l.rare, i)
			continue
		}
		l.keep = append(l.keep, i)
		kept = append(kept, c)
	}
	if len(l.rare) != len(rareStepCols) || len(cols) != stepArgCount {
		panic("sqlstore: the rare step columns are not all columns of a step")
	}
	l.head = `INSERT INTO steps (` + strings.Join(kept, ", ") + `) VALUES `
	return l
}()

// LeanStepHead is the head of an INSERT of lean step rows (AppendLeanStepRow);
// UpsertStepTail ends it as it ends one of whole rows (a column left out
// takes its default in excluded).
func LeanStepHead() string { return leanStep.head }

// LeanStepArgCount is the number of values of a lean step row.
func LeanStepArgCount() int { return len(leanStep.keep) }

// AppendLeanStepRow appends to dst the lean row of a step row (StepArgs,
// its carried events set or not) that IsLeanStepRow accepts: a writer
// putting the rows of a multi-row INSERT together takes them this way
// without a slice a row.
func AppendLeanStepRow(dst, row []any) []any {
	for _, i := range leanStep.keep {
		dst = append(dst, row[i])
	}
	return dst
}

// IsLeanStepRow reports whether a step row can be written lean: every
// column a lean row leaves out holds its default.
func IsLeanStepRow(row []any) bool {
	for _, i := range leanStep.rare {
		if !isDefault(row[i]) {
			return false
		}
	}
	return true
}

// isDefault reports whether v, a value of a step row, is what its
// column holds when left out.
func isDefault(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case int:
		return x == 0
	case int64:
		return x == 0
	case float64:
		return x == 0
	case *float64:
		return x == nil
	}
	return false
}

const insertEventHead = `INSERT INTO events (run_id, seq, time, type, node, visit, iteration, data) VALUES `

// eventArgCount is the number of values of an event row (EventArgs).
const eventArgCount = 8

// EventArgCount is the number of values of an event row (EventArgs).
func EventArgCount() int { return eventArgCount }

// Batch is a store.Batch with its rows encoded for the statements of SQL.
type Batch struct {
	store.Batch
	// Steps are the arguments of SQL.UpsertStep, a step each.
	Steps [][]any
	// Plan are the arguments of SQL.InsertPlan, a row of the batch's
	// planned steps for each generation they belong to.
	Plan [][]any
	// Finish, when the batch finishes its run, are the arguments of
	// SQL.FinishRun, its count of events left as it is (FinishWithSeq).
	Finish []any
	// Counted is set when the run's row counts the batch's events
	// already (InsertCountedRun made it in the same transaction): no
	// SetLastSeq.
	Counted bool
	data    [][]byte
	run     any // RunID, boxed once for its rows (Batches sets it)
}

// Batches encodes the rows of batches, before a transaction starts.
func (s *Statements) Batches(batches []store.Batch) ([]Batch, error) {
	out := make([]Batch, len(batches))
	for i, b := range batches {
		var err error
		out[i].Batch, out[i].run = b, b.RunID
		if out[i].Steps, err = s.stepsArgs(out[i].run, b.Steps); err != nil {
			return nil, fmt.Errorf("saving steps of run %s: %w", b.RunID, err)
		}
		out[i].Plan = s.c.planArgs(b.RunID, b.Plan)
		if out[i].data, err = eventData(b.Events); err != nil {
			return nil, fmt.Errorf("appending events to run %s: %w", b.RunID, err)
		}
		if b.Finish != nil {
			if out[i].Finish, err = s.c.finishArgs(b.RunID, b.Finish); err != nil {
				return nil, fmt.Errorf("finishing run %s: %w", b.RunID, err)
			}
		}
	}
	return out, nil
}

// EventArgs returns the arguments of SQL.InsertEvent for the batch's
// events, numbered from first.
func (s *Statements) EventArgs(b Batch, first int64) [][]any {
	rows := make([][]any, len(b.Events))
	for i := range b.Events {
		rows[i] = s.EventRow(b, first, i)
	}
	return rows
}

// EventRow returns the arguments of SQL.InsertEvent for the batch's event
// i, the batch's events numbered from first.
func (s *Statements) EventRow(b Batch, first int64, i int) []any {
	ev := &b.Events[i]
	return []any{b.run, first + int64(i), s.c.time(ev.Time), eventTypeArg(ev.Type), ev.Node, int64(ev.Visit), int64(ev.Iteration), s.c.d.JSON(b.data[i])}
}

// EventTime and EventData are the time and the data of the batch's event
// i as EventRow gives them.
func (s *Statements) EventTime(b Batch, i int) any { return s.c.time(b.Events[i].Time) }

// EventData: see EventTime.
func (s *Statements) EventData(b Batch, i int) any { return s.c.d.JSON(b.data[i]) }

// Numbered sets the RunID and Seq of the batch's events, numbered from
// first, once they are committed.
func (b Batch) Numbered(first int64) {
	for j := range b.Events {
		b.Events[j].RunID, b.Events[j].Seq = b.RunID, first+int64(j)
	}
}

// stepsArgs returns the arguments of SQL.UpsertStep for each step.
func (s *Statements) stepsArgs(runID any, steps []*store.Step) ([][]any, error) {
	args := s.takeRows(len(steps))
	// The values every row of the batch shares are boxed once, not a
	// row at a time (an allocation each).
	shared := rowValues{run: runID}
	for i, st := range steps {
		a, err := s.c.stepArgs(args[i][:0], &shared, st)
		if err != nil {
			return nil, fmt.Errorf("step %s visit %d: %w", st.Node, st.Visit, err)
		}
		args[i] = a
	}
	return args, nil
}

// maxSpareRows bounds the step rows Statements keeps (~2 MB).
const maxSpareRows = 4096

// takeRows returns n step rows, spare ones first: each empty, with room
// for a row's values.
func (s *Statements) takeRows(n int) [][]any {
	rows := make([][]any, n)
	s.mu.Lock()
	k := min(n, len(s.spare))
	copy(rows, s.spare[len(s.spare)-k:])
	clear(s.spare[len(s.spare)-k:])
	s.spare = s.spare[:len(s.spare)-k]
	s.mu.Unlock()
	for i := k; i < n; i++ {
		rows[i] = make([]any, 0, stepArgCount)
	}
	return rows
}

// Recycle keeps the step rows of batches whose write is over, committed
// or not, for the next batches: nothing may use them after.
func (s *Statements) Recycle(bs []Batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range bs {
		for _, row := range b.Steps {
			if len(s.spare) >= maxSpareRows {
				return
			}
			if cap(row) >= stepArgCount {
				clear(row)
				s.spare = append(s.spare, row[:0])
			}
		}
	}
}

// rowValues are values of a batch's rows boxed for the driver once: the
// run's id, and the host its steps ran on, kept for the next row.
type rowValues struct {
	run     any
	host    string
	hostArg any
}

func (v *rowValues) hostOf(host string) any {
	if v.hostArg == nil || host != v.host {
		v.host, v.hostArg = host, host
	}
	return v.hostArg
}

// statusArgs are the step statuses boxed for the driver, and
// eventTypeArgs the engine's event types.
var statusArgs, eventTypeArgs = map[record.Status]any{}, map[string]any{}

func init() {
	for _, st := range []record.Status{record.StatusPending, record.StatusRunning, record.StatusSuccess, record.StatusFailed,
		record.StatusSkipped, record.StatusWaiting, record.StatusCancelled} {
		statusArgs[st] = string(st)
	}
	for _, t := range []string{record.EventExecutionStarted, record.EventExecutionFinished, record.EventNodeStarted,
		record.EventNodeFinished, record.EventBranchEvaluated, record.EventVariableSet, record.EventRetry,
		record.EventLoopIteration, record.EventLoopExited, record.EventWarning, record.EventSignalAwaited,
		record.EventSignalReceived} {
		eventTypeArgs[t] = t
	}
}

// eventTypeArg is an event's type as the driver takes it.
func eventTypeArg(t string) any {
	if a, ok := eventTypeArgs[t]; ok {
		return a
	}
	return t
}

// statusArg is a step's status as the driver takes it.
func statusArg(st record.Status) any {
	if a, ok := statusArgs[st]; ok {
		return a
	}
	return string(st)
}

// stepArgs appends the values of st's row to row.
func (c *Core) stepArgs(row []any, shared *rowValues, st *store.Step) ([]any, error) {
	docs, err := c.encode(st.Error, doc{"parameters", st.Params}, doc{"output", st.Output})
	if err != nil {
		return nil, err
	}
	gen := st.Generation
	if gen <= 0 {
		gen = 1
	}
	var ran record.Place
	if st.RanOn != nil {
		ran = *st.RanOn
	}
	// Integers as int64 and the status as a string: values a driver takes
	// as they are, not through database/sql's reflection.
	return append(row, shared.run, int64(gen), st.Node, int64(st.Visit),
		int64(st.StepOrder), st.Type, int64(st.Iteration), int64(st.Attempts), statusArg(st.Status), docs[0], docs[1], st.OutputRef, docs[2],
		st.ConfigHash, st.Cached, st.Pinned, c.timePtr(st.StartedAt), c.timePtr(st.FinishedAt), st.DurationMS, int64(st.Tokens), st.CostUSD,
		int64(st.ProcessGroup), st.Masked, c.timePtr(st.WakeAt), st.SkipReason,
		st.TakenHandle, shared.hostOf(ran.Host), int64(ran.PID), ran.Worker, st.Confidence,
		nil, nil, nil, nil), nil
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

func (c *Core) finishArgs(runID string, r *store.Run) ([]any, error) {
	docs, err := c.encode(r.Error, doc{"outputs", r.Outputs})
	if err != nil {
		return nil, err
	}
	return []any{runID, r.Status, docs[0], docs[1], c.timePtr(r.FinishedAt), r.Tokens, r.CostUSD, c.timePtr(r.WakeAt), nil}, nil
}

// FinishWithSeq returns the arguments of SQL.FinishRun that also set the
// run's count of events to seq (SetLastSeq's work, one statement fewer).
func FinishWithSeq(finish []any, seq int64) []any {
	args := slices.Clone(finish)
	args[len(args)-1] = seq
	return args
}

// doc is a map stored as JSON, named for errors.
type doc struct {
	name string
	m    map[string]any
}

// encode returns the JSON of the maps and then of e, as the dialect takes
// them (store.EncodeMap, store.EncodeError).
func (c *Core) encode(e *node.Error, maps ...doc) ([]any, error) {
	out := make([]any, 0, len(maps)+1)
	for _, d := range maps {
		b, err := store.EncodeMap(d.m)
		if err != nil {
			return nil, fmt.Errorf("encoding the %s: %w", d.name, err)
		}
		out = append(out, c.d.JSON(b))
	}
	b, err := store.EncodeError(e)
	if err != nil {
		return nil, fmt.Errorf("encoding the error: %w", err)
	}
	return append(out, c.d.JSON(b)), nil
}

// decode decodes the JSON of maps into their targets and errJSON into
// *e.
func decode(errJSON []byte, e **node.Error, maps ...decoded) error {
	for _, d := range maps {
		m, err := store.DecodeMap(d.data)
		if err != nil {
			return fmt.Errorf("decoding the %s: %w", d.name, err)
		}
		*d.dst = m
	}
	v, err := store.DecodeError(errJSON)
	if err != nil {
		return fmt.Errorf("decoding the error: %w", err)
	}
	*e = v
	return nil
}

// decoded is a map's JSON as read, and where it goes.
type decoded struct {
	name string
	data []byte
	dst  *map[string]any
}

// AppendEvents adds events to the run's log, numbering them after the ones
// already there, and sets their RunID and Seq: a batch of events alone.
func (c *Core) AppendEvents(ctx context.Context, runID string, events []store.Event) error {
	if len(events) == 0 {
		return nil
	}
	return c.save(ctx, fmt.Sprintf("appending events to run %s", runID), []store.Batch{{RunID: runID, Events: events}})
}

// SaveBatch writes the steps, events and final records of several runs in
// one transaction: the group commit of the durable recorder.
func (c *Core) SaveBatch(ctx context.Context, batches []store.Batch) error {
	return c.save(ctx, "saving a batch of steps and events", batches)
}

func (c *Core) save(ctx context.Context, op string, batches []store.Batch) error {
	bs, err := c.st.Batches(batches)
	if err != nil {
		return err
	}
	firsts, err := c.db.SaveBatches(ctx, op, bs)
	c.st.Recycle(bs)
	if err != nil {
		return err
	}
	for i, b := range bs {
		b.Numbered(firsts[i])
	}
	return nil
}

// Steps returns the steps of the run's latest generation, by step order,
// its planned steps that have no step row listed pending.
func (c *Core) Steps(ctx context.Context, runID string) ([]*store.Step, error) {
	op := fmt.Sprintf("reading the steps of run %s", runID)
	var gen int
	err := c.db.Read().QueryRow(ctx, `SELECT COALESCE(MAX(g), 0) FROM (
		SELECT MAX(generation) AS g FROM steps WHERE run_id = $1
		UNION ALL SELECT MAX(generation) FROM step_plans WHERE run_id = $1) AS gens`, runID).Scan(&gen)
	if err != nil {
		return nil, c.db.Failed(op, err)
	}
	if gen == 0 {
		return orNotFound[*store.Step](ctx, c, op, runID, nil, nil)
	}
	return c.steps(ctx, op, runID, gen, `SELECT run_id, generation, node, visit, `+stepCols+` FROM steps
		WHERE run_id = $1 AND generation = $2
		ORDER BY step_order, node, visit`)
}

// EachStep calls fn with each saved step of the run's generation gen, by
// step order, as it reads them: a run too long to hold whole is read with
// the memory of one step (the database sorts them). Planned steps with no
// row are not listed. It stops at fn's first error and returns it.
func (c *Core) EachStep(ctx context.Context, runID string, gen int, fn func(*store.Step) error) error {
	op := fmt.Sprintf("reading the steps of run %s", runID)
	rows, err := c.db.Read().Query(ctx, `SELECT run_id, generation, node, visit, `+stepCols+` FROM steps
		WHERE run_id = $1 AND generation = $2 ORDER BY step_order, node, visit`, runID, gen)
	if err != nil {
		return c.db.Failed(op, err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		st, err := scanStep(rows)
		if err != nil {
			return c.db.Failed(op, err)
		}
		n++
		if err := fn(st); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return c.db.Failed(op, err)
	}
	if n == 0 {
		if err := exists(ctx, c.db.Read(), runID); err != nil {
			return c.db.Failed(op, err)
		}
	}
	return nil
}

// StepHistory returns the steps of every generation of the run; given
// nodes, only theirs (a rerun reads its pinned nodes' and its trigger's,
// not a big run's every step).
func (c *Core) StepHistory(ctx context.Context, runID string, nodes ...string) ([]*store.Step, error) {
	op := fmt.Sprintf("reading the steps of run %s", runID)
	q := `SELECT run_id, generation, node, visit, ` + stepCols + ` FROM steps WHERE run_id = $1`
	if len(nodes) > 0 {
		q += ` AND node IN ` + placeholders(2, len(nodes))
	}
	return c.steps(ctx, op, runID, 0, q+` ORDER BY generation, step_order, node, visit`, nodes...)
}

// steps reads the steps of the run with q, of generation gen ($2; every
// generation when 0) or of the nodes given (from $2), and merges in its
// planned steps. The steps are read first: a step saved meanwhile is at
// worst listed pending.
func (c *Core) steps(ctx context.Context, op, runID string, gen int, q string, nodes ...string) ([]*store.Step, error) {
	args := []any{runID}
	if gen > 0 {
		args = append(args, gen)
	}
	for _, n := range nodes {
		args = append(args, n)
	}
	rows, err := c.db.Read().Query(ctx, q, args...)
	steps, err := collect(c, op, rows, err, scanStep)
	if err == nil {
		var planned []*store.Step
		if planned, err = c.plannedSteps(ctx, op, runID, gen); err == nil {
			if len(nodes) > 0 {
				planned = slices.DeleteFunc(planned, func(s *store.Step) bool { return !slices.Contains(nodes, s.Node) })
			}
			steps = withPlanned(steps, planned)
		}
	}
	return orNotFound(ctx, c, op, runID, steps, err)
}

// StepSelect is the head of a query of step rows that ScanStep reads:
// SELECT, their columns, FROM steps.
const StepSelect = `SELECT run_id, generation, node, visit, ` + stepCols + ` FROM steps`

// ScanStep reads a row of a query that StepSelect begins.
func ScanStep(sc Row) (*store.Step, error) { return scanStep(sc) }

func scanStep(sc Row) (*store.Step, error) {
	var st store.Step
	var params, output, stepErr []byte
	var started, finished, wake Time
	var ran record.Place
	if err := sc.Scan(&st.RunID, &st.Generation, &st.Node, &st.Visit,
		&st.StepOrder, &st.Type, &st.Iteration, &st.Attempts, &st.Status, &params, &output, &st.OutputRef, &stepErr,
		&st.ConfigHash, &st.Cached, &st.Pinned, &started, &finished, &st.DurationMS, &st.Tokens, &st.CostUSD,
		&st.ProcessGroup, &st.Masked, &wake, &st.SkipReason,
		&st.TakenHandle, &ran.Host, &ran.PID, &ran.Worker, &st.Confidence); err != nil {
		return nil, err
	}
	if err := decode(stepErr, &st.Error, decoded{"parameters", params, &st.Params}, decoded{"output", output, &st.Output}); err != nil {
		return nil, fmt.Errorf("step %s visit %d: %w", st.Node, st.Visit, err)
	}
	st.StartedAt, st.FinishedAt, st.WakeAt = started.Ptr(), finished.Ptr(), wake.Ptr()
	if ran != (record.Place{}) {
		st.RanOn = &ran
	}
	return &st, nil
}

// eventsQuery reads a run's events: its event rows and, in a dialect whose
// step rows carry events (Dialect.StepEvents), those.
const eventsQuery = `SELECT seq, time, type, node, visit, iteration, data FROM events
		WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`

// stepEventsQuery reads a run's event rows and the events its steps
// carry, merged by seq; each part reads at most a page, in the order of
// its index (the events' key, steps_by_finish). Windowed, each reads only
// seqs up to $4.
func stepEventsQuery(windowed bool) string {
	upTo := func(col, plus string) string {
		if !windowed {
			return ""
		}
		return " AND " + col + " <= $4" + plus
	}
	return `SELECT seq, time, type, node, visit, iteration, data FROM (
		SELECT * FROM (SELECT seq, time, type, node, visit, iteration, data FROM events
			WHERE run_id = $1 AND seq > $2` + upTo("seq", "") + ` ORDER BY seq LIMIT $3)
		UNION ALL
		SELECT * FROM (SELECT finished_seq - 1 AS seq, started_time AS time, 'node_started' AS type, node, visit, iteration, NULL AS data
			FROM steps WHERE run_id = $1 AND finished_seq > $2 + 1` + upTo("finished_seq", " + 1") + ` AND started_time IS NOT NULL
			ORDER BY finished_seq LIMIT $3)
		UNION ALL
		SELECT * FROM (SELECT finished_seq AS seq, finished_time AS time, 'node_finished' AS type, node, visit, iteration, finished_data AS data
			FROM steps WHERE run_id = $1 AND finished_seq > $2` + upTo("finished_seq", "") + ` ORDER BY finished_seq LIMIT $3)) AS e
	ORDER BY seq LIMIT $3`
}

var (
	stepEvents       = stepEventsQuery(false)
	stepEventsWindow = stepEventsQuery(true)
)

// Events returns up to limit of the run's events after afterSeq, in order.
func (c *Core) Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]store.Event, error) {
	op := fmt.Sprintf("reading the events of run %s", runID)
	if !c.d.StepEvents {
		return c.events(ctx, op, eventsQuery, runID, afterSeq, c.limit(limit))
	}
	if limit > 0 {
		// A run's events are numbered without a gap, so a page's are
		// those up to afterSeq+limit: each part of the read reads no more
		// than that. A page short of a run whose events go on past it
		// (which a gap would make) is read again without the window.
		upTo := afterSeq + int64(limit)
		events, err := c.events(ctx, op, stepEventsWindow, runID, afterSeq, limit, upTo)
		if err != nil || len(events) == limit {
			return events, err
		}
		var last int64
		if err := c.db.Read().QueryRow(ctx, c.st.LastSeq, runID).Scan(&last); err != nil {
			return nil, c.db.Failed(op, err)
		}
		if last <= upTo {
			return events, nil
		}
	}
	return c.events(ctx, op, stepEvents, runID, afterSeq, c.limit(limit))
}

// events reads a run's events with q and its arguments after runID.
func (c *Core) events(ctx context.Context, op, q, runID string, args ...any) ([]store.Event, error) {
	rows, err := c.db.Read().Query(ctx, q, append([]any{runID}, args...)...)
	events, err := collect(c, op, rows, err, func(row Row) (store.Event, error) {
		ev := store.Event{RunID: runID}
		var t Time
		var data []byte
		if err := row.Scan(&ev.Seq, &t, &ev.Type, &ev.Node, &ev.Visit, &ev.Iteration, &data); err != nil {
			return ev, err
		}
		ev.Time = t.T
		var err error
		if ev.Data, err = store.DecodeMap(data); err != nil {
			return ev, fmt.Errorf("event %d: decoding the data: %w", ev.Seq, err)
		}
		return ev, nil
	})
	return orNotFound(ctx, c, op, runID, events, err)
}

// SaveSignal records a signal; a second one for the same node and visit
// gives store.ErrExists.
func (c *Core) SaveSignal(ctx context.Context, sig *store.Signal) error {
	op := fmt.Sprintf("saving a signal for node %s of run %s", sig.Node, sig.RunID)
	data, err := store.EncodeMap(map[string]any{"data": sig.Data})
	if err != nil {
		return fmt.Errorf("%s: encoding the data: %w", op, err)
	}
	if sig.CreatedAt.IsZero() {
		sig.CreatedAt = Now()
	}
	return c.db.Write(ctx, op, func(tx Querier) error {
		// The run's row lock keeps the run's signals numbered in order.
		var owner string
		err := tx.QueryRow(ctx, c.st.RunOwner+c.d.LockRow, sig.RunID).Scan(&owner)
		if err := Fence(sig.RunID, "", owner, err); err != nil {
			return err
		}
		var seq int64
		err = tx.QueryRow(ctx, `INSERT INTO signals (run_id, node, visit, seq, data, created_at)
			SELECT $1, $2, $3, COALESCE(MAX(seq), 0) + 1, $4, $5 FROM signals WHERE run_id = $1
			ON CONFLICT (run_id, node, visit) DO NOTHING RETURNING seq`,
			sig.RunID, sig.Node, sig.Visit, c.d.JSON(data), c.time(sig.CreatedAt)).Scan(&seq)
		if noRows(err) {
			return fmt.Errorf("node %s visit %d of run %s has a signal already: %w", sig.Node, sig.Visit, sig.RunID, store.ErrExists)
		}
		if err != nil {
			return err
		}
		sig.Seq = seq
		_, err = tx.Exec(ctx, `UPDATE runs SET wake_at = `+c.d.Least("wake_at", "$1")+` WHERE id = $2 AND status = 'waiting'`,
			c.time(sig.CreatedAt), sig.RunID)
		return err
	})
}

// Signals returns the run's signals after afterSeq, in order.
func (c *Core) Signals(ctx context.Context, runID string, afterSeq int64) ([]store.Signal, error) {
	op := fmt.Sprintf("reading the signals of run %s", runID)
	rows, err := c.db.Read().Query(ctx, `SELECT node, visit, seq, data, created_at FROM signals
		WHERE run_id = $1 AND seq > $2 ORDER BY seq`, runID, afterSeq)
	out, err := collect(c, op, rows, err, func(row Row) (store.Signal, error) {
		sig := store.Signal{RunID: runID}
		var data []byte
		var created Time
		if err := row.Scan(&sig.Node, &sig.Visit, &sig.Seq, &data, &created); err != nil {
			return sig, err
		}
		m, err := store.DecodeMap(data)
		if err != nil {
			return sig, fmt.Errorf("signal %d: decoding the data: %w", sig.Seq, err)
		}
		sig.Data, sig.CreatedAt = m["data"], created.T
		return sig, nil
	})
	return orNotFound(ctx, c, op, runID, out, err)
}
