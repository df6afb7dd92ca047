package sqlite_test

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
	"github.com/skeinhq/skein/internal/store/storetest"
)

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "skein.db"))
	})
}

func open(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(path)
	require.NoError(t, err, "opening %s", path)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// rawDB opens the file with the driver alone, as another process would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestOpen(t *testing.T) {
	t.Parallel()

	t.Run("NotSQLite", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		path := filepath.Join(dir, "skein.db")
		garbage := bytes.Repeat([]byte("this is not a database\n"), 200)
		require.NoError(t, os.WriteFile(path, garbage, 0o600))

		_, err := sqlite.Open(path)
		require.ErrorIs(t, err, store.ErrCorrupt)
		msg := err.Error()
		require.Contains(t, msg, path, "the error names the file")
		require.Contains(t, msg, "is not a Skein database")
		require.Contains(t, msg, "move it away or point --dir elsewhere")
		require.Contains(t, msg, "nothing was changed")

		after, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, garbage, after, "the file is left as it was")
		requireOnlyFiles(t, dir, "skein.db")
	})

	t.Run("PathsThatCannotHoldADatabase", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		file := filepath.Join(dir, "notes.txt")
		require.NoError(t, os.WriteFile(file, []byte("x"), 0o600))
		for _, tc := range []struct{ path, want string }{
			{filepath.Join(dir, "missing", "skein.db"), "the folder " + filepath.Join(dir, "missing") + " does not exist; make it"},
			{dir, "it is a folder, not a database file; give the path of a file (" + filepath.Join(dir, "skein.db") + ", say)"},
			{filepath.Join(file, "skein.db"), file + " is a file, not a folder"},
		} {
			_, err := sqlite.Open(tc.path)
			require.Error(t, err, tc.path)
			require.Contains(t, err.Error(), "opening "+tc.path+": "+tc.want)
		}
		_, err := os.Stat(filepath.Join(dir, "missing"))
		require.ErrorIs(t, err, fs.ErrNotExist, "no folder is made for a path that names a missing one")
	})

	t.Run("ForeignSQLiteDatabase", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		path := filepath.Join(dir, "skein.db")
		db := rawDB(t, path)
		_, err := db.Exec(`CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('ada')`)
		require.NoError(t, err)
		require.NoError(t, db.Close())
		before, err := os.ReadFile(path)
		require.NoError(t, err)

		_, err = sqlite.Open(path)
		require.ErrorIs(t, err, store.ErrCorrupt)
		require.Contains(t, err.Error(), "not a Skein database")
		require.Contains(t, err.Error(), "contacts", "the error says what the file holds")

		after, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, before, after, "the other program's database is left as it was")
		requireOnlyFiles(t, dir, "skein.db")
	})

	t.Run("NewerSchemaIsRefused", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "skein.db")
		s, err := sqlite.Open(path)
		require.NoError(t, err)
		require.NoError(t, s.Close())
		db := rawDB(t, path)
		latest := latestMigration(t)
		_, err = db.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 0), (37, 'far_future', 0)`, latest+1)
		require.NoError(t, err)
		require.NoError(t, db.Close())

		_, err = sqlite.Open(path)
		require.ErrorIs(t, err, store.ErrNewerSchema)
		require.Contains(t, err.Error(), "schema version 37")
		require.Contains(t, err.Error(), fmt.Sprintf("knows versions up to %d", latest))
		require.Contains(t, err.Error(), "nothing was changed")
	})

	t.Run("EmptyFileIsANewDatabase", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "skein.db")
		require.NoError(t, os.WriteFile(path, nil, 0o600))

		s := open(t, path)
		require.NoError(t, s.CreateRun(t.Context(), &store.Run{ID: "r1", Workflow: "w"}))
	})

	t.Run("ReopenKeepsData", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "skein.db")
		s, err := sqlite.Open(path)
		require.NoError(t, err)
		require.NoError(t, s.CreateRun(t.Context(), &store.Run{ID: "r1", Workflow: "w"}))
		require.NoError(t, s.Close())

		s = open(t, path)
		r, err := s.Run(t.Context(), "r1")
		require.NoError(t, err)
		require.Equal(t, "w", r.Workflow)
	})

	t.Run("WALAndSchemaVersion", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "skein.db")
		open(t, path)

		db := rawDB(t, path)
		var mode string
		require.NoError(t, db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
		require.Equal(t, "wal", mode)
		var version int
		require.NoError(t, db.QueryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&version))
		require.Equal(t, latestMigration(t), version)
	})

	t.Run("PathWithURICharacters", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "a?b#c%20d")
		require.NoError(t, os.Mkdir(dir, 0o700))
		path := filepath.Join(dir, "skein.db")

		s := open(t, path)
		require.NoError(t, s.CreateRun(t.Context(), &store.Run{ID: "r1", Workflow: "w"}))
		requireOnlyFiles(t, dir, "skein.db", "skein.db-shm", "skein.db-wal")
	})
}

func requireOnlyFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	require.Equal(t, want, got, "files in %s", dir)
}

func TestLocked(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond

	t.Run("WriteWaitsThenFails", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "skein.db")
		s, err := sqlite.OpenWithOptions(path, sqlite.Options{BusyTimeout: timeout})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		require.NoError(t, s.CreateRun(t.Context(), &store.Run{ID: "r1", Workflow: "w"}))

		other := rawDB(t, path)
		tx, err := other.Begin()
		require.NoError(t, err)
		_, err = tx.Exec(`UPDATE runs SET status = 'running'`)
		require.NoError(t, err, "the other connection holds the write lock")

		start := time.Now()
		err = s.CreateRun(t.Context(), &store.Run{ID: "r2", Workflow: "w"})
		require.ErrorIs(t, err, store.ErrLocked)
		require.GreaterOrEqual(t, time.Since(start), timeout, "the write waited for the busy timeout")
		require.Contains(t, err.Error(), path)
		require.Contains(t, err.Error(), "locked by another process")

		r, err := s.Run(t.Context(), "r1")
		require.NoError(t, err, "reads go on while another process writes")
		require.Equal(t, "pending", string(r.Status), "reads see the last commit")

		require.NoError(t, tx.Rollback())
		require.NoError(t, s.CreateRun(t.Context(), &store.Run{ID: "r2", Workflow: "w"}), "the lock is free again")
	})

	t.Run("OpenOfANewDatabase", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "skein.db")
		other := rawDB(t, path)
		tx, err := other.Begin()
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback() })
		_, err = tx.Exec(`CREATE TABLE busy (x INTEGER)`)
		require.NoError(t, err)

		_, err = sqlite.OpenWithOptions(path, sqlite.Options{BusyTimeout: timeout})
		require.ErrorIs(t, err, store.ErrLocked)
	})
}

func TestCompactShrinksTheFile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "skein.db")
	s := open(t, path)

	base := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	payload := strings.Repeat("x", 1024)
	const runs, perRun = 10, 300
	for i := range runs {
		id := fmt.Sprintf("r%d", i)
		require.NoError(t, s.CreateRun(ctx, &store.Run{ID: id, Workflow: "w", StartedAt: base}))
		evs := make([]store.Event, perRun)
		for j := range evs {
			evs[j] = store.Event{Time: base, Type: "tool_result", Node: "agent", Data: map[string]any{"text": payload}}
		}
		require.NoError(t, s.AppendEvents(ctx, id, evs))
	}
	require.NoError(t, s.CreateRun(ctx, &store.Run{ID: "keep", Workflow: "w", StartedAt: base.Add(time.Hour)}))

	deleted, err := s.DeleteRuns(ctx, base.Add(time.Minute), false)
	require.NoError(t, err)
	require.Len(t, deleted, runs)
	before := diskSize(t, path)

	require.NoError(t, s.Compact(ctx))
	after := diskSize(t, path)
	t.Logf("database and log: %d bytes before Compact, %d after", before, after)
	require.Greater(t, before, int64(runs*perRun*1024), "the deleted events still take their space before Compact")
	require.Less(t, after, before/10, "Compact gives the space back")

	_, err = s.Run(ctx, "keep")
	require.NoError(t, err)
}

// diskSize is the size of the database file and its write-ahead log.
func diskSize(t *testing.T, path string) int64 {
	t.Helper()
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		n += fi.Size()
	}
	return n
}

// latestMigration is the number of the last migration file.
func latestMigration(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return len(files)
}

// TestCheckpointsInTheBackground: the commits of a busy store leave their
// pages in the write-ahead log, and the store's own checkpoints move them
// into the database file without a commit doing it.
func TestCheckpointsInTheBackground(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "skein.db")
	s, err := sqlite.Open(path)
	require.NoError(t, err)
	defer s.Close()
	size := func(p string) int64 {
		fi, err := os.Stat(p)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	payload := strings.Repeat("x", 2000)
	for round := range 3 {
		before := size(path)
		for i := range 200 {
			id := fmt.Sprintf("r%d-%d", round, i)
			require.NoError(t, s.CreateRun(t.Context(), &store.Run{ID: id, Workflow: "w", Status: "running"}))
			require.NoError(t, s.SaveBatch(t.Context(), []store.Batch{{RunID: id, Events: []store.Event{{Type: "note", Time: time.Now(), Data: map[string]any{"text": payload}}}}}))
		}
		require.Eventually(t, func() bool { return size(path) > before+200*2000 }, 60*time.Second, 10*time.Millisecond,
			"round %d: the pages reach the database file", round)
	}
}

// TestOpenAtOnce opens one new database from many connections at once, as
// `skein run`s started together in a fresh folder do: every open succeeds
// and the schema is migrated once.
func TestOpenAtOnce(t *testing.T) {
	t.Parallel()
	for round := range 5 {
		path := filepath.Join(t.TempDir(), "skein.db")
		const n = 8
		errs := make(chan error, n)
		start := make(chan struct{})
		for range n {
			go func() {
				<-start
				s, err := sqlite.Open(path)
				if err == nil {
					err = s.CreateRun(t.Context(), &store.Run{ID: fmt.Sprintf("r%p", s), Workflow: "w"})
					err = errors.Join(err, s.Close())
				}
				errs <- err
			}()
		}
		close(start)
		for range n {
			require.NoError(t, <-errs, "round %d: every open of a new database succeeds", round)
		}
		var migrations int
		require.NoError(t, rawDB(t, path).QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&migrations))
		s := open(t, path)
		require.Equal(t, s.Schema().Latest, migrations, "each migration applied once")
	}
}
