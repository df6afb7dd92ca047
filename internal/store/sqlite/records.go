package sqlite

import (
	"context"
	"database/sql"
	"slices"

	"github.com/skeinhq/skein/internal/store/sqlstore"
)

// The writes of steps and events, the hot path of a run, go through
// statements prepared once on the write connection, several rows to a
// statement. Seqs stay unique and increasing because every write goes
// through the one write connection in a BEGIN IMMEDIATE transaction.

// saveBatches writes batches in one transaction (sqlstore.DB).
func (s *Store) saveBatches(ctx context.Context, op string, bs []sqlstore.Batch) ([]int64, error) {
	firsts := make([]int64, len(bs))
	var nSteps, nEvents int
	for _, b := range bs {
		nSteps += len(b.Steps)
		nEvents += len(b.Events)
	}
	s.prepareRows(ctx, s.stepRows, nSteps)
	s.prepareRows(ctx, s.eventRows, nEvents)
	err := s.writeHot(ctx, op, func(tx *sql.Tx) error {
		// The rows of every batch go in together: a statement costs more
		// than a row, and a group holds a batch of each of many runs.
		type fence struct{ run, token string }
		fenced := map[fence]bool{}
		seqs := map[string]int64{} // the last event of each run so far
		var steps, plans, events [][]any
		for i, b := range bs {
			if f := (fence{b.RunID, b.Token}); !fenced[f] {
				if err := s.fenceTx(ctx, tx, b.RunID, b.Token); err != nil {
					return err
				}
				fenced[f] = true
			}
			steps = append(steps, b.Steps...)
			plans = append(plans, b.Plan...)
			if len(b.Events) == 0 {
				continue
			}
			prev, ok := seqs[b.RunID]
			if !ok {
				if err := tx.StmtContext(ctx, s.lastSeqSt).QueryRowContext(ctx, b.RunID).Scan(&prev); err != nil {
					return err
				}
			}
			firsts[i] = prev + 1
			events = append(events, s.st.EventArgs(b, firsts[i])...)
			seqs[b.RunID] = prev + int64(len(b.Events))
		}
		if err := s.insertRows(ctx, tx, s.upsertStepSt, s.stepRows, steps); err != nil {
			return err
		}
		for _, p := range plans {
			if _, err := tx.StmtContext(ctx, s.insertPlanSt).ExecContext(ctx, p...); err != nil {
				return err
			}
		}
		if err := s.insertRows(ctx, tx, s.insertEvSt, s.eventRows, events); err != nil {
			return err
		}
		for _, b := range bs {
			if b.Finish != nil {
				if _, err := tx.StmtContext(ctx, s.finishRunSt).ExecContext(ctx, b.Finish...); err != nil {
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

// fenceTx checks that the run exists and, when token is set, that token
// is its owner's.
func (s *Store) fenceTx(ctx context.Context, tx *sql.Tx, id, token string) error {
	var owner string
	err := tx.StmtContext(ctx, s.runOwnerSt).QueryRowContext(ctx, id).Scan(&owner)
	return sqlstore.Fence(id, token, owner, err)
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

// rowSizes are the multi-row statements insertRows takes for rows rows.
func rowSizes(rows int) []int {
	var ns []int
	for rows > 0 {
		n := rowSize(rows)
		if n > 1 && !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
		rows -= n
	}
	return ns
}

// insertRows inserts rows with as few statements as it can: a statement
// costs more than a row, so rows go by multi-row INSERTs of 64, 16 and 4
// rows, the rest one by one with single (prepared once). The multi-row
// INSERTs are prepared before the transaction (prepareRows).
func (s *Store) insertRows(ctx context.Context, tx *sql.Tx, single *sql.Stmt, kind *multiRows, rows [][]any) error {
	for len(rows) > 0 {
		n := rowSize(len(rows))
		if n == 1 {
			if _, err := tx.StmtContext(ctx, single).ExecContext(ctx, rows[0]...); err != nil {
				return err
			}
			rows = rows[1:]
			continue
		}
		args := make([]any, 0, n*len(rows[0]))
		for _, r := range rows[:n] {
			args = append(args, r...)
		}
		if _, err := s.execMulti(ctx, tx, multiKey{kind, n}, args); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// execMulti runs the multi-row INSERT k in tx: prepared when the store has
// it (prepareRows), else from its text.
func (s *Store) execMulti(ctx context.Context, tx *sql.Tx, k multiKey, args []any) (sql.Result, error) {
	s.multiMu.Lock()
	st := s.multi[k]
	s.multiMu.Unlock()
	if st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, multiInsert(k.rows.head, k.rows.tail, k.rows.cols, k.n), args...)
}

// multiInsert is the statement head (?1, …), … tail of n rows of cols
// values each.
func multiInsert(head, tail string, cols, n int) string {
	return rebind(sqlstore.RowsSQL(head, tail, cols, n))
}
