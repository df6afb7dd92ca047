package queue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	skeinproc "github.com/skeinhq/skein/internal/proc"
	"github.com/skeinhq/skein/internal/queue"
)

// sleeper is a workflow whose shell node writes its pid to pidFile, then
// sleeps for long (or, with gate set, until the file gate exists), and a
// node after it.
func sleeper(pidFile, gate string) string {
	wait := "sleep 300"
	if gate != "" {
		wait = fmt.Sprintf("while [ ! -e %s ]; do sleep 0.02; done", gate)
	}
	return fmt.Sprintf(`version: 1
name: sleeper
nodes:
  - {id: start, type: trigger.manual}
  - {id: slow, type: shell, command: [sh, -c, 'echo $$ > %s; %s; echo "{\"done\": true}"']}
  - {id: after, type: set, values: {x: 1}}
edges:
  - {from: start, to: slow}
  - {from: slow, to: after}
`, pidFile, wait)
}

// pidOf waits for the pid a shell node wrote to file.
func pidOf(t *testing.T, file string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(file)
		if err != nil || !bytes.HasSuffix(data, []byte("\n")) {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	}, 30*time.Second, 10*time.Millisecond, "the shell node never started")
	return pid
}

func (b *bundle) available(t *testing.T, runID string) int {
	t.Helper()
	var n int
	require.NoError(t, b.st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM river_job
		WHERE args->>'run' = $1 AND state IN ('available', 'scheduled', 'retryable', 'pending', 'running')`, runID).Scan(&n))
	return n
}

// TestCancelStopsARunningNodeOnItsWorker: a cancel request (the default:
// stop running nodes) reaches the worker that runs a shell node, which
// kills its process and records the step cancelled; the node after it is
// cancelled and the run ends cancelled.
func TestCancelStopsARunningNodeOnItsWorker(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	pidFile := filepath.Join(t.TempDir(), "pid")
	run := b.start(t, sleeper(pidFile, ""), nil)
	pid := pidOf(t, pidFile)

	_, err := b.st.RequestCancel(context.Background(), run.ID, false)
	require.NoError(t, err)
	require.NoError(t, b.starter.Cancel(context.Background(), run.ID))
	done := b.wait(t, run.ID)
	require.Equal(t, "cancelled", string(done.Status))
	require.NotNil(t, done.FinishedAt)
	require.Eventually(t, func() bool { return !skeinproc.Alive(pid) }, 60*time.Second, 10*time.Millisecond, "the node's process outlived the cancel")
	steps := b.steps(t, run.ID)
	require.Len(t, steps["slow"], 1)
	require.Equal(t, "cancelled", string(steps["slow"][0].Status), "the running node was stopped")
	require.NotNil(t, steps["slow"][0].RanOn, "the stopped node says where it ran")
	require.NotEmpty(t, steps["slow"][0].RanOn.Worker, "the worker that ran it")
	require.Equal(t, os.Getpid(), steps["slow"][0].RanOn.PID)
	require.Len(t, steps["after"], 1)
	require.Equal(t, "cancelled", string(steps["after"][0].Status), "never started because of the cancel")
	require.Empty(t, steps["after"][0].SkipReason)
	require.Nil(t, steps["after"][0].RanOn, "it ran nowhere")
	require.Eventually(t, func() bool { return b.available(t, run.ID) == 0 }, 60*time.Second, 10*time.Millisecond,
		"a job of the run is left")
}

// TestCancelWithNoWorker: a run whose jobs no worker took is cancelled at
// once, in the call that cancels it: its jobs are cancelled, its steps
// cancelled, and the run ends cancelled with its timing.
func TestCancelWithNoWorker(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	run := b.start(t, sleeper(filepath.Join(t.TempDir(), "pid"), ""), nil)
	require.Positive(t, b.available(t, run.ID), "the run's first job waits for a worker")

	_, err := b.st.RequestCancel(context.Background(), run.ID, false)
	require.NoError(t, err)
	require.NoError(t, b.starter.Cancel(context.Background(), run.ID))
	got, err := b.st.Run(context.Background(), run.ID)
	require.NoError(t, err)
	require.Equal(t, "cancelled", string(got.Status), "the run ended with the cancel")
	require.NotNil(t, got.FinishedAt)
	require.Equal(t, "cancelled", got.Error.Code)
	require.Zero(t, b.available(t, run.ID), "no job of the run is left for a worker")
	steps := b.steps(t, run.ID)
	for _, id := range []string{"slow", "after"} {
		require.Len(t, steps[id], 1, id)
		require.Equal(t, "cancelled", string(steps[id][0].Status), id)
		require.Nil(t, steps[id][0].StartedAt, "%s never started", id)
	}
	// Cancelling again changes nothing.
	require.NoError(t, b.starter.Cancel(context.Background(), run.ID))
}

// TestCancelLetFinishOnTheQueue: a cancel that lets running nodes finish
// leaves the worker's node running; it is recorded success, the node
// after it is cancelled and the run ends cancelled.
func TestCancelLetFinishOnTheQueue(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	dir := t.TempDir()
	pidFile, gate := filepath.Join(dir, "pid"), filepath.Join(dir, "gate")
	run := b.start(t, sleeper(pidFile, gate), nil)
	pid := pidOf(t, pidFile)

	_, err := b.st.RequestCancel(context.Background(), run.ID, true)
	require.NoError(t, err)
	require.NoError(t, b.starter.Cancel(context.Background(), run.ID))
	got, err := b.st.Run(context.Background(), run.ID)
	require.NoError(t, err)
	require.Equal(t, "running", string(got.Status), "the run waits for its running node")
	require.True(t, skeinproc.Alive(pid), "the running node goes on")
	require.NoError(t, os.WriteFile(gate, nil, 0o600))

	done := b.wait(t, run.ID)
	require.Equal(t, "cancelled", string(done.Status))
	steps := b.steps(t, run.ID)
	require.Len(t, steps["slow"], 1)
	require.Equal(t, "success", string(steps["slow"][0].Status), "the running node finished and was recorded")
	require.Equal(t, true, steps["slow"][0].Output["json"].(map[string]any)["done"])
	require.Len(t, steps["after"], 1)
	require.Equal(t, "cancelled", string(steps["after"][0].Status), "nothing new started")
}

// TestCancelLetFinishThenStop: a cancel that lets running nodes finish is
// made to stop them by a later one that does not: the worker stops the
// node it runs.
func TestCancelLetFinishThenStop(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	run := b.start(t, sleeper(pidFile, filepath.Join(dir, "gate")), nil)
	pid := pidOf(t, pidFile)

	_, err := b.st.RequestCancel(context.Background(), run.ID, true)
	require.NoError(t, err)
	require.NoError(t, b.starter.Cancel(context.Background(), run.ID))
	got, err := b.st.Run(context.Background(), run.ID)
	require.NoError(t, err)
	require.Equal(t, "running", string(got.Status), "the run waits for its running node")

	_, err = b.st.RequestCancel(context.Background(), run.ID, false)
	require.NoError(t, err)
	require.NoError(t, b.starter.Cancel(context.Background(), run.ID))
	done := b.wait(t, run.ID)
	require.Equal(t, "cancelled", string(done.Status))
	require.Eventually(t, func() bool { return !skeinproc.Alive(pid) }, 60*time.Second, 10*time.Millisecond, "the node's process outlived the cancel")
	steps := b.steps(t, run.ID)
	require.Equal(t, "cancelled", string(steps["slow"][0].Status), "the running node was stopped")
	require.Equal(t, "cancelled", string(steps["after"][0].Status))
}

// TestPollReadsNoQueuedRun: the statement every worker runs each second
// to find cancel requests and signals reads a few pages however many runs
// wait in the queue. With 5,000 queued runs, one of them asked to cancel
// and one sent a signal, it finds those two and reads under 60 pages (a
// scan of the waiting runs reads over 100 a half), with the tables'
// statistics stale, as right after a burst of webhooks, and fresh.
func TestPollReadsNoQueuedRun(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	ctx := context.Background()
	pool := b.st.Pool()
	for _, sql := range []string{
		`INSERT INTO runs (id, workflow, status, started_at, owner_token)
		 SELECT 'run' || i, 'w', 'running', now(), 'queue:x' FROM generate_series(1, 5000) i`,
		`UPDATE runs SET cancel_requested_at = now() WHERE id = 'run17'`,
		`INSERT INTO signals (run_id, node, visit, seq, data, created_at) VALUES ('run4000', 'gate', 0, 1, '{}', now())`,
	} {
		_, err := pool.Exec(ctx, sql)
		require.NoError(t, err)
	}
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			_, err := pool.Exec(ctx, `ANALYZE runs; ANALYZE signals`)
			require.NoError(t, err)
		}
		rows, err := pool.Query(ctx, queue.PendingSQL)
		require.NoError(t, err)
		var found []string
		for rows.Next() {
			var run, node string
			var visit int
			require.NoError(t, rows.Scan(&run, &node, &visit))
			found = append(found, run+"/"+node)
		}
		require.NoError(t, rows.Err())
		require.ElementsMatch(t, []string{"run17/", "run4000/gate"}, found, "analyzed: %v", analyzed)

		var out []byte
		require.NoError(t, pool.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+queue.PendingSQL).Scan(&out))
		var plans []struct {
			Plan struct {
				Hit  int `json:"Shared Hit Blocks"`
				Read int `json:"Shared Read Blocks"`
			}
		}
		require.NoError(t, json.Unmarshal(out, &plans), "%s", out)
		require.Len(t, plans, 1)
		require.Less(t, plans[0].Plan.Hit+plans[0].Plan.Read, 60, "analyzed: %v; the plan: %s", analyzed, out)
	}
}
