package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// TestCloseKeepsASmallLog: Close leaves a write-ahead log of at most
// keptWALLimit bytes in place, synced, not copied into the database file, and
// what it holds is read by the next store that opens the database; a
// longer log is copied in and removed, as SQLite does. It also checks
// that the pinned driver's connection has the handle noCheckpointOnClose
// reads.
func TestCloseKeepsASmallLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "skein.db")
	wal := path + "-wal"
	s, err := Open(path)
	require.NoError(t, err)
	c, err := s.w.Conn(ctx)
	require.NoError(t, err)
	require.NoError(t, noCheckpointOnClose(c), "the driver's connection has the handle")
	require.NoError(t, c.Close())
	require.NoError(t, s.CreateRun(ctx, &store.Run{ID: "small", Workflow: "w", Status: "running"}))
	var synced []string
	s.syncFile = func(p string) error { synced = append(synced, p); return syncFile(p) }
	require.NoError(t, s.Close())
	require.Equal(t, []string{wal}, synced, "the log it keeps is synced")
	fi, err := os.Stat(wal)
	require.NoError(t, err, "the log stays")
	require.Positive(t, fi.Size())
	require.LessOrEqual(t, fi.Size(), int64(keptWALLimit))

	s, err = Open(path)
	require.NoError(t, err)
	r, err := s.Run(ctx, "small")
	require.NoError(t, err, "what the kept log holds is read")
	require.Equal(t, "w", r.Workflow)
	big := strings.Repeat("x", 2*keptWALLimit)
	require.NoError(t, s.CreateRun(ctx, &store.Run{ID: "big", Workflow: "w", Status: "running", Inputs: map[string]any{"v": big}}))
	require.NoError(t, s.Close())
	_, err = os.Stat(wal)
	require.ErrorIs(t, err, os.ErrNotExist, "a log over the limit is copied into the database and removed")

	s, err = Open(path)
	require.NoError(t, err)
	defer s.Close()
	for _, id := range []string{"small", "big"} {
		r, err := s.Run(ctx, id)
		require.NoError(t, err, id)
		require.Equal(t, "w", r.Workflow)
	}
	r, err = s.Run(ctx, "big")
	require.NoError(t, err)
	require.Equal(t, big, r.Inputs["v"])
}

// TestOrphanLogIsRefused: a database removed without the log Close keeps
// is not made again under it (SQLite would apply the old log to the new
// file): opening fails, naming the files and what to do, and makes
// nothing; with the log removed too, a new database opens.
func TestOrphanLogIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "skein.db")
	s, err := Open(path)
	require.NoError(t, err)
	require.NoError(t, s.CreateRun(ctx, &store.Run{ID: "old", Workflow: "w", Status: "running"}))
	require.NoError(t, s.Close())
	require.FileExists(t, path+"-wal")
	require.NoError(t, os.Remove(path))

	_, err = Open(path)
	require.ErrorContains(t, err, path+"-wal is there and the database is not")
	require.ErrorContains(t, err, "remove "+path+"-wal and "+path+"-shm too")
	require.NoFileExists(t, path, "nothing is made")

	require.NoError(t, os.Remove(path+"-wal"))
	require.NoError(t, os.Remove(path+"-shm"))
	s, err = Open(path)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Run(ctx, "old")
	require.ErrorIs(t, err, store.ErrNotFound)
}
