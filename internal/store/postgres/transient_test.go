package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
)

func TestTransient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"server shutting down", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, true},
		{"server starting", fmt.Errorf("reading run r1: %w", &pgconn.PgError{Code: "57P03"}), true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"connection dropped", fmt.Errorf("run r1: %w", io.ErrUnexpectedEOF), true},
		{"closed connection", pgconn.ErrConnClosed, true},
		{"not found", store.ErrNotFound, false},
		{"no rows", pgx.ErrNoRows, false},
		{"cancelled", context.Canceled, false},
		{"other", errors.New("history has a gap"), false},
		{"a file where a folder is needed", fmt.Errorf("cannot create run folder: %w", &fs.PathError{Op: "mkdir", Path: "/x/runs/a", Err: syscall.ENOTDIR}), false},
		{"disk full", &fs.PathError{Op: "write", Path: "/x/runs/a/run.json", Err: syscall.ENOSPC}, false},
		{"a read that timed out", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, true},
		{"an unknown host", fmt.Errorf("dial: %w", &net.DNSError{Err: "no such host", Name: "db.invalid"}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, postgres.Transient(tc.err))
		})
	}
}

// TestMayHaveCommitted: a COMMIT may have gone through when its answer
// was lost or the server ended the session; not when the server refused
// it.
func TestMayHaveCommitted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection dropped while waiting for the answer", fmt.Errorf("run r1: %w", io.ErrUnexpectedEOF), true},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{"server shutting down", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}, true},
		{"serialization failure", &pgconn.PgError{Severity: "ERROR", Code: "40001"}, false},
		{"unique violation", fmt.Errorf("run r1: %w", &pgconn.PgError{Severity: "ERROR", Code: "23505"}), false},
		{"a failed transaction's COMMIT", pgx.ErrTxCommitRollback, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, postgres.MayHaveCommitted(tc.err))
		})
	}
}

// TestTransientRefusedConnection: a server that is down refuses the
// connection; that is transient.
func TestTransientRefusedConnection(t *testing.T) {
	t.Parallel()
	_, err := pgx.Connect(context.Background(), "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=5")
	require.Error(t, err)
	require.True(t, postgres.Transient(err), "%v", err)
}
