package postgres

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
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

func openT(t *testing.T, url string, opts Options) *Store {
	t.Helper()
	s, err := OpenWithOptions(t.Context(), url, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func schemaVersions(t *testing.T, s *Store) []int {
	t.Helper()
	rows, err := s.pool.Query(t.Context(), `SELECT version FROM schema_migrations ORDER BY version`)
	require.NoError(t, err)
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	return vs
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	latest := len(mustMigrations(t))

	t.Run("NewDatabaseGetsEveryVersionOnce", func(t *testing.T) {
		t.Parallel()
		url := pgtest.URL(t)
		// Several processes opening a new database at once apply each
		// migration once.
		const n = 4
		stores := make([]*Store, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stores[i], errs[i] = OpenWithOptions(t.Context(), url, Options{MaxConns: 2})
			}()
		}
		wg.Wait()
		applied := 0
		for i := range n {
			require.NoError(t, errs[i])
			t.Cleanup(func() { _ = stores[i].Close() })
			applied += len(stores[i].Schema().Applied)
			require.Equal(t, latest, stores[i].Schema().Version)
		}
		require.Equal(t, latest, applied, "every migration was applied by exactly one of the openers")
		require.Len(t, schemaVersions(t, stores[0]), latest)

		again := openT(t, url, Options{})
		require.Empty(t, again.Schema().Applied, "an up-to-date database is not migrated again")
	})

	t.Run("OlderDatabaseMovesForward", func(t *testing.T) {
		t.Parallel()
		url := pgtest.URL(t)
		s := openT(t, url, Options{})
		require.NoError(t, s.CreateRun(t.Context(), &store.Run{ID: "r1", Workflow: "w"}))
		require.NoError(t, s.Close())

		next := latest + 1
		s = openT(t, url, Options{migrations: withMigrations(t, map[string]string{
			fmt.Sprintf("%04d_run_labels.sql", next): `ALTER TABLE runs ADD COLUMN labels text NOT NULL DEFAULT '';`,
		})})
		require.Equal(t, []store.Migration{{Version: next, Name: "run_labels"}}, s.Schema().Applied)
		r, err := s.Run(t.Context(), "r1")
		require.NoError(t, err, "the data of the older schema is still there")
		require.Equal(t, "w", r.Workflow)
	})

	t.Run("PendingStepRowsOfEarlierVersionsReadTheSame", func(t *testing.T) {
		t.Parallel()
		// Before version 15 a run's planned steps were pending step rows.
		url := pgtest.URL(t)
		s := openT(t, url, Options{migrations: upTo(t, 14)})
		require.NoError(t, s.CreateRun(t.Context(), &store.Run{ID: "r1", Workflow: "w"}))
		// Written as a version-14 binary wrote them: this binary's batches
		// need the later columns.
		_, err := s.pool.Exec(t.Context(), `INSERT INTO steps (run_id, generation, node, visit, step_order, type, status, attempts)
			VALUES ('r1', 1, 'a', 1, 1, 'set', 'success', 1), ('r1', 1, 'b', 1, 2, 'set', 'pending', 0)`)
		require.NoError(t, err)
		require.NoError(t, s.Close())

		s = openT(t, url, Options{})
		var applied []string
		for _, m := range s.Schema().Applied {
			applied = append(applied, m.Name)
		}
		require.Contains(t, applied, "step_plans")
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

	t.Run("EventCountIsBackfilled", func(t *testing.T) {
		t.Parallel()
		// A database of version 15 (events numbered by their largest
		// seq) moves to 16: each run's row counts the events it has, and
		// the next event follows them.
		url := pgtest.URL(t)
		ctx := t.Context()
		s := openT(t, url, Options{migrations: upTo(t, 15)})
		require.Equal(t, 15, s.Schema().Version)
		require.NoError(t, s.CreateRun(ctx, &store.Run{ID: "r1", Workflow: "w"}))
		require.NoError(t, s.CreateRun(ctx, &store.Run{ID: "r2", Workflow: "w"}))
		_, err := s.pool.Exec(ctx, `INSERT INTO events (run_id, seq, time, type, node, visit, iteration, data)
			SELECT 'r1', g, now(), 'e', '', 0, 0, '{}' FROM generate_series(1, 3) g`)
		require.NoError(t, err)
		require.NoError(t, s.Close())

		s = openT(t, url, Options{})
		require.Contains(t, s.Schema().Applied, store.Migration{Version: 16, Name: "event_seq"})
		for id, want := range map[string]int64{"r1": 3, "r2": 0} {
			var got int64
			require.NoError(t, s.pool.QueryRow(ctx, `SELECT event_seq FROM runs WHERE id = $1`, id).Scan(&got))
			require.Equal(t, want, got, "run %s", id)
		}
		evs := []store.Event{{Time: time.Now(), Type: "next"}}
		require.NoError(t, s.AppendEvents(ctx, "r1", evs))
		require.Equal(t, int64(4), evs[0].Seq)
	})

	t.Run("AFailedMigrationChangesNothing", func(t *testing.T) {
		t.Parallel()
		url := pgtest.URL(t)
		have := schemaVersions(t, openT(t, url, Options{}))

		next := latest + 1
		_, err := OpenWithOptions(t.Context(), url, Options{migrations: withMigrations(t, map[string]string{
			fmt.Sprintf("%04d_half.sql", next): `CREATE TABLE half (x integer); CREATE TABLE broken (`,
		})})
		require.Error(t, err)
		require.Contains(t, err.Error(), fmt.Sprintf("schema version %d (half)", next), "the error names the migration")

		s := openT(t, url, Options{})
		require.Equal(t, have, schemaVersions(t, s))
		var n int
		require.NoError(t, s.pool.QueryRow(t.Context(),
			`SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'half'`).Scan(&n))
		require.Zero(t, n, "the migration's first statement was rolled back")
	})

	t.Run("NewerSchemaIsRefused", func(t *testing.T) {
		t.Parallel()
		url := pgtest.URL(t)
		s := openT(t, url, Options{})
		_, err := s.pool.Exec(t.Context(), `INSERT INTO schema_migrations (version, name) VALUES ($1, 'future'), (37, 'far_future')`, latest+1)
		require.NoError(t, err)

		_, err = Open(t.Context(), url)
		require.ErrorIs(t, err, store.ErrNewerSchema)
		require.Contains(t, err.Error(), "schema version 37")
		require.Contains(t, err.Error(), fmt.Sprintf("knows versions up to %d", latest))
		require.Contains(t, err.Error(), "nothing was changed")
		require.Len(t, schemaVersions(t, s), latest+2, "nothing was changed")
	})

	t.Run("MissingSchemaIsNamed", func(t *testing.T) {
		t.Parallel()
		u, err := url.Parse(pgtest.URL(t))
		require.NoError(t, err)
		q := u.Query()
		q.Set("search_path", "no_such_schema_here")
		u.RawQuery = q.Encode()
		_, err = Open(t.Context(), u.String())
		require.ErrorContains(t, err, "no schema of its search_path exists")
	})

	t.Run("AnotherSchemasDatabaseIsNotThisOne", func(t *testing.T) {
		// A Skein database in the search path's second schema does not
		// make its first, empty one a Skein database: that one is
		// migrated, the other left as it was.
		t.Parallel()
		first := pgtest.URL(t) // an empty schema
		other := openT(t, pgtest.URL(t), Options{})
		u, err := url.Parse(first)
		require.NoError(t, err)
		q := u.Query()
		empty := q.Get("search_path")
		q.Set("search_path", empty+","+currentSchema(t, other))
		u.RawQuery = q.Encode()
		s := openT(t, u.String(), Options{})
		require.Equal(t, empty, currentSchema(t, s))
		require.Len(t, s.Schema().Applied, latest, "the first schema of the search path was migrated")
		require.Len(t, schemaVersions(t, s), latest)
	})

	t.Run("ForeignTablesAreRefused", func(t *testing.T) {
		t.Parallel()
		url := pgtest.URL(t)
		s := openT(t, url, Options{})
		_, err := s.pool.Exec(t.Context(), `DROP TABLE schema_migrations; CREATE TABLE contacts (name text)`)
		require.NoError(t, err)

		_, err = Open(t.Context(), url)
		require.ErrorIs(t, err, store.ErrCorrupt)
		require.Contains(t, err.Error(), "not a Skein database")
		require.Contains(t, err.Error(), "contacts", "the error says what the schema holds")
		require.Contains(t, err.Error(), "nothing was changed")
	})
}

func mustMigrations(t *testing.T) []store.MigrationFile {
	t.Helper()
	migs, err := store.LoadMigrations(embeddedMigrations())
	require.NoError(t, err)
	return migs
}

// TestMigrationsMirrorSQLite: the files are numbered and named as
// store/sqlite's, so a version means the same schema in both stores.
func TestMigrationsMirrorSQLite(t *testing.T) {
	t.Parallel()
	pg, err := fs.Glob(embeddedMigrations(), "*.sql")
	require.NoError(t, err)
	lite, err := fs.Glob(os.DirFS("../sqlite/migrations"), "*.sql")
	require.NoError(t, err)
	require.Equal(t, lite, pg)
}

func currentSchema(t *testing.T, s *Store) string {
	t.Helper()
	var name string
	require.NoError(t, s.pool.QueryRow(t.Context(), `SELECT current_schema()`).Scan(&name))
	return name
}
