package sqlite

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// withMigrations returns the embedded migrations plus extra files.
func withMigrations(t *testing.T, extra map[string]string) fs.FS {
	t.Helper()
	fsys := fstest.MapFS{}
	embedded := embeddedMigrations()
	names, err := fs.Glob(embedded, "*.sql")
	require.NoError(t, err)
	for _, name := range names {
		data, err := fs.ReadFile(embedded, name)
		require.NoError(t, err)
		fsys[name] = &fstest.MapFile{Data: data}
	}
	for name, src := range extra {
		fsys[name] = &fstest.MapFile{Data: []byte(src)}
	}
	return fsys
}

// upTo returns the embedded migrations up to version last.
func upTo(t *testing.T, last int) fs.FS {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, f := range withMigrations(t, nil).(fstest.MapFS) {
		var v int
		_, err := fmt.Sscanf(name, "%04d_", &v)
		require.NoError(t, err)
		if v <= last {
			fsys[name] = f
		}
	}
	return fsys
}

func schemaVersions(t *testing.T, s *Store) []int {
	t.Helper()
	rows, err := s.r.QueryContext(t.Context(), `SELECT version FROM schema_migrations ORDER BY version`)
	require.NoError(t, err)
	defer func() { _ = rows.Close() }()
	var vs []int
	for rows.Next() {
		var v int
		require.NoError(t, rows.Scan(&v))
		vs = append(vs, v)
	}
	require.NoError(t, rows.Err())
	return vs
}

func TestMigrate(t *testing.T) {
	t.Parallel()

	t.Run("OlderDatabaseMovesForward", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "skein.db")
		s, err := Open(path)
		require.NoError(t, err)
		require.NoError(t, s.CreateRun(t.Context(), &store.Run{ID: "r1", Workflow: "w"}))
		have := schemaVersions(t, s)
		require.NoError(t, s.Close())

		next := len(have) + 1
		s, err = OpenWithOptions(path, Options{migrations: withMigrations(t, map[string]string{
			fmt.Sprintf("%04d_run_labels.sql", next): `ALTER TABLE runs ADD COLUMN labels TEXT NOT NULL DEFAULT '';
				CREATE TABLE run_notes (run_id TEXT NOT NULL PRIMARY KEY, note TEXT NOT NULL) STRICT;`,
		})})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })

		require.Equal(t, append(have, next), schemaVersions(t, s))
		r, err := s.Run(t.Context(), "r1")
		require.NoError(t, err, "the data of the older schema is still there")
		require.Equal(t, "w", r.Workflow)
		var labels string
		require.NoError(t, s.r.QueryRowContext(t.Context(), `SELECT labels FROM runs WHERE id = 'r1'`).Scan(&labels))
		require.Empty(t, labels)
	})

	t.Run("AFailedMigrationChangesNothing", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "skein.db")
		s, err := Open(path)
		require.NoError(t, err)
		have := schemaVersions(t, s)
		require.NoError(t, s.Close())

		next := len(have) + 1
		_, err = OpenWithOptions(path, Options{migrations: withMigrations(t, map[string]string{
			fmt.Sprintf("%04d_half.sql", next): `CREATE TABLE half (x INTEGER); CREATE TABLE broken (`,
		})})
		require.Error(t, err)
		require.Contains(t, err.Error(), fmt.Sprintf("schema version %d (half)", next), "the error names the migration")

		s = openT(t, path)
		require.Equal(t, have, schemaVersions(t, s))
		var n int
		require.NoError(t, s.r.QueryRowContext(t.Context(),
			`SELECT COUNT(*) FROM sqlite_schema WHERE name = 'half'`).Scan(&n))
		require.Zero(t, n, "the migration's first statement was rolled back")
	})

	t.Run("PendingStepRowsOfEarlierVersionsReadTheSame", func(t *testing.T) {
		t.Parallel()
		// Before version 15 a run's planned steps were pending step rows.
		path := filepath.Join(t.TempDir(), "skein.db")
		s, err := OpenWithOptions(path, Options{migrations: upTo(t, 14)})
		require.NoError(t, err)
		_, err = s.w.ExecContext(t.Context(), `INSERT INTO runs (id, workflow, status, started_at) VALUES ('r1', 'w', 'running', 1);
			INSERT INTO steps (run_id, generation, node, visit, step_order, type, status, attempts)
			VALUES ('r1', 1, 'a', 1, 1, 'set', 'success', 1), ('r1', 1, 'b', 1, 2, 'set', 'pending', 0)`)
		require.NoError(t, err)
		require.NoError(t, s.Close())

		s = openT(t, path)
		list := func() []string {
			steps, err := s.Steps(t.Context(), "r1")
			require.NoError(t, err)
			var out []string
			for _, st := range steps {
				out = append(out, fmt.Sprintf("%d:%s %s", st.StepOrder, st.Node, st.Status))
			}
			return out
		}
		require.Equal(t, []string{"1:a success", "2:b pending"}, list())
		require.NoError(t, s.SaveBatch(t.Context(), []store.Batch{{RunID: "r1",
			Plan: []*store.Step{{StepOrder: 3, Node: "c", Visit: 1, Type: "set", Status: "pending"}}}}))
		require.Equal(t, []string{"1:a success", "2:b pending", "3:c pending"}, list(),
			"a run recorded both ways lists its pending rows and its plan")
	})

	t.Run("EventsOfEarlierVersionsNumberOn", func(t *testing.T) {
		t.Parallel()
		// Before version 18 a run's row did not count its events: the
		// migration counts them, and the next events go on from there.
		path := filepath.Join(t.TempDir(), "skein.db")
		s, err := OpenWithOptions(path, Options{migrations: upTo(t, 17)})
		require.NoError(t, err)
		_, err = s.w.ExecContext(t.Context(), `INSERT INTO runs (id, workflow, status, started_at) VALUES ('r1', 'w', 'running', 1);
			INSERT INTO events (run_id, seq, time, type, node, visit) VALUES ('r1', 1, 1, 'node_started', 'a', 1),
				('r1', 2, 2, 'node_finished', 'a', 1)`)
		require.NoError(t, err)
		require.NoError(t, s.Close())

		s = openT(t, path)
		evs := []store.Event{{Time: time.UnixMicro(3).UTC(), Type: "node_started", Node: "b", Visit: 1}}
		require.NoError(t, s.SaveBatch(t.Context(), []store.Batch{{RunID: "r1", Events: evs,
			Steps: []*store.Step{{StepOrder: 2, Node: "b", Visit: 1, Type: "set", Status: "running", Attempts: 1}}}}))
		got, err := s.Events(t.Context(), "r1", 0, 0)
		require.NoError(t, err)
		var seqs []string
		for _, ev := range got {
			seqs = append(seqs, fmt.Sprintf("%d %s %s", ev.Seq, ev.Type, ev.Node))
		}
		require.Equal(t, []string{"1 node_started a", "2 node_finished a", "3 node_started b"}, seqs)
	})

	t.Run("UpToDateDatabaseIsNotWritten", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "skein.db")
		s := openT(t, path)
		before := schemaVersions(t, s)
		s2 := openT(t, path)
		require.Equal(t, before, schemaVersions(t, s2))
	})
}

func openT(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestLoadMigrations(t *testing.T) {
	t.Parallel()

	migs, err := store.LoadMigrations(embeddedMigrations())
	require.NoError(t, err, "the embedded migrations")
	require.Equal(t, 1, migs[0].Version)
	require.Equal(t, "init", migs[0].Name)

	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"none", nil, "no migrations"},
		{"no number", []string{"init.sql"}, "NNNN_name.sql"},
		{"zero", []string{"0000_init.sql"}, "NNNN_name.sql"},
		{"gap", []string{"0001_init.sql", "0003_more.sql"}, "expected version 2"},
		{"twice", []string{"0001_init.sql", "0002_a.sql", "002_b.sql"}, "expected version 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fsys := fstest.MapFS{}
			for _, f := range tc.files {
				fsys[f] = &fstest.MapFile{Data: []byte("SELECT 1;")}
			}
			_, err := store.LoadMigrations(fsys)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
