package engine_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
	"github.com/skeinhq/skein/workflow"
)

// TestSchedulerPropertiesThroughTheQueue runs the property test's random
// workflows through the queue driver — River on Postgres, three workers,
// each run's state rebuilt from its history in whichever worker takes the
// next job — and checks that each ends with the steps the model predicts
// and the outputs the scheduler gives when driven in-process. One run in
// seven is cancelled as it starts: it ends cancelled (or failed, when a
// node failed it first) with every step final.
func TestSchedulerPropertiesThroughTheQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.URL(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = queue.Migrate(ctx, st.Pool())
	require.NoError(t, err)

	var mu sync.Mutex
	plays := map[string]*frun{} // by run id
	exec := func(_ context.Context, runID string, tk *engine.Task) engine.Outcome {
		mu.Lock()
		defer mu.Unlock()
		fr := plays[runID]
		key := frameNode{tk.Frame, tk.Node.ID}
		vk := visitKey{tk.Frame, tk.Node.ID, tk.Visit}
		if _, ok := fr.k[vk]; !ok {
			fr.k[vk] = fr.kNext[key]
			fr.kNext[key]++
		}
		return fr.outcome(tk)
	}
	for range 3 {
		d, err := queue.New(queue.Config{Store: st, Registry: testReg, Queues: map[string]int{queue.DefaultQueue: 4},
			Poll: 20 * time.Millisecond, FetchPoll: 20 * time.Millisecond, Exec: exec,
			TimerDelay: func(tm engine.Timer) time.Duration {
				if tm.Timeout {
					return tm.Delay // the signal comes first
				}
				return 0 // retries and held successors go on at once
			}})
		require.NoError(t, err)
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- d.Work(wctx, 10*time.Second) }()
		t.Cleanup(func() {
			stop()
			require.NoError(t, <-done)
		})
	}
	starter, err := queue.New(queue.Config{Store: st, Registry: testReg})
	require.NoError(t, err)
	dir := t.TempDir()

	n := 100
	if testing.Short() {
		n = 20
	}
	for seed := range n {
		data := binary.LittleEndian.AppendUint64(nil, uint64(seed)*0x9e3779b97f4a7c15)
		ok := t.Run(fmt.Sprint(seed), func(t *testing.T) {
			sc := genScenario(t, data, 12+seed%30)
			local := sc.run(t, func(int) int { return 0 }, 0)

			file := filepath.Join(dir, fmt.Sprintf("s%d.yaml", seed))
			require.NoError(t, os.WriteFile(file, []byte(sc.src), 0o600))
			w, ds := workflow.Load(file, testReg)
			require.False(t, ds.HasErrors(), "%v", ds)
			id := fmt.Sprintf("prop-%d", seed)
			mu.Lock()
			plays[id] = &frun{t: t, sc: sc, k: map[visitKey]int{}, kNext: map[frameNode]int{}}
			mu.Unlock()
			_, err := starter.Start(ctx, queue.StartRequest{RunID: id, Workflow: w, Source: []byte(sc.src)})
			require.NoError(t, err)
			cancelled := false
			if seed%7 == 3 {
				// A cancel while the run is under way: it reaches the
				// workers through the database.
				at, err := st.RequestCancel(ctx, id, false)
				require.NoError(t, err)
				// A run that ended first stays as it ended.
				cancelled = at.Status == engine.RunRunning
			}
			run := awaitQueueRun(t, st, id)

			steps, err := st.Steps(ctx, id)
			require.NoError(t, err)
			summary := map[string]int{}
			var outputs []string
			for _, s := range steps {
				require.True(t, engine.Status(s.Status).Final(), "step %s/%d ended %s\n%s", s.Node, s.Visit, s.Status, sc.src)
				summary[fmt.Sprintf("%s|%s|%d|%d", s.Node, s.Status, s.Iteration, s.Attempts)]++
				out, _, err := durable.Output(s)
				require.NoError(t, err)
				b, err := json.Marshal(out)
				require.NoError(t, err)
				outputs = append(outputs, fmt.Sprintf("%s|%s|%d|%d|%s", s.Node, s.Status, s.Iteration, s.Attempts, b))
			}
			sort.Strings(outputs)
			if cancelled {
				require.Contains(t, []string{"cancelled", "failed"}, string(run.Status), "a cancelled run\n%s", sc.src)
				return
			}
			require.Equal(t, string(local.done.Status), string(run.Status), "the queue's run ended otherwise than the in-process one\n%s", sc.src)
			if !sc.exact() {
				return
			}
			require.Equal(t, sc.model.steps, summary, "the steps differ from the model\n%s", sc.src)
			if !sc.model.racy {
				require.Equal(t, local.outputs(), outputs, "the outputs differ from the in-process run's\n%s", sc.src)
			}
		})
		if !ok {
			break
		}
	}
}

// awaitQueueRun sends each wait's signal as its step waits, and returns
// the run once it ended (within 60 s).
func awaitQueueRun(t *testing.T, st *postgres.Store, id string) *store.Run {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for {
		run, err := st.Run(ctx, id)
		require.NoError(t, err)
		switch engine.RunStatus(run.Status) {
		case engine.RunCompleted, engine.RunFailed, engine.RunCancelled:
			return run
		}
		require.True(t, time.Now().Before(deadline), "run %s did not end within 60 s", id)
		steps, err := st.Steps(ctx, id)
		require.NoError(t, err)
		for _, s := range steps {
			if s.Status != engine.StatusWaiting {
				continue
			}
			err := st.SaveSignal(ctx, &store.Signal{RunID: id, Node: s.Node, Visit: s.Visit, Data: "approved", CreatedAt: signalAt})
			if err != nil && !errors.Is(err, store.ErrExists) {
				require.NoError(t, err)
			}
		}
		time.Sleep(10 * time.Millisecond) // polling other processes' writes, bounded by the deadline
	}
}
