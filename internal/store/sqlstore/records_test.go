package sqlstore

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The step rows of a batch written are taken again by the next batch,
// empty and holding nothing of what they held; rows in use are never
// handed out twice; and no more than maxSpareRows are kept.
func TestRecycledStepRows(t *testing.T) {
	t.Parallel()
	s := &Statements{}
	first := s.takeRows(3)
	for _, row := range first {
		require.Empty(t, row)
		require.GreaterOrEqual(t, cap(row), stepArgCount)
	}
	for i := range first {
		first[i] = append(first[i], "run", int64(i), "a secret output")
	}
	inFlight := s.takeRows(2)
	s.Recycle([]Batch{{Steps: first}})
	again := s.takeRows(5)
	reused := 0
	for _, row := range again {
		require.Empty(t, row)
		for _, v := range row[:cap(row)] {
			require.Nil(t, v, "a recycled row holds nothing of its last batch")
		}
		for _, old := range first {
			if &row[:1][0] == &old[:1][0] {
				reused++
			}
		}
		for _, busy := range inFlight {
			require.NotSame(t, &busy[:1][0], &row[:1][0], "a row in use is not handed out")
		}
	}
	require.Equal(t, 3, reused)

	big := s.takeRows(maxSpareRows + 10)
	s.Recycle([]Batch{{Steps: big}})
	require.Len(t, s.spare, maxSpareRows)
}

// The final records of several runs go in one statement where the dialect
// has one (FinishRuns); two batches of one run each keep their own, since
// a statement may change a row once.
func TestFinishesOfSeveralRuns(t *testing.T) {
	t.Parallel()
	together := Stmt{SQL: "finish them all"}
	same := func(a, _ string) string { return a }
	_, st := New(nil, Dialect{AddMicros: same, Least: same, Greatest: same, FinishRuns: func(rows [][]any) Stmt {
		together.Args = []any{len(rows)}
		return together
	}})
	finish := func(id string) []any { return []any{id, "completed", nil, nil, nil, 0, 0.0, nil, nil} }
	sqls := func(stmts []Stmt) (out []string) {
		for _, s := range stmts {
			out = append(out, s.SQL)
		}
		return out
	}
	two := st.WritesOf([]Batch{{Finish: finish("a")}, {Finish: finish("b")}}, []int64{1, 1})
	require.Equal(t, []string{"finish them all"}, sqls(two))
	require.Equal(t, []any{2}, two[0].Args)

	one := st.WritesOf([]Batch{{Finish: finish("a")}}, []int64{1})
	require.Equal(t, []string{st.FinishRun}, sqls(one))

	twice := st.WritesOf([]Batch{{Finish: finish("a")}, {Finish: finish("a")}}, []int64{1, 1})
	require.Equal(t, []string{st.FinishRun, st.FinishRun}, sqls(twice))
}
