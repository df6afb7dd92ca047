package postgres

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Transient reports whether err says the database could not be reached or
// dropped the connection (restarted, shut down, failed over, out of
// connections) rather than refusing what was asked: the same request may
// succeed once it is back. The pool opens new connections by itself, so
// retrying is all a caller does.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			strings.HasPrefix(pgErr.Code, "57P"),         // admin or crash shutdown, cannot connect now
			pgErr.Code == "53300",                        // too many connections
			pgErr.Code == "40001", pgErr.Code == "40P01": // serialization failure, deadlock
			return true
		}
		return false
	}
	// A network operation's error, not any net.Error: every
	// syscall.Errno is one (it has Timeout and Temporary), and a run
	// folder that cannot be made (ENOTDIR, ENOSPC) is no outage.
	var (
		connErr *pgconn.ConnectError
		opErr   *net.OpError
		dnsErr  *net.DNSError
	)
	switch {
	case errors.As(err, &connErr), errors.As(err, &opErr), errors.As(err, &dnsErr),
		pgconn.SafeToRetry(err), pgconn.Timeout(err),
		errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}

// MayHaveCommitted reports whether a COMMIT that failed with err may have
// committed all the same: it was sent, and no answer came back (the
// connection was lost), or the server ended the session (a FATAL error:
// a restart or a shutdown may end it after the commit, before its
// answer). A COMMIT never sent, or answered with an ERROR (the
// transaction failed, and its COMMIT rolled it back), did not commit.
func MayHaveCommitted(err error) bool {
	if err == nil || pgconn.SafeToRetry(err) || errors.Is(err, pgx.ErrTxCommitRollback) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Severity == "FATAL" || pe.Severity == "PANIC"
	}
	return true
}
