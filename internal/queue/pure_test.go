package queue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/queue"
)

// pureChain is a workflow of a shell node and then n set nodes in a row,
// each adding 1 to the one before.
func pureChain(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: pure\nnodes:\n  - {id: first, type: shell, command: [echo, \"0\"]}\n")
	b.WriteString("  - {id: p1, type: set, values: {n: \"{{ int(trim(first.stdout)) + 1 }}\"}}\n")
	for i := 2; i <= n; i++ {
		fmt.Fprintf(&b, "  - {id: p%d, type: set, values: {n: \"{{ p%d.n + 1 }}\"}}\n", i, i-1)
	}
	b.WriteString("edges:\n  - {from: first, to: p1}\n")
	for i := 2; i <= n; i++ {
		fmt.Fprintf(&b, "  - {from: p%d, to: p%d}\n", i-1, i)
	}
	return b.String()
}

// TestPureChainRunsInItsTransaction: the set nodes a node releases onto
// its worker's queue run in the transaction that records that node, one
// after another, instead of as jobs: each has its step (success, attempt
// 1, on that worker) and its node_started and node_finished once, no job
// of theirs was ever inserted, and the outputs are what a run elsewhere
// gives.
func TestPureChainRunsInItsTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	ctx := context.Background()
	d := b.work(t, queue.Config{Queues: map[string]int{queue.DefaultQueue: 2}, Poll: 50 * time.Millisecond, FetchPoll: 50 * time.Millisecond})
	// Every job ever inserted, kept by a trigger, since a job taken by
	// continuation is deleted once its node is recorded.
	_, err := b.st.Pool().Exec(ctx, `CREATE TABLE inserted_jobs (node text);
		CREATE FUNCTION keep_inserted() RETURNS trigger LANGUAGE plpgsql AS
		  $$ BEGIN INSERT INTO inserted_jobs VALUES (NEW.args->>'node'); RETURN NEW; END $$;
		CREATE TRIGGER keep_inserted AFTER INSERT ON river_job FOR EACH ROW EXECUTE FUNCTION keep_inserted();`)
	require.NoError(t, err)

	run := b.start(t, pureChain(5), nil)
	end := b.wait(t, run.ID)
	require.Equal(t, "completed", string(end.Status), "%v", end.Error)
	steps := b.steps(t, run.ID)
	worker := steps["first"][0].RanOn.Worker
	for i := 1; i <= 5; i++ {
		n := fmt.Sprintf("p%d", i)
		require.Len(t, steps[n], 1, "node %s", n)
		s := steps[n][0]
		require.Equal(t, "success", string(s.Status), "node %s", n)
		require.EqualValues(t, i, s.Output["n"], "node %s", n)
		require.Equal(t, 1, s.Attempts, "node %s", n)
		require.NotNil(t, s.RanOn, "node %s", n)
		require.Equal(t, worker, s.RanOn.Worker, "node %s ran on the worker that recorded the node before it", n)
		require.NotEmpty(t, s.ConfigHash, "node %s", n)
		require.Len(t, eventsOf(t, b, run.ID, "node_started", n), 1, "node %s", n)
		require.Len(t, eventsOf(t, b, run.ID, "node_finished", n), 1, "node %s", n)
	}
	require.EqualValues(t, 5, d.Inlined())
	var jobs []string
	rows, err := b.st.Pool().Query(ctx, `SELECT node FROM inserted_jobs ORDER BY node`)
	require.NoError(t, err)
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		jobs = append(jobs, n)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"first"}, jobs, "only the shell node had a job")
}

// TestPureNodesOfATransactionAreBounded: a transaction runs at most 64
// pure nodes; the next one's job is taken by local continuation, and its
// transaction runs the rest.
func TestPureNodesOfATransactionAreBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	d := b.work(t, queue.Config{Queues: map[string]int{queue.DefaultQueue: 2}, Poll: 50 * time.Millisecond, FetchPoll: 50 * time.Millisecond})
	run := b.start(t, pureChain(70), nil)
	end := b.wait(t, run.ID)
	require.Equal(t, "completed", string(end.Status), "%v", end.Error)
	require.EqualValues(t, 70, b.steps(t, run.ID)["p70"][0].Output["n"])
	require.EqualValues(t, 64+5, d.Inlined(), "p1…p64 in the shell node's transaction, p66…p70 in p65's")
	require.EqualValues(t, 1, d.Continued(), "p65 was taken by local continuation")
}

// TestPureNodeWithABigValueRunsAsAJob: a pure node whose output goes to
// the blob store is not run in a transaction (the store writes on a
// connection of its own): it runs from its job, and its output is kept
// as a blob as anywhere else.
func TestPureNodeWithABigValueRunsAsAJob(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	d := b.work(t, queue.Config{Queues: map[string]int{queue.DefaultQueue: 2}, Poll: 50 * time.Millisecond, FetchPoll: 50 * time.Millisecond})
	run := b.start(t, `version: 1
name: big
inputs:
  size: {type: integer}
nodes:
  - {id: first, type: shell, command: [echo, hi]}
  - {id: big, type: set, values: {text: "{{ repeat('x', inputs.size) }}"}}
  - {id: after, type: set, values: {n: "{{ len(big.text) }}"}}
edges:
  - {from: first, to: big}
  - {from: big, to: after}
`, map[string]any{"size": blob.InlineLimit + 1})
	end := b.wait(t, run.ID)
	require.Equal(t, "completed", string(end.Status), "%v", end.Error)
	steps := b.steps(t, run.ID)
	_, isBlob := steps["big"][0].Output["text"].(*blob.Blob)
	require.True(t, isBlob, "big's text was kept in the blob store: %T", steps["big"][0].Output["text"])
	require.EqualValues(t, blob.InlineLimit+1, steps["after"][0].Output["n"])
	require.EqualValues(t, 1, d.Continued(), "big ran from its job, taken by local continuation")
	require.EqualValues(t, 1, d.Inlined(), "after ran in big's transaction")
}
