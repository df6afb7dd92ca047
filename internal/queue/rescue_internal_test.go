package queue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLateRenewalCountsAsAReconnection: a renewal that reports no error
// but comes more than half a lease after the last one (it hung on a cut
// connection and went through once the network was back) makes the
// worker count as connected from now, as a failed one does: it then
// judges no other worker lost before it has seen a whole lease of theirs.
// A renewal on time keeps the worker's connected_since.
func TestLateRenewalCountsAsAReconnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, st := testDriver(t, Config{RescueAfter: time.Minute})
	require.NoError(t, d.beat(ctx, true))

	connectedFor := func() time.Duration {
		var ms float64
		require.NoError(t, st.Pool().QueryRow(ctx, `SELECT EXTRACT(EPOCH FROM now() - connected_since) * 1000
			FROM `+workersTable+` WHERE id = $1`, d.id).Scan(&ms))
		return time.Duration(ms) * time.Millisecond
	}
	set := func(seenAgo, connectedAgo time.Duration) {
		_, err := st.Pool().Exec(ctx, `UPDATE `+workersTable+` SET seen_at = now() - $2::float8 * interval '1 millisecond',
			connected_since = now() - $3::float8 * interval '1 millisecond' WHERE id = $1`,
			d.id, seenAgo.Milliseconds(), connectedAgo.Milliseconds())
		require.NoError(t, err)
	}

	// On time: a quarter of a lease after the last renewal.
	set(15*time.Second, time.Hour)
	require.NoError(t, d.beat(ctx, false))
	require.Greater(t, connectedFor(), 59*time.Minute, "a renewal on time keeps connected_since")

	// Late: more than half a lease after the last renewal.
	set(45*time.Second, time.Hour)
	require.NoError(t, d.beat(ctx, false))
	require.Less(t, connectedFor(), time.Minute, "a late renewal counts as a reconnection")
}
