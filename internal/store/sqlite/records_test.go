package sqlite

import (
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlstore"
)

// A write of 85 steps and 85 events goes by INSERTs of 64, 16, 4 and 1
// rows, prepared by the first write that needs them (and only those: a
// store whose writes are short never parses a 64-row INSERT); every row is
// stored and the events are numbered on without a gap.
func TestMultiRowInsertsPreparedWhenNeeded(t *testing.T) {
	ctx := t.Context()
	s := openWithRun(t)

	const n = 64 + 16 + 4 + 1
	write := func(visit, n int) {
		steps := make([]*store.Step, n)
		events := make([]store.Event, n)
		for i := range steps {
			steps[i] = &store.Step{Node: fmt.Sprintf("n%d", i), Visit: visit, StepOrder: visit*100 + i, Type: "set", Status: "success",
				Output: map[string]any{"i": i}}
			// Not a node_started or node_finished, which the step rows
			// would carry (carry): an event row each.
			events[i] = store.Event{Type: "tool_call", Node: steps[i].Node, Visit: visit}
		}
		require.NoError(t, s.SaveBatch(ctx, []store.Batch{{RunID: "r1", Steps: steps, Events: events}}))
	}
	prepared := func() int {
		s.multiMu.Lock()
		defer s.multiMu.Unlock()
		return len(s.multi)
	}

	write(1, 5)
	require.Equal(t, 2, prepared(), "5 rows: the 4-row INSERTs of steps and of events")
	write(2, n)
	require.Equal(t, 6, prepared(), "64, 16 and 4 rows, of steps and of events")
	write(3, n)

	var steps, events, maxSeq int
	require.NoError(t, s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM steps WHERE run_id = 'r1'`).Scan(&steps))
	require.NoError(t, s.r.QueryRowContext(ctx, `SELECT COUNT(*), MAX(seq) FROM events WHERE run_id = 'r1'`).Scan(&events, &maxSeq))
	require.Equal(t, 5+2*n, steps)
	require.Equal(t, 5+2*n, events)
	require.Equal(t, events, maxSeq, "events numbered without a gap")
}

// A write of 85 steps with their node_started and node_finished events,
// which the step rows carry (carry), prepares no multi-row INSERT of
// events: none is left to insert as an event row. The events read back
// numbered as written.
func TestCarriedEventsPrepareNoEventInsert(t *testing.T) {
	ctx := t.Context()
	s := openWithRun(t)
	const n = 64 + 16 + 4 + 1
	steps := make([]*store.Step, n)
	var events []store.Event
	for i := range steps {
		node := fmt.Sprintf("n%d", i)
		steps[i] = &store.Step{Node: node, Visit: 1, StepOrder: i + 1, Type: "set", Status: "success", Output: map[string]any{"i": i}}
		events = append(events, store.Event{Type: record.EventNodeStarted, Node: node, Visit: 1},
			store.Event{Type: record.EventNodeFinished, Node: node, Visit: 1, Data: map[string]any{"status": "success"}})
	}
	require.NoError(t, s.SaveBatch(ctx, []store.Batch{{RunID: "r1", Steps: steps, Events: events}}))
	s.multiMu.Lock()
	var eventInserts []int
	for k := range s.multi {
		if k.rows == s.eventRows {
			eventInserts = append(eventInserts, k.n)
		}
	}
	s.multiMu.Unlock()
	require.Empty(t, eventInserts, "multi-row INSERTs of events were prepared")
	got, err := s.Events(ctx, "r1", 0, 0)
	require.NoError(t, err)
	require.Len(t, got, 2*n)
	for i, ev := range got {
		require.Equal(t, int64(i+1), ev.Seq)
		require.Equal(t, events[i].Type, ev.Type)
		require.Equal(t, events[i].Node, ev.Node)
	}
}

// The arguments of the multi-row INSERTs are gathered in one buffer kept
// from write to write: each write stores its own values (not the last
// write's), and between writes the buffer holds none, so it keeps no
// output alive.
func TestMultiRowArgumentsKeptEmpty(t *testing.T) {
	ctx := t.Context()
	s := openWithRun(t)

	const n = 64 + 16
	for visit := 1; visit <= 2; visit++ {
		steps := make([]*store.Step, n)
		for i := range steps {
			steps[i] = &store.Step{Node: fmt.Sprintf("n%d", i), Visit: visit, StepOrder: visit*100 + i, Type: "set", Status: "success",
				Output: map[string]any{"v": fmt.Sprintf("visit %d, node %d", visit, i)}}
		}
		require.NoError(t, s.SaveBatch(ctx, []store.Batch{{RunID: "r1", Steps: steps}}))
		require.NotZero(t, cap(s.rowArgs), "the buffer is kept")
		for i, a := range s.rowArgs[:cap(s.rowArgs)] {
			require.Nil(t, a, "argument %d is kept after the write", i)
		}
		require.NotZero(t, cap(s.rowValues), "the driver's arguments are kept")
		for i, a := range s.rowValues[:cap(s.rowValues)] {
			require.Nil(t, a.Value, "the driver's argument %d is kept after the write", i)
		}
	}
	all, err := s.StepHistory(ctx, "r1")
	require.NoError(t, err)
	require.Len(t, all, 2*n)
	for _, st := range all {
		require.Equal(t, fmt.Sprintf("visit %d, node %s", st.Visit, st.Node[1:]), st.Output["v"])
	}
}

// A node's node_finished written with its step, and the node_started just
// before it, go in the step's row, not in event rows of their own (carry);
// the step saved again with another finish turns the events it carried
// into event rows. Either way the run's events read back as written.
func TestStepRowsCarryTheirNodeEvents(t *testing.T) {
	ctx := t.Context()
	s := openWithRun(t)
	rows := func() (n int) {
		require.NoError(t, s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM events WHERE run_id = 'r1'`).Scan(&n))
		return n
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	step := &store.Step{Node: "a", Visit: 1, StepOrder: 1, Type: "set", Attempts: 1, Status: "failed"}
	first := []store.Event{
		{Time: now, Type: "node_started", Node: "a", Visit: 1},
		{Time: now.Add(time.Millisecond), Type: "node_finished", Node: "a", Visit: 1, Data: map[string]any{"status": "failed"}},
	}
	require.NoError(t, s.SaveBatch(ctx, []store.Batch{{RunID: "r1", Steps: []*store.Step{step}, Events: first}}))
	require.Equal(t, 0, rows(), "both events are in the step's row")

	again := *step
	again.Status, again.Attempts = "success", 2
	second := []store.Event{{Time: now.Add(2 * time.Millisecond), Type: "node_finished", Node: "a", Visit: 1, Data: map[string]any{"status": "success"}}}
	require.NoError(t, s.SaveBatch(ctx, []store.Batch{{RunID: "r1", Steps: []*store.Step{&again}, Events: second}}))
	require.Equal(t, 2, rows(), "the first start and finish became event rows")

	got, err := s.Events(ctx, "r1", 0, 0)
	require.NoError(t, err)
	require.Equal(t, append(first, second...), got)
	var seq int64
	require.NoError(t, s.r.QueryRowContext(ctx, `SELECT event_seq FROM runs WHERE id = 'r1'`).Scan(&seq))
	require.Equal(t, int64(3), seq, "the run's row counts its events")
}

// A page of events reads only the seqs it can hold, the run's events being
// numbered without a gap; should a run have a gap, pages still read every
// event after it.
func TestEventPagesReadPastAGap(t *testing.T) {
	ctx := t.Context()
	s := openWithRun(t)
	_, err := s.w.ExecContext(ctx, `INSERT INTO events (run_id, seq, time, type) VALUES
		('r1', 1, 1, 'a'), ('r1', 2, 2, 'b'), ('r1', 9, 9, 'c'), ('r1', 10, 10, 'd');
		UPDATE runs SET event_seq = 10 WHERE id = 'r1'`)
	require.NoError(t, err)
	var got []string
	for after := int64(0); ; {
		page, err := s.Events(ctx, "r1", after, 2)
		require.NoError(t, err)
		if len(page) == 0 {
			break
		}
		for _, ev := range page {
			got = append(got, fmt.Sprintf("%d%s", ev.Seq, ev.Type))
		}
		after = page[len(page)-1].Seq
	}
	require.Equal(t, []string{"1a", "2b", "9c", "10d"}, got)
}

// A step row whose rarely set columns all hold their defaults is written
// lean, without them; saved again, lean or whole, a step has exactly what
// it was saved with last, in any order of lean and whole rows in a batch,
// each rare column on its own.
func TestLeanStepRows(t *testing.T) {
	ctx := t.Context()
	s := openWithRun(t)

	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	conf := 0.75
	// Each of these sets one rare column; a step with none set is lean.
	rare := []func(st *store.Step){
		func(st *store.Step) { st.OutputRef = "sha256:ab" },
		func(st *store.Step) { st.Cached = true },
		func(st *store.Step) { st.Pinned = true },
		func(st *store.Step) { st.Tokens = 12 },
		func(st *store.Step) { st.CostUSD = 0.5 },
		func(st *store.Step) { st.ProcessGroup = 4242 },
		func(st *store.Step) { st.Masked = true },
		func(st *store.Step) { st.WakeAt = &at },
		func(st *store.Step) { st.SkipReason = "not_taken" },
		func(st *store.Step) { st.TakenHandle = "h1" },
		func(st *store.Step) { st.RanOn = &record.Place{Host: "h"} },
		func(st *store.Step) { st.RanOn = &record.Place{PID: 7} },
		func(st *store.Step) { st.RanOn = &record.Place{Worker: "w1"} },
		func(st *store.Step) { st.Confidence = &conf },
	}
	step := func(node string, order int, set ...func(*store.Step)) *store.Step {
		st := &store.Step{Node: node, Visit: 1, StepOrder: order, Type: "set", Status: "success", Attempts: 1,
			Params: map[string]any{"p": node}, Output: map[string]any{"o": order}, StartedAt: &at, FinishedAt: &at, DurationMS: 3}
		for _, f := range set {
			f(st)
		}
		return st
	}
	check := func(want []*store.Step) {
		t.Helper()
		got, err := s.Steps(ctx, "r1")
		require.NoError(t, err)
		require.Len(t, got, len(want))
		for i, w := range want {
			g := *got[i]
			g.RunID, g.Generation = "", 0
			w := *w
			w.RunID, w.Generation = "", 0
			require.Equal(t, w, g, "step %s", w.Node)
		}
	}

	// Lean and whole rows interleaved in one batch, and a step written
	// twice in it (whole, then lean): the last wins.
	var first []*store.Step
	for i, f := range rare {
		first = append(first, step(fmt.Sprintf("whole%02d", i), 2*i, f), step(fmt.Sprintf("lean%02d", i), 2*i+1))
	}
	twice := step("twice", 100, rare...)
	require.NoError(t, s.SaveBatch(ctx, []store.Batch{{RunID: "r1", Steps: append(first, twice, step("twice", 100))}}))
	check(append(first, step("twice", 100)))

	// Saved again the other way round: each whole one lean, each lean one
	// whole.
	var second []*store.Step
	for i, f := range rare {
		second = append(second, step(fmt.Sprintf("whole%02d", i), 2*i), step(fmt.Sprintf("lean%02d", i), 2*i+1, f))
	}
	require.NoError(t, s.SaveBatch(ctx, []store.Batch{{RunID: "r1", Steps: append(second, step("twice", 100, rare...))}}))
	check(append(second, step("twice", 100, rare...)))

	// Whole rows in runs long enough for the multi-row INSERTs (64, 16
	// and 4 rows), each with every rare column set: the values that are
	// not driver values as they are (a *float64, a time) are converted
	// as database/sql converts them.
	var whole []*store.Step
	for i := range 64 + 16 + 4 {
		whole = append(whole, step(fmt.Sprintf("many%02d", i), 200+i, rare...))
	}
	require.NoError(t, s.SaveBatch(ctx, []store.Batch{{RunID: "r1", Steps: whole}}))
	check(append(append(second, step("twice", 100, rare...)), whole...))
}

// openWithRun opens a new store, closed at the test's end, that holds run
// r1.
func openWithRun(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "skein.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.CreateRun(t.Context(), &store.Run{ID: "r1", Workflow: "w"}))
	return s
}

// TestALocalStepRowIsLean: the row of a step as a local run records it
// (where it ran, its times, its output) is written lean, with fewer
// values bound: the columns a lean row leaves out all hold their
// defaults. A step with a rare value (a cached one) is not, and both read
// back as they were saved.
func TestALocalStepRowIsLean(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Microsecond)
	step := func(node string, cached bool) *store.Step {
		return &store.Step{Generation: 1, StepOrder: 1, Node: node, Type: "set", Visit: 1, Attempts: 1, Status: "success",
			Params: map[string]any{"values": map[string]any{"i": 1}}, Output: map[string]any{"i": 1}, ConfigHash: "h",
			StartedAt: &now, FinishedAt: &now, RanOn: &record.Place{Host: "box", PID: 42}, Cached: cached}
	}
	steps := []*store.Step{step("a", false), step("b", true)}
	_, st := sqlstore.New(nil, dialect)
	bs, err := st.Batches([]store.Batch{{RunID: "r1", Steps: steps}})
	require.NoError(t, err)
	require.True(t, sqlstore.IsLeanStepRow(bs[0].Steps[0]), "a local step's row is lean")
	require.False(t, sqlstore.IsLeanStepRow(bs[0].Steps[1]), "a cached step's is not")

	s := openWithRun(t)
	ctx := t.Context()
	require.NoError(t, s.SaveBatch(ctx, []store.Batch{{RunID: "r1", Steps: steps}}))
	got, err := s.Steps(ctx, "r1")
	require.NoError(t, err)
	require.Len(t, got, 2)
	for i, g := range got {
		require.Equal(t, &record.Place{Host: "box", PID: 42}, g.RanOn, g.Node)
		require.Equal(t, steps[i].Cached, g.Cached, g.Node)
		require.Equal(t, steps[i].Output, g.Output, g.Node)
	}
}

// A multi-row INSERT prepared on a write connection that the pool has
// since replaced is not taken again: the next write prepares its own on
// the connection it holds, and its rows are stored.
func TestMultiRowInsertsFollowTheConnection(t *testing.T) {
	ctx := t.Context()
	s := openWithRun(t)
	write := func(visit int) {
		steps := make([]*store.Step, 4)
		for i := range steps {
			steps[i] = &store.Step{Node: fmt.Sprintf("n%d", i), Visit: visit, StepOrder: visit*10 + i, Type: "set", Status: "success"}
		}
		require.NoError(t, s.SaveBatch(ctx, []store.Batch{{RunID: "r1", Steps: steps}}))
	}
	write(1)
	s.multiMu.Lock()
	require.Len(t, s.multi, 1)
	var old driver.Stmt
	for _, st := range s.multi {
		old = st
	}
	real := s.multiConn
	s.multiConn = "a connection closed since"
	s.multiMu.Unlock()
	write(2)
	s.multiMu.Lock()
	require.Len(t, s.multi, 1)
	for _, st := range s.multi {
		require.NotSame(t, old, st, "the statement of the old connection was taken")
	}
	require.Equal(t, real, s.multiConn, "the statements are the held connection's")
	s.multiMu.Unlock()
	require.NoError(t, old.Close()) // the test's connection is still open
	all, err := s.StepHistory(ctx, "r1")
	require.NoError(t, err)
	require.Len(t, all, 8)
}

// A write after Close is refused with an error, not a panic, whether or
// not its multi-row INSERT was prepared before.
func TestWriteAfterCloseIsRefused(t *testing.T) {
	ctx := t.Context()
	s := openWithRun(t)
	batch := func(visit, n int) []store.Batch {
		steps := make([]*store.Step, n)
		for i := range steps {
			steps[i] = &store.Step{Node: fmt.Sprintf("n%d", i), Visit: visit, StepOrder: visit*100 + i, Type: "set", Status: "success"}
		}
		return []store.Batch{{RunID: "r1", Steps: steps}}
	}
	require.NoError(t, s.SaveBatch(ctx, batch(1, 4)))
	require.NoError(t, s.Close())
	require.Error(t, s.SaveBatch(ctx, batch(2, 4)))
	require.Error(t, s.SaveBatch(ctx, batch(3, 16)))
}

// Step rows whose kinds alternate (a resume's reused steps, whole rows,
// between the lean rows of those run again) are written by the multi-row
// INSERTs of each kind, not a row to a statement, and read back as saved;
// a step written twice among them keeps its last row.
func TestAlternatingStepRowsGoManyToAStatement(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openWithRun(t)
	at := time.Date(2026, 12, 5, 5, 0, 0, 0, time.UTC)
	step := func(node string, order int, cached bool) *store.Step {
		return &store.Step{Node: node, Visit: 1, StepOrder: order, Type: "set", Status: "success", Attempts: 1,
			Output: map[string]any{"o": order}, StartedAt: &at, FinishedAt: &at, Cached: cached}
	}
	var steps []*store.Step
	for i := range 128 {
		steps = append(steps, step(fmt.Sprintf("n%03d", i), i+1, i%2 == 0))
	}
	require.NoError(t, s.SaveBatch(ctx, []store.Batch{{RunID: "r1", Steps: steps}}))
	s.multiMu.Lock()
	_, lean64 := s.multi[multiKey{s.leanRows, 64}]
	_, whole64 := s.multi[multiKey{s.stepRows, 64}]
	s.multiMu.Unlock()
	require.True(t, lean64, "the 64 lean rows went in one statement")
	require.True(t, whole64, "the 64 whole rows went in one statement")
	got, err := s.Steps(ctx, "r1")
	require.NoError(t, err)
	require.Len(t, got, len(steps))
	for i, g := range got {
		require.Equal(t, steps[i].Node, g.Node, "by step order")
		require.Equal(t, steps[i].Cached, g.Cached)
		require.Equal(t, map[string]any{"o": i + 1}, g.Output)
	}

	// Alternating, and n000 written twice: whole, then lean. The last wins.
	again := []*store.Step{step("n000", 1, true), step("n001", 2, false), step("n002", 3, true), step("n000", 1, false)}
	require.NoError(t, s.SaveBatch(ctx, []store.Batch{{RunID: "r1", Steps: again}}))
	got, err = s.Steps(ctx, "r1")
	require.NoError(t, err)
	require.Equal(t, "n000", got[0].Node)
	require.False(t, got[0].Cached, "the last row of a step written twice stands")
}
