package postgres

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// A write the server had no disk space for says so and what to do, as
// the SQLite store and the run folder's writer say it of a full disk, and
// is ENOSPC to errors.Is.
func TestDiskFullSaysToFreeSpace(t *testing.T) {
	t.Parallel()
	s := &Store{url: "postgres://skein@db.example/skein"}
	pe := &pgconn.PgError{Severity: "ERROR", Code: "53100", Message: `could not extend file "base/16384/16402": No space left on device`}
	err := s.failed("saving a batch of steps and events", fmt.Errorf("committing: %w", pe))
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.ErrorAs(t, err, &pe)
	require.EqualError(t, err, `saving a batch of steps and events: the Postgres server at postgres://skein@db.example/skein is out of disk space (could not extend file "base/16384/16402": No space left on device); free disk space on the server and try again`)
	other := s.failed("reading", &pgconn.PgError{Code: "42P01", Message: "no such table"})
	require.NotErrorIs(t, other, syscall.ENOSPC)
}
