package runner_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

func TestResolveRunID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := b.r.Load(b.write(t, "chain.yaml", chain))
	require.NoError(t, err)
	for _, id := range []string{"aaa111000000", "aaa222000000", "bbb333000000"} {
		_, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w, RunID: id})
		require.NoError(t, err)
	}

	for _, tc := range []struct{ name, in, want string }{
		{"whole id", "aaa111000000", "aaa111000000"},
		{"unique prefix", "b", "bbb333000000"},
		{"longer unique prefix", "aaa2", "aaa222000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := b.r.ResolveRunID(b.ctx, tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}

	_, err = b.r.ResolveRunID(b.ctx, "aaa")
	require.ErrorIs(t, err, runner.ErrAmbiguous)
	var amb *runner.AmbiguousError
	require.ErrorAs(t, err, &amb)
	require.Equal(t, 2, amb.Total)
	require.Contains(t, err.Error(), `run id "aaa" is ambiguous: 2 runs begin with it`)
	require.Contains(t, err.Error(), "aaa111000000  chain  completed")
	require.Contains(t, err.Error(), "aaa222000000  chain  completed")

	_, err = b.r.ResolveRunID(b.ctx, "ccc")
	require.ErrorIs(t, err, runner.ErrNotFound)
	require.Contains(t, err.Error(), `no run "ccc"`)

	_, err = b.r.ResolveRunID(b.ctx, "")
	var use *runner.UsageError
	require.ErrorAs(t, err, &use)
}

// TestResolveRunIDOfAParent: a prefix of a run with subworkflows names
// the run, though its child runs' ids begin with it too; a prefix with a
// dot names a child run.
func TestResolveRunIDOfAParent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.write(t, "child.yaml", "version: 1\nname: child\nnodes:\n  - {id: say, type: template, text: hi}\n")
	w, err := b.r.Load(b.write(t, "parent.yaml", `version: 1
name: parent
nodes:
  - {id: one, type: subworkflow, workflow: child.yaml}
  - {id: two, type: subworkflow, workflow: child.yaml}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w, RunID: "ccc111000000"})
	require.NoError(t, err)
	require.Equal(t, "completed", string(res.Run.Status))
	children, err := b.r.List(b.ctx, runner.ListRequest{Parent: "ccc111000000"})
	require.NoError(t, err)
	require.Len(t, children, 2)

	got, err := b.r.ResolveRunID(b.ctx, "ccc1")
	require.NoError(t, err)
	require.Equal(t, "ccc111000000", got, "the parent, not ambiguous with its children")
	got, err = b.r.ResolveRunID(b.ctx, "ccc111000000.one")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(got, "ccc111000000.one"), got)
	_, err = b.r.ResolveRunID(b.ctx, "ccc111000000.")
	require.ErrorIs(t, err, runner.ErrAmbiguous, "a prefix with a dot is matched against child runs")
}

// TestResolveRunIDReadsEveryRun: a prefix is matched against every run,
// however many there are and however many started in the same
// microsecond, and an ambiguous one names at most ten.
func TestResolveRunIDReadsEveryRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "skein.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	r, err := runner.Open(runner.Config{Dir: t.TempDir(), Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })

	// 1,300 runs: the first 700 started in one microsecond, and the
	// oldest of all is the only one whose id begins with "f".
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	create := func(id string, at time.Time) {
		require.NoError(t, st.CreateRun(ctx, &store.Run{ID: id, Workflow: "w", Status: "completed", StartedAt: at}))
	}
	create("f00000000000", base)
	for i := range 1299 {
		at := base.Add(time.Duration(i/700+1) * time.Second)
		create(fmt.Sprintf("e%011d", i), at)
	}

	got, err := r.ResolveRunID(ctx, "f")
	require.NoError(t, err)
	require.Equal(t, "f00000000000", got)

	_, err = r.ResolveRunID(ctx, "e")
	var amb *runner.AmbiguousError
	require.ErrorAs(t, err, &amb)
	require.Equal(t, 1299, amb.Total)
	require.Len(t, amb.Matches, 10)
	require.Contains(t, err.Error(), "… and 1289 more")
}
