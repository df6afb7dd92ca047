package sqlite

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
