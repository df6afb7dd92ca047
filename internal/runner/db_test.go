package runner_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// TestRunsOnPostgres: with DB a Postgres URL, runs are recorded there —
// a second runner on the database (another process, another machine)
// lists them and resumes what failed, reusing what completed — while run
// folders stay in Dir.
func TestRunsOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	dir := t.TempDir()
	open := func(sub string) *runner.Runner {
		r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, sub), DB: url, Placement: runner.PlaceLocal})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, r.Close()) })
		return r
	}
	b := &bundle{ctx: t.Context(), r: open("one"), dir: dir}
	gate := filepath.Join(dir, "open")
	src := `version: 1
name: gated
nodes:
  - {id: a, type: shell, command: [sh, -c, 'echo a >> "$1"', x, "` + filepath.Join(dir, "log") + `"]}
  - {id: gate, type: shell, command: [test, -f, "` + gate + `"]}
edges:
  - {from: a, to: gate}
`
	w, err := b.r.Load(b.write(t, "gated.yaml", src))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))
	require.DirExists(t, res.Run.Dir)
	require.True(t, strings.HasPrefix(res.Run.Dir, filepath.Join(dir, "one")), "the run folder is in Dir: %s", res.Run.Dir)

	other := open("two")
	runs, err := other.List(b.ctx, runner.ListRequest{})
	require.NoError(t, err)
	require.Len(t, runs, 1, "the other runner sees the run")
	require.Equal(t, res.Run.ID, runs[0].ID)
	require.Equal(t, "failed", string(runs[0].Status))

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	last, err := other.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.Equal(t, "completed", string(last.Run.Status))
	require.Equal(t, 2, last.Run.Generation)
	doc, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.Equal(t, "completed", string(doc.Status), "the first runner reads what the second recorded")
	require.True(t, doc.Steps[0].Cached, "a is reused")
	log, err := os.ReadFile(filepath.Join(dir, "log"))
	require.NoError(t, err)
	require.Equal(t, "a\n", string(log), "a ran once over two executions")
}

func TestDBErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		db    string
		usage bool
		want  []string
	}{
		{"other scheme", "mysql://ada:s3cret@db/skein", true, []string{"mysql://ada:xxxxx@db/skein", `"mysql://" is neither`}},
		{"bad URL", "postgres://ada:s3cret@db:port/skein", true, []string{"postgres://ada:xxxxx@db:port/skein", "not a valid Postgres URL"}},
		{"unreachable", "postgres://ada:s3cret@127.0.0.1:1/skein", false, []string{"connecting to postgres://ada:xxxxx@127.0.0.1:1/skein"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := runner.Open(runner.Config{Dir: t.TempDir(), DB: tc.db})
			require.Error(t, err)
			var use *runner.UsageError
			require.Equal(t, tc.usage, errors.As(err, &use), "a usage error: %v", err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			require.NotContains(t, err.Error(), "s3cret")
		})
	}

	t.Run("NoSQLiteFileYet", func(t *testing.T) {
		t.Parallel()
		db := filepath.Join(t.TempDir(), "elsewhere.db")
		_, err := runner.OpenExisting(runner.Config{Dir: t.TempDir(), DB: db})
		var use *runner.UsageError
		require.ErrorAs(t, err, &use)
		require.Contains(t, err.Error(), db)
		require.NoFileExists(t, db, "a command that reads creates no database")
	})
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]func(t *testing.T) runner.Config{
		"sqlite folder": func(t *testing.T) runner.Config { return runner.Config{Dir: filepath.Join(t.TempDir(), ".skein")} },
		"sqlite file":   func(t *testing.T) runner.Config { return runner.Config{DB: filepath.Join(t.TempDir(), "my.db")} },
		"postgres":      func(t *testing.T) runner.Config { return runner.Config{DB: pgtest.URL(t)} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := cfg(t)
			first, err := runner.Migrate(t.Context(), c)
			require.NoError(t, err)
			require.NotEmpty(t, first.Applied)
			require.Equal(t, store.Migration{Version: 1, Name: "init"}, first.Applied[0])
			require.Equal(t, first.Latest, first.Version)
			require.Equal(t, runner.DBName(c), first.DB)

			again, err := runner.Migrate(t.Context(), c)
			require.NoError(t, err)
			require.Empty(t, again.Applied, "nothing to do the second time")
			require.Equal(t, first.Version, again.Version)
		})
	}
}
