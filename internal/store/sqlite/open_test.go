package sqlite

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// TestOpenWhileAnotherProcessMakesTheDatabase opens a new database while
// another connection holds its write lock, as a second `skein run` started
// in a new folder does while the first turns WAL on: SQLite refuses the
// change at once, without waiting, and Open tries again until the lock is
// free.
func TestOpenWhileAnotherProcessMakesTheDatabase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "skein.db")
	other, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	other.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = other.Close() })
	// BEGIN IMMEDIATE's reserved lock: the other process is about to write.
	conn, err := other.Conn(t.Context())
	require.NoError(t, err)
	_, err = conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`)
	require.NoError(t, err)

	retried := make(chan struct{}, 1)
	opened := make(chan error, 1)
	go func() {
		s, err := OpenWithOptions(path, Options{BusyTimeout: time.Minute, retrying: func() {
			select {
			case retried <- struct{}{}:
			default:
			}
		}})
		if err == nil {
			err = s.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		t.Fatalf("Open returned while another process held the lock: %v", err)
	case <-retried:
	}
	_, err = conn.ExecContext(t.Context(), `ROLLBACK`)
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	require.NoError(t, <-opened, "Open succeeds once the lock is free")
}

// TestWriterKeepsTemporaryDataInMemory: the writer's statement journals
// (a multi-row upsert inside a transaction writes one) stay in memory
// rather than in a temporary file, a write(2) per page saved on every
// commit the committer makes; but not what a prune or VACUUM makes.
func TestWriterKeepsTemporaryDataInMemory(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "skein.db"))
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	var store int
	require.NoError(t, s.w.QueryRow(`PRAGMA temp_store`).Scan(&store))
	require.Equal(t, 2, store, "temp_store is MEMORY (2) on the writer")

	// What touches much of the database keeps its temporary data in files
	// (VACUUM copies the whole database into a temporary one; deleting
	// many runs journals their pages), and the writer keeps MEMORY after.
	saw := map[string]int{}
	s.inFileTemp = func(op string) {
		var v int
		require.NoError(t, s.w.QueryRow(`PRAGMA temp_store`).Scan(&v))
		saw[op] = v
	}
	_, err = s.DeleteRuns(t.Context(), time.Now(), false)
	require.NoError(t, err)
	require.NoError(t, s.Compact(t.Context()))
	require.Equal(t, map[string]int{"delete runs": 1, "compact": 1}, saw, "temp_store is FILE (1) while they run")
	require.NoError(t, s.w.QueryRow(`PRAGMA temp_store`).Scan(&store))
	require.Equal(t, 2, store, "temp_store is MEMORY again after them")

	// Two at once (two prunes): MEMORY only when both are over.
	first, err := s.tempInFile(t.Context(), "first")
	require.NoError(t, err)
	second, err := s.tempInFile(t.Context(), "second")
	require.NoError(t, err)
	require.NoError(t, first())
	require.NoError(t, s.w.QueryRow(`PRAGMA temp_store`).Scan(&store))
	require.Equal(t, 1, store, "FILE while the second still runs")
	require.NoError(t, second())
	require.NoError(t, s.w.QueryRow(`PRAGMA temp_store`).Scan(&store))
	require.Equal(t, 2, store)
}

// TestNewDatabaseIsTheImage: a new database is fresh.db.gz put in place,
// with the mode SQLite gives the files it makes; its migrations are
// recorded as applied when it was opened, and nothing else is left in its
// folder but SQLite's own files (the write-ahead log Close keeps, and its
// index).
func TestNewDatabaseIsTheImage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	before := time.Now().UnixMicro()
	s, err := Open(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	require.True(t, s.imaged, "the database was made from fresh.db.gz")
	require.Len(t, s.Schema().Applied, s.Schema().Latest, "a new database reports every migration as applied")
	var zero, stale, all int
	require.NoError(t, s.r.QueryRow(`SELECT COUNT(*) FILTER (WHERE applied_at = 0), COUNT(*) FILTER (WHERE applied_at < ?), COUNT(*)
		FROM schema_migrations`, before).Scan(&zero, &stale, &all))
	require.Zero(t, zero+stale, "every migration is recorded as applied when the database was made")
	require.Equal(t, s.Schema().Latest, all)
	var mode, check string
	require.NoError(t, s.r.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	require.Equal(t, "wal", mode)
	require.NoError(t, s.r.QueryRow(`PRAGMA integrity_check`).Scan(&check))
	require.Equal(t, "ok", check)
	require.NoError(t, s.Close())

	again, err := Open(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	require.False(t, again.imaged, "an existing database is opened, not replaced")
	require.NoError(t, again.Close())

	made, err := OpenWithOptions(filepath.Join(dir, "made.db"), Options{noImage: true})
	require.NoError(t, err)
	require.False(t, made.imaged)
	require.NoError(t, made.Close())
	image, err := os.Stat(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	sqlite, err := os.Stat(filepath.Join(dir, "made.db"))
	require.NoError(t, err)
	require.Equal(t, sqlite.Mode(), image.Mode(), "the file has the mode of one SQLite makes")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if n := e.Name(); !strings.HasSuffix(n, "-wal") && !strings.HasSuffix(n, "-shm") {
			names = append(names, n)
		}
	}
	require.ElementsMatch(t, []string{"skein.db", "made.db"}, names, "no temporary file is left")
}

// A database that has no room left (here its page limit; a full disk
// fails the same way, SQLITE_FULL) fails the write with what to do, as
// the run folder's writer says it of a full disk, and the error is
// ENOSPC for errors.Is; the runs written before are all there.
func TestFullDatabaseSaysToFreeSpace(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "skein.db")
	s, err := Open(path)
	require.NoError(t, err)
	defer s.Close()
	var pages int
	require.NoError(t, s.w.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages))
	_, err = s.w.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages+2))
	require.NoError(t, err)
	big := strings.Repeat("x", 4096)
	var made int
	for ; made < 100; made++ {
		err = s.CreateRun(ctx, &store.Run{ID: fmt.Sprintf("r%d", made), Workflow: "w", Inputs: map[string]any{"big": big}})
		if err != nil {
			break
		}
	}
	require.Error(t, err, "a database of %d pages held 100 runs of 4 KiB inputs", pages+2)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.ErrorContains(t, err, fmt.Sprintf("creating run r%d: the disk that holds %s is full", made, path))
	require.ErrorContains(t, err, "; free some disk space and run again")
	runs, err := s.ListRuns(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, made)
}
