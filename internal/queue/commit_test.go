package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// TestRunsShareATransaction: the nodes of several runs that finish on a
// worker while its last transaction is under way are recorded together,
// in its next one: one COMMIT for all. The test holds the steps table, so
// the first outcome's transaction waits; the other two runs' outcomes
// wait for it and are then written by one transaction (their step rows
// carry its id), and every run completes with its node's output.
func TestRunsShareATransaction(t *testing.T) {
	t.Parallel()
	const runs = 3
	gate := make(chan struct{})
	entered := make(chan string, runs)
	exec := func(ctx context.Context, runID string, _ *engine.Task) engine.Outcome {
		entered <- runID
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return engine.Outcome{Output: map[string]any{"run": runID}}
	}
	b := setupWith(t, pgtest.URL(t), 0, nil)
	w := b.work(t, queue.Config{Queues: map[string]int{queue.DefaultQueue: runs}, Exec: exec,
		Poll: 50 * time.Millisecond, FetchPoll: 50 * time.Millisecond})
	ids := make([]string, runs)
	for i := range ids {
		ids[i] = b.startWith(t, fmt.Sprintf("share%d-%d", i, time.Now().UnixNano()),
			"version: 1\nname: one\nnodes:\n  - {id: n, type: nap, ms: 0}\n", nil).ID
	}
	for range runs {
		recv(t, entered, "a node running")
	}
	ctx := context.Background()
	hold := b.lockSteps(t)
	close(gate)
	// One outcome's transaction waits for the table; the others wait for
	// the worker's next transaction.
	require.Eventually(t, func() bool { return w.PartsWaiting() == runs-1 }, time.Minute, time.Millisecond,
		"the other runs' outcomes waiting for the worker's next transaction")
	require.NoError(t, hold.Rollback(ctx))

	byTx := map[int64][]string{}
	for _, id := range ids {
		end := b.wait(t, id)
		require.Equal(t, "completed", string(end.Status), "%v", end.Error)
		require.Equal(t, id, b.steps(t, id)["n"][0].Output["run"])
		var xmin int64
		require.NoError(t, b.st.Pool().QueryRow(ctx, `SELECT xmin::text::bigint FROM steps WHERE run_id = $1 AND node = 'n'`, id).Scan(&xmin))
		byTx[xmin] = append(byTx[xmin], id)
	}
	require.Len(t, byTx, 2, "two transactions recorded the three outcomes: %v", byTx)
	sizes := []int{}
	for _, r := range byTx {
		sizes = append(sizes, len(r))
	}
	require.ElementsMatch(t, []int{1, runs - 1}, sizes, "the runs that waited share one transaction: %v", byTx)

	// And its statements: a statement of a transaction numbers the rows it
	// writes with its command id (cmin), and the step rows of the runs
	// that waited, their history rows and their final records have one
	// each.
	for _, shared := range byTx {
		if len(shared) == 1 {
			continue
		}
		for _, table := range []string{"steps", "skein_queue_log"} {
			var commands int
			require.NoError(t, b.st.Pool().QueryRow(ctx, `SELECT count(DISTINCT cmin::text) FROM `+table+`
				WHERE run_id = ANY($1) AND xmin::text::bigint = (SELECT xmin::text::bigint FROM steps WHERE run_id = $2 AND node = 'n')`,
				shared, shared[0]).Scan(&commands))
			require.Equal(t, 1, commands, "the %s rows of runs %v written by one statement", table, shared)
		}
		var commands int
		require.NoError(t, b.st.Pool().QueryRow(ctx, `SELECT count(DISTINCT cmin::text) FROM runs WHERE id = ANY($1)`,
			shared).Scan(&commands))
		require.Equal(t, 1, commands, "the final records of runs %v written by one statement", shared)
	}
}
