package postgres_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// TestWake: a notification committed on a channel wakes the waiters of its
// payload, and only them; after the listening connection is lost (its
// backend terminated), the store listens again and notifications wake the
// waiters anew.
func TestWake(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.URL(t))
	ctx := t.Context()
	const channel = "skein_test_wake"
	a, stopA := s.Wake(ctx, channel, "run-a")
	defer stopA()
	b, stopB := s.Wake(ctx, channel, "run-b")
	defer stopB()
	notify := func(payload string) {
		_, err := s.Pool().Exec(ctx, `SELECT pg_notify($1, $2)`, channel, payload)
		require.NoError(t, err)
	}
	notify("run-a")
	<-a
	select {
	case <-b:
		t.Fatal("a notification for run-a woke the waiter of run-b")
	default:
	}

	var terminated bool
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN %skein_test_wake%'`).Scan(&terminated))
	require.True(t, terminated, "the listening connection was found")
	// Notified until one gets through: the store listens again after a
	// backoff.
	require.Eventually(t, func() bool {
		notify("run-b")
		select {
		case <-b:
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}, time.Minute, time.Millisecond, "the store listens again once its connection is lost")
}
