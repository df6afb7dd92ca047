package queue

import (
	"context"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
	"github.com/skeinhq/skein/node"
)

// TestHandBackAfterALostCommit: a transaction that took a job by local
// continuation and whose COMMIT did not answer may have committed; the
// worker gives the job back to the queue, where any worker takes it,
// rather than leave it running on a live worker that runs nothing of it.
func TestHandBackAfterALostCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.URL(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = Migrate(ctx, st.Pool())
	require.NoError(t, err)
	d, err := New(Config{Store: st, Registry: node.NewRegistry(), Queues: map[string]int{DefaultQueue: 1}})
	require.NoError(t, err)

	// The job as such a COMMIT leaves it: running on this worker.
	res, err := d.client.Insert(ctx, TaskArgs{Run: "r1", Task: 1, Node: "n"}, &river.InsertOpts{Pending: true})
	require.NoError(t, err)
	_, err = st.Pool().Exec(ctx, takeSQL, []int64{res.Job.ID}, d.id)
	require.NoError(t, err)
	job, err := d.client.JobGet(ctx, res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, rivertype.JobStateRunning, job.State)
	require.Equal(t, []string{d.id}, job.AttemptedBy)

	d.handBack([]*localJob{{row: &rivertype.JobRow{ID: res.Job.ID}}})
	d.inflight.Wait()
	job, err = d.client.JobGet(ctx, res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, rivertype.JobStateAvailable, job.State, "the job went back to the queue")
}
