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

// TestUnclaimedCountsStepsWorkersRan: following a run, "waiting for a
// worker" is for a run no worker has taken a node of. A node's job is
// deleted once its node is recorded, so a step a worker ran counts as a
// job taken: a run with a job due for long after such a step waits for a
// busy worker, not for one to start.
func TestUnclaimedCountsStepsWorkersRan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st := testDriver(t, Config{})
	for _, sql := range []string{
		`INSERT INTO runs (id, workflow, status, started_at, owner_token) VALUES ('r1', 'w', 'running', now(), 'queue:x')`,
		`INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at)
		 VALUES ('{"run": "r1", "node": "b"}', 'skein_task', 1, 'gpu', 'available', now() - interval '1 minute')`,
	} {
		_, err := st.Pool().Exec(ctx, sql)
		require.NoError(t, err)
	}
	idle, queues, err := unclaimed(ctx, st, "r1", 3*time.Second)
	require.NoError(t, err)
	require.True(t, idle, "no worker took a node of the run")
	require.Equal(t, "gpu", queues)

	_, err = st.Pool().Exec(ctx, `INSERT INTO steps (run_id, generation, node, visit, step_order, type, status, ran_worker)
		VALUES ('r1', 1, 'a', 0, 1, 'shell', 'success', 'host_1_abc')`)
	require.NoError(t, err)
	idle, _, err = unclaimed(ctx, st, "r1", 3*time.Second)
	require.NoError(t, err)
	require.False(t, idle, "a worker ran node a: the run waits for a busy worker")
}
