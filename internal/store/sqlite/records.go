package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/store/sqlstore"
)

// The writes of steps and events, the hot path of a run, go through
// statements prepared once on the write connection, several rows to a
// statement. Seqs stay unique and increasing because every write goes
// through the one write connection in a BEGIN IMMEDIATE transaction.

// saveBatches writes batches in one transaction (sqlstore.DB).
func (s *Store) saveBatches(ctx context.Context, op string, bs []sqlstore.Batch) ([]int64, error) {
	firsts := make([]int64, len(bs))
	// The events each batch's step rows carry (carry): only the others
	// are inserted.
	rides := make([][]ride, len(bs))
	for i, b := range bs {
		rides[i] = carried(b)
	}
	err := s.writeHot(ctx, op, func(tx *sql.Tx) error {
		// The rows of every batch go in together: a statement costs more
		// than a row, and a group holds a batch of each of many runs.
		type runRow struct {
			owner string
			seq   int64 // the run's last event so far
			moved bool  // seq moved on in this transaction
		}
		runs := map[string]*runRow{}
		var moved []string
		var steps, plans, events [][]any
		runSeq := tx.StmtContext(ctx, s.runSeqSt)
		for i, b := range bs {
			r := runs[b.RunID]
			if r == nil {
				r = &runRow{}
				err := runSeq.QueryRowContext(ctx, b.RunID).Scan(&r.owner, &r.seq)
				if err := sqlstore.Fence(b.RunID, "", r.owner, err); err != nil {
					return err
				}
				runs[b.RunID] = r
			}
			if err := sqlstore.Fence(b.RunID, b.Token, r.owner, nil); err != nil {
				return err
			}
			steps = append(steps, b.Steps...)
			plans = append(plans, b.Plan...)
			if len(b.Events) == 0 {
				continue
			}
			firsts[i] = r.seq + 1
			events = append(events, s.carry(b, firsts[i], rides[i])...)
			r.seq += int64(len(b.Events))
			if !r.moved {
				r.moved = true
				moved = append(moved, b.RunID)
			}
		}
		if err := s.upsertSteps(ctx, tx, steps); err != nil {
			return err
		}
		if len(plans) > 0 {
			plan := tx.StmtContext(ctx, s.insertPlanSt)
			for _, p := range plans {
				if _, err := plan.ExecContext(ctx, p...); err != nil {
					return err
				}
			}
		}
		if err := s.insertRows(ctx, tx, s.insertEvSt, s.eventRows, events, nil); err != nil {
			return err
		}
		// A run that finishes has its count of events set with its final
		// record, the others by themselves.
		finish := tx.StmtContext(ctx, s.finishRunSt)
		for _, b := range bs {
			if b.Finish == nil {
				continue
			}
			args := b.Finish
			if r := runs[b.RunID]; r.moved {
				args, r.moved = sqlstore.FinishWithSeq(b.Finish, r.seq), false
			}
			if _, err := finish.ExecContext(ctx, args...); err != nil {
				return err
			}
		}
		setSeq := tx.StmtContext(ctx, s.setSeqSt)
		for _, id := range moved {
			if r := runs[id]; r.moved {
				if _, err := setSeq.ExecContext(ctx, id, r.seq); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return firsts, nil
}

// upsertSteps writes step rows, each run of rows that can be lean
// (sqlstore.IsLeanStepRow: most are) by the lean statements, with fewer
// values to bind, the others whole; the lean ones first (leanFirst).
func (s *Store) upsertSteps(ctx context.Context, tx *sql.Tx, rows [][]any) error {
	rows = leanFirst(rows)
	for len(rows) > 0 {
		lean := sqlstore.IsLeanStepRow(rows[0])
		n := 1
		for n < len(rows) && sqlstore.IsLeanStepRow(rows[n]) == lean {
			n++
		}
		run := rows[:n]
		rows = rows[n:]
		var err error
		if lean {
			err = s.insertRows(ctx, tx, s.upsertLeanSt, s.leanRows, run, sqlstore.AppendLeanStepRow)
		} else {
			err = s.insertRows(ctx, tx, s.upsertStepSt, s.stepRows, run, nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// leanFirst returns rows with the lean ones first and the others after,
// each kind in its order, when no step is written twice among them (then
// the last of a key must stay last, and rows keeps its order). Rows whose
// kinds alternate (a resume's reused steps between those run again, a
// shell node after each set node) would otherwise go a row to a statement.
func leanFirst(rows [][]any) [][]any {
	changes := 0
	for i := 1; i < len(rows); i++ {
		if sqlstore.IsLeanStepRow(rows[i]) != sqlstore.IsLeanStepRow(rows[i-1]) {
			changes++
		}
	}
	if changes < 2 {
		return rows
	}
	type key struct{ run, generation, node, visit any }
	seen := make(map[key]struct{}, len(rows))
	for _, r := range rows {
		k := key{r[0], r[1], r[2], r[3]}
		if _, twice := seen[k]; twice {
			return rows
		}
		seen[k] = struct{}{}
	}
	out := make([][]any, 0, len(rows))
	for _, lean := range []bool{true, false} {
		for _, r := range rows {
			if sqlstore.IsLeanStepRow(r) == lean {
				out = append(out, r)
			}
		}
	}
	return out
}

// carry moves node_finished events of a batch, each with the
// node_started just before it, into the rows of the steps written with
// them (sqlstore.Dialect.StepEvents): a node visit's last node_finished
// in the batch goes in the last columns of its step row when the batch
// writes that step of the event's iteration, and so does the
// node_started numbered just before it, of the same visit, when it has no
// data (rides, carried). It returns the event rows left to insert, the
// batch's events numbered from first; no row is made of an event carried.
// A step row saved again with another finish turns the events it carried
// into event rows (the schema's trigger), so none is lost.
func (s *Store) carry(b sqlstore.Batch, first int64, rides []ride) [][]any {
	var drop []bool
	if len(rides) > 0 {
		col := len(b.Steps[0]) - sqlstore.StepEventArgs
		drop = make([]bool, len(b.Events))
		for _, r := range rides {
			row, j := b.Steps[r.row], r.finished
			row[col], row[col+1], row[col+2], row[col+3] = nil, first+int64(j), s.st.EventTime(b, j), s.st.EventData(b, j)
			drop[j] = true
			if i := r.started; i >= 0 {
				row[col] = s.st.EventTime(b, i)
				drop[i] = true
			}
		}
	}
	kept := make([][]any, 0, len(b.Events)-len(rides))
	for j := range b.Events {
		if drop == nil || !drop[j] {
			kept = append(kept, s.st.EventRow(b, first, j))
		}
	}
	return kept
}

// ride is a step row of a batch and the events it carries (carry): the
// index of its node_finished, and of its node_started (-1: none).
type ride struct{ row, finished, started int }

// carried returns which events of b its step rows carry (carry).
func carried(b sqlstore.Batch) []ride {
	if len(b.Steps) == 0 {
		return nil
	}
	type key struct {
		node  string
		visit int
	}
	// The step row of each node visit in the batch (its last when the
	// batch has it twice); -1 when the batch has it in two generations.
	at := make(map[key]int, len(b.Batch.Steps))
	for k, st := range b.Batch.Steps {
		kk := key{st.Node, st.Visit}
		if k0, ok := at[kk]; ok && (k0 < 0 || b.Batch.Steps[k0].Generation != st.Generation) {
			at[kk] = -1
			continue
		}
		at[kk] = k
	}
	// The last node_finished of each, by event index.
	var finished map[key]int
	for j, ev := range b.Events {
		if ev.Type != record.EventNodeFinished {
			continue
		}
		kk := key{ev.Node, ev.Visit}
		if k, ok := at[kk]; ok && k >= 0 && b.Batch.Steps[k].Iteration == ev.Iteration {
			if finished == nil {
				finished = make(map[key]int, len(b.Batch.Steps))
			}
			finished[kk] = j
		}
	}
	rides := make([]ride, 0, len(finished))
	for kk, j := range finished {
		r := ride{row: at[kk], finished: j, started: -1}
		// The node_started numbered just before, of the same visit, with
		// no data (a column holds only its time).
		if i := j - 1; i >= 0 {
			if ev := b.Events[i]; ev.Type == record.EventNodeStarted && ev.Node == kk.node && ev.Visit == kk.visit &&
				ev.Iteration == b.Events[j].Iteration && ev.Data == nil {
				r.started = i
			}
		}
		rides = append(rides, r)
	}
	return rides
}

// maxRowsPerInsert bounds the rows of one multi-row INSERT (24 columns ×
// 64 rows stays far below SQLite's limit of bound variables).
const maxRowsPerInsert = 64

// multiRowSizes are the row counts of the multi-row INSERTs.
var multiRowSizes = []int{maxRowsPerInsert, 16, 4}

// rowSize is the rows of the statement insertRows takes next for rows rows.
func rowSize(rows int) int {
	for _, m := range multiRowSizes {
		if rows >= m {
			return m
		}
	}
	return 1
}

// insertRows inserts rows with as few statements as it can: a statement
// costs more than a row, so rows go by multi-row INSERTs of 64, 16 and 4
// rows, the rest one by one with single (prepared once). The multi-row
// INSERTs are prepared when first taken (execMulti). With
// project, a row's values are those project appends of it (a lean step
// row's: sqlstore.AppendLeanStepRow), else the row's own.
func (s *Store) insertRows(ctx context.Context, tx *sql.Tx, single *sql.Stmt, kind *multiRows, rows [][]any, project func(dst, row []any) []any) error {
	if project == nil {
		project = func(dst, row []any) []any { return append(dst, row...) }
	}
	for len(rows) > 0 {
		n := rowSize(len(rows))
		args := s.rowArgs[:0]
		for _, r := range rows[:n] {
			args = project(args, r)
		}
		var err error
		if n == 1 {
			_, err = tx.StmtContext(ctx, single).ExecContext(ctx, args...)
		} else {
			err = s.execMulti(ctx, multiKey{kind, n}, args)
		}
		clear(args)
		s.rowArgs = args[:0]
		if err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// execMulti runs the multi-row INSERT k, with args, in the write
// transaction: on the driver's connection (writeHot's), with the
// statement prepared there the first time. Its arguments are handed to
// the driver as they are, without database/sql's copy of each value
// (one 64-row INSERT is 1,408 of them); a value the driver takes as it
// is (what sqlstore's rows hold) is not converted, another is converted
// as database/sql converts it.
func (s *Store) execMulti(ctx context.Context, k multiKey, args []any) error {
	if s.hot == nil {
		return errors.New("a multi-row INSERT outside a write transaction")
	}
	return s.hot.Raw(func(dc any) error {
		s.multiMu.Lock()
		if s.multi == nil {
			s.multiMu.Unlock()
			return errors.New("the database is closed")
		}
		if dc != s.multiConn { // prepared on another connection, closed since
			clear(s.multi)
			s.multiConn = dc
		}
		st := s.multi[k]
		s.multiMu.Unlock()
		if st == nil {
			prep, ok := dc.(driver.ConnPrepareContext)
			if !ok {
				return fmt.Errorf("the SQLite driver's connection (%T) prepares no statement with a context", dc)
			}
			var err error
			if st, err = prep.PrepareContext(ctx, multiInsert(k.rows.head, k.rows.tail, k.rows.cols, k.n)); err != nil {
				return err
			}
			s.multiMu.Lock()
			s.multi[k] = st // not closed since: Close waits for this write's connection
			s.multiMu.Unlock()
		}
		exec, ok := st.(driver.StmtExecContext)
		if !ok {
			return fmt.Errorf("the SQLite driver's statement (%T) runs with no context", st)
		}
		vals := s.rowValues[:0]
		for i, a := range args {
			v, err := driverValue(a)
			if err != nil {
				return fmt.Errorf("argument %d: %w", i+1, err)
			}
			vals = append(vals, driver.NamedValue{Ordinal: i + 1, Value: v})
		}
		_, err := exec.ExecContext(ctx, vals)
		clear(vals)
		s.rowValues = vals[:0]
		return err
	})
}

// driverValue is a as the driver takes it: as it is when it is a
// driver.Value already, else converted by database/sql's rules.
func driverValue(a any) (driver.Value, error) {
	switch a.(type) {
	case nil, int64, string, float64, bool, []byte:
		return a, nil
	}
	return driver.DefaultParameterConverter.ConvertValue(a)
}

// multiInsert is the statement head (?1, …), … tail of n rows of cols
// values each.
func multiInsert(head, tail string, cols, n int) string {
	return rebind(sqlstore.RowsSQL(head, tail, cols, n))
}
