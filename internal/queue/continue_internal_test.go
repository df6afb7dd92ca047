package queue

import (
	"context"
	"encoding/json"
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
	d, st := testDriver(t, Config{})

	// The job as such a COMMIT leaves it: running on this worker.
	w := &write{jobs: []river.InsertManyParams{{Args: TaskArgs{Run: "r1", Task: 1, Node: "n"}, InsertOpts: &river.InsertOpts{Queue: DefaultQueue, MaxAttempts: maxJobAttempts}}}}
	d.pick(w, 1)
	b := d.queueTaken(w)
	require.NotNil(t, b)
	require.NoError(t, st.Pool().SendBatch(ctx, b).Close())
	require.NoError(t, w.tookAll())
	id := w.taken[0].row.ID
	job, err := d.client.JobGet(ctx, id)
	require.NoError(t, err)
	require.Equal(t, rivertype.JobStateRunning, job.State)
	require.Equal(t, []string{d.id}, job.AttemptedBy)
	require.Equal(t, 1, job.Attempt)
	require.Equal(t, d.id, gjsonString(t, job.Metadata, continuedKey))
	var args TaskArgs
	require.NoError(t, json.Unmarshal(job.EncodedArgs, &args))
	require.Equal(t, TaskArgs{Run: "r1", Task: 1, Node: "n"}, args, "River decodes the args the worker wrote")

	d.handBack([]*localJob{{row: &rivertype.JobRow{ID: id}}})
	d.inflight.Wait()
	job, err = d.client.JobGet(ctx, id)
	require.NoError(t, err)
	require.Equal(t, rivertype.JobStateAvailable, job.State, "the job went back to the queue")
}

// gjsonString is the string at key of a JSON object.
func gjsonString(t *testing.T, raw []byte, key string) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	s, _ := m[key].(string)
	return s
}

// testDriver returns a driver of cfg, working the default queue one node
// at a time, on a migrated store of the test database.
func testDriver(t *testing.T, cfg Config) (*Driver, *postgres.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.URL(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = Migrate(ctx, st.Pool())
	require.NoError(t, err)
	cfg.Store, cfg.Registry, cfg.Queues = st, node.NewRegistry(), map[string]int{DefaultQueue: 1}
	d, err := New(cfg)
	require.NoError(t, err)
	return d, st
}
