package queue

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
	"github.com/skeinhq/skein/node"
)

// TestFindTakenAfterALostCommit: a transaction that took a job by local
// continuation and whose COMMIT did not answer may have committed; the
// worker learns whether it did by finding the job, running on this
// worker, as River decodes it.
func TestFindTakenAfterALostCommit(t *testing.T) {
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

	// The COMMIT's answer lost, the ids read with it are unknown.
	w.taken[0].row.ID = 0
	found, err := d.findTaken(ctx, w.taken)
	require.NoError(t, err)
	require.Equal(t, 1, found)
	require.Equal(t, id, w.taken[0].row.ID, "the worker found the job its transaction took")

	// A job of another attempt of the run was never taken.
	other := &write{jobs: []river.InsertManyParams{{Args: TaskArgs{Run: "r1", Task: 2, Node: "n"}, InsertOpts: &river.InsertOpts{Queue: DefaultQueue, MaxAttempts: maxJobAttempts}}}}
	d.pick(other, 1)
	require.NotNil(t, d.queueTaken(other)) // encodes the args, sends nothing
	found, err = d.findTaken(ctx, other.taken)
	require.NoError(t, err)
	require.Zero(t, found, "a job no transaction took is not found")

	// Nor is one that is no longer running on this worker.
	d.settle(ctx, id, errors.New("given back"), time.Minute)
	found, err = d.findTaken(ctx, w.taken)
	require.NoError(t, err)
	require.Zero(t, found, "a job given back to the queue is not this worker's")
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
