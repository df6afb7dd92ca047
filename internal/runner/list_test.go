package runner_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

// TestListPagesAfterCursor pages through runs of which many started in the
// same microsecond: every run comes once, newest first, then by id.
func TestListPagesAfterCursor(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "skein.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	r, err := runner.Open(runner.Config{Dir: t.TempDir(), Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })

	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var want []string
	for i := range 3 { // newest: one each
		id := fmt.Sprintf("new%d", 2-i)
		require.NoError(t, st.CreateRun(t.Context(), &store.Run{ID: id, Workflow: "w", Status: "completed",
			StartedAt: base.Add(time.Duration(3-i) * time.Second)}))
		want = append(want, id)
	}
	for i := range 40 { // then 40 in the same microsecond
		id := fmt.Sprintf("tie%02d", 39-i)
		require.NoError(t, st.CreateRun(t.Context(), &store.Run{ID: id, Workflow: "w", Status: "completed", StartedAt: base}))
		want = append(want, id)
	}
	require.NoError(t, st.CreateRun(t.Context(), &store.Run{ID: "old", Workflow: "w", Status: "completed", StartedAt: base.Add(-time.Hour)}))
	want = append(want, "old")

	for _, limit := range []int{1, 3, 7, 50} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			t.Parallel()
			var got []string
			var after *runner.Cursor
			for pages := 0; pages < 100; pages++ {
				runs, err := r.List(t.Context(), runner.ListRequest{Limit: limit, After: after})
				require.NoError(t, err)
				for _, run := range runs {
					got = append(got, run.ID)
				}
				if len(runs) < limit {
					break
				}
				last := runs[len(runs)-1]
				after = &runner.Cursor{StartedAt: last.StartedAt, ID: last.ID}
			}
			require.Equal(t, want, got)
		})
	}
}
