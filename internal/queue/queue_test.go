package queue_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
	"github.com/skeinhq/skein/workflow"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { removeSkeinBin() }))
}

// flaky fails the first attempt of each node visit it runs, once per
// test (the test's counter).
type flaky struct{ fails *sync.Map }

func (k flaky) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	key := fmt.Sprintf("%s/%s/%d", c.RunID, c.NodeID, c.Visit)
	if _, seen := k.fails.LoadOrStore(key, true); !seen {
		return nil, node.Failf(node.CategoryExecution, "flaky", "%s fails its first attempt", c.NodeID)
	}
	return map[string]any{"attempt": c.Attempt, "worker": c.Params["tag"]}, nil
}

var flakyFails sync.Map

// registry is the standard kinds plus flaky.
func registry() *node.Registry {
	reg := node.NewRegistry()
	for _, s := range node.Default.Specs() {
		kind := s.Kind
		var ctor node.Constructor
		if _, ok := node.Default.New(kind); ok {
			ctor = func() node.Kind { k, _ := node.Default.New(kind); return k }
		}
		reg.MustRegister(*s, ctor)
	}
	reg.MustRegister(node.Spec{
		Kind: "flaky", Category: node.Action, Description: "Fails its first attempt, then succeeds.",
		Params: []node.Param{{Name: "tag", Type: node.String, Description: "Echoed."}},
	}, func() node.Kind { return flaky{fails: &flakyFails} })
	reg.MustRegister(node.Spec{
		Kind: "blocker", Category: node.Action, Description: "Blocks until stopped, the first time.",
	}, func() node.Kind { return blocker{} })
	reg.MustRegister(node.Spec{
		Kind: "talker", Category: node.Action, Description: "Emits an event, then waits.",
	}, func() node.Kind { return talker{} })
	reg.MustRegister(node.Spec{
		Kind: "chatty", Category: node.Action, Description: "Emits an event, then takes ms milliseconds.",
		Params: []node.Param{{Name: "ms", Type: node.Int, Description: "How long."}},
	}, func() node.Kind { return chatty{} })
	reg.MustRegister(node.Spec{
		Kind: "spender", Category: node.Action, Description: "Checks the run's budget, then spends 700 tokens.",
	}, func() node.Kind { return spender{} })
	reg.MustRegister(node.Spec{
		Kind: "gated", Category: node.Action, Description: "Blocks its first attempt until the test opens its gate.",
	}, func() node.Kind { return gated{} })
	reg.MustRegister(node.Spec{
		Kind: "nap", Category: node.Action, Description: "Waits ms milliseconds in the worker (a node that takes time, not a timer).",
		Params: []node.Param{{Name: "ms", Type: node.Int, Description: "How long."}},
	}, func() node.Kind { return nap{} })
	return reg
}

// spender checks the run's budget, as an AI kind does before a model
// call, and spends 700 tokens.
type spender struct{}

func (spender) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	b, err := node.BudgetService.Get(c)
	if err != nil {
		return nil, err
	}
	if err := b.CheckExtra(0, 0); err != nil {
		return nil, err
	}
	return map[string]any{"_token_usage": map[string]any{"total_tokens": 700, "cost_usd": 0.0}}, nil
}

// nap is a node that takes ms milliseconds of a worker's time.
type nap struct{}

func (nap) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	ms, _ := c.Int("ms")
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return map[string]any{"slept_ms": ms}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// chatty reports a tool call, then takes ms milliseconds.
type chatty struct{}

func (chatty) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	c.Emit("tool_call", map[string]any{"tool": "search"})
	return nap{}.Run(ctx, c)
}

type bundle struct {
	st      *postgres.Store
	reg     *node.Registry
	starter *queue.Driver
	dir     string
	url     string // of the test's schema
}

// setup migrates a fresh schema and starts `workers` workers in this
// process, each working the given queues.
func setup(t *testing.T, workers int, queues ...string) *bundle {
	t.Helper()
	return setupAt(t, pgtest.URL(t), workers, queues...)
}

// setupAt is setup on the database of url.
func setupAt(t *testing.T, url string, workers int, queues ...string) *bundle {
	t.Helper()
	return setupWith(t, url, workers, nil, queues...)
}

// setupWith is setupAt with mod applied to the configuration of the
// starter and of each worker (nil: none).
func setupWith(t *testing.T, url string, workers int, mod func(*queue.Config), queues ...string) *bundle {
	t.Helper()
	if mod == nil {
		mod = func(*queue.Config) {}
	}
	ctx := context.Background()
	st, err := postgres.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = queue.Migrate(ctx, st.Pool())
	require.NoError(t, err)
	reg := registry()
	b := &bundle{st: st, reg: reg, dir: t.TempDir(), url: url}
	starter := queue.Config{Store: st, Registry: reg}
	mod(&starter)
	b.starter, err = queue.New(starter)
	require.NoError(t, err)
	if len(queues) == 0 {
		queues = []string{queue.DefaultQueue}
	}
	for range workers {
		qs := map[string]int{}
		for _, q := range queues {
			qs[q] = 4
		}
		cfg := queue.Config{Store: st, Registry: reg, Queues: qs,
			Poll: 50 * time.Millisecond, FetchPoll: 50 * time.Millisecond,
			TimerDelay: func(t engine.Timer) time.Duration {
				if t.Hold {
					return t.Delay
				}
				return 0 // retries at once
			}}
		mod(&cfg)
		b.work(t, cfg)
	}
	return b
}

// work starts a worker of cfg — on the bundle's store and registry when
// cfg names none — that works until the test ends.
func (b *bundle) work(t *testing.T, cfg queue.Config) *queue.Driver {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = b.st
	}
	if cfg.Registry == nil {
		cfg.Registry = b.reg
	}
	d, err := queue.New(cfg)
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Work(ctx, 10*time.Second) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})
	return d
}

func (b *bundle) start(t *testing.T, src string, inputs map[string]any) *store.Run {
	t.Helper()
	return b.startTB(t, src, inputs)
}

func (b *bundle) startB(tb testing.TB, src string) string {
	return b.startTB(tb, src, nil).ID
}

func (b *bundle) startTB(t testing.TB, src string, inputs map[string]any) *store.Run {
	t.Helper()
	return b.startWith(t, fmt.Sprintf("r%d", time.Now().UnixNano()), src, inputs)
}

// startWith starts a run with the given id (a test that keys its fake
// kinds by run id sets them up first).
func (b *bundle) startWith(t testing.TB, id, src string, inputs map[string]any) *store.Run {
	t.Helper()
	file := filepath.Join(b.dir, "flow.yaml")
	require.NoError(t, os.WriteFile(file, []byte(src), 0o600))
	w, ds := workflow.Load(file, b.reg)
	require.False(t, ds.HasErrors(), "%v", ds)
	run, err := b.starter.Start(context.Background(), queue.StartRequest{RunID: id,
		Workflow: w, Source: []byte(src), Inputs: inputs})
	require.NoError(t, err)
	return run
}

// wait polls the run until it ended. It waits as long as the test may run
// (go test's -timeout, which prints every goroutine when a run never
// ends), not for a wall-clock bound: on a loaded machine a correct run
// may take longer than any bound chosen here (a 200-node fan-out on four
// workers once took more than 30 s at load 29).
func (b *bundle) wait(t *testing.T, id string) *store.Run {
	t.Helper()
	run, err := b.starter.Wait(t.Context(), id, 20*time.Millisecond)
	require.NoError(t, err, "run %s", id)
	return run
}

func (b *bundle) steps(t *testing.T, id string) map[string][]*store.Step {
	t.Helper()
	steps, err := b.st.Steps(context.Background(), id)
	require.NoError(t, err)
	out := map[string][]*store.Step{}
	for _, s := range steps {
		out[s.Node] = append(out[s.Node], s)
	}
	return out
}

const fanOut = `version: 1
name: fan
nodes:
  - {id: start, type: trigger.manual}
%s  - {id: join, type: merge}
  - {id: total, type: set, values: {n: "{{ len(join.inputs) }}"}}
edges:
%s  - {from: join, to: total}
`

func fanOutFlow(n int) string {
	var nodes, edges string
	for i := range n {
		nodes += fmt.Sprintf("  - {id: b%d, type: set, values: {i: %d}}\n", i, i)
		edges += fmt.Sprintf("  - {from: start, to: b%d}\n  - {from: b%d, to: join}\n", i, i)
	}
	return fmt.Sprintf(fanOut, nodes, edges)
}

func TestHelloThroughTheQueue(t *testing.T) {
	t.Parallel()
	b := setup(t, 2)
	src, err := os.ReadFile("../../examples/hello.yaml")
	require.NoError(t, err)
	run := b.start(t, string(src), map[string]any{"who": "Ada"})
	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	require.Equal(t, "Hello, Ada!", done.Outputs["greeting"])
	require.EqualValues(t, 3, done.Outputs["length"])
	steps := b.steps(t, run.ID)
	for _, id := range []string{"start", "greet", "measure"} {
		require.Len(t, steps[id], 1, id)
		require.Equal(t, "success", string(steps[id][0].Status), id)
	}
	require.True(t, done.LeaseExpired, "a finished run has no owner")
}

func TestFanOutJoinFiresOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	const n = 24
	run := b.start(t, fanOutFlow(n), nil)
	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	steps := b.steps(t, run.ID)
	require.Len(t, steps["join"], 1, "the join ran more than once")
	require.Equal(t, "success", string(steps["join"][0].Status))
	require.Len(t, steps["total"], 1)
	for i := range n {
		require.Len(t, steps[fmt.Sprintf("b%d", i)], 1)
	}
	evs, err := b.st.Events(context.Background(), run.ID, 0, 10_000)
	require.NoError(t, err)
	started := 0
	for _, ev := range evs {
		if ev.Type == engine.EventNodeStarted && ev.Node == "join" {
			started++
		}
	}
	require.Equal(t, 1, started, "node_started events of the join")
	require.Equal(t, engine.EventExecutionFinished, evs[len(evs)-1].Type)
}

func TestRetryIsAScheduledJob(t *testing.T) {
	t.Parallel()
	b := setup(t, 2)
	run := b.start(t, `version: 1
name: retry
nodes:
  - {id: start, type: trigger.manual}
  - {id: shaky, type: flaky, tag: x, retries: 2, retry_backoff: 1h}
edges:
  - {from: start, to: shaky}
`, nil)
	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	steps := b.steps(t, run.ID)
	require.Len(t, steps["shaky"], 1)
	require.Equal(t, 2, steps["shaky"][0].Attempts)
	require.EqualValues(t, 2, steps["shaky"][0].Output["attempt"])
}

// A wait on workers ends when it is due by the workers' clock: the
// process that queued the timer makes its job available then, while
// River's scheduler alone would promote it only at the job's scheduled
// time (ten minutes of the wall clock away here) or up to 5 s late. The
// clock is the test's.
func TestTimersFireOnTime(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Now())
	b := setupWith(t, pgtest.URL(t), 1, func(c *queue.Config) { c.Clock = clk })
	timer := clk.WaitForTimer()
	run := b.start(t, `version: 1
name: pause
nodes:
  - {id: start, type: trigger.manual}
  - {id: nap, type: wait, duration: 10m}
  - {id: after, type: set, values: {ok: true}}
edges:
  - {from: start, to: nap}
  - {from: nap, to: after}
`, nil)
	select {
	case <-timer:
	case <-time.After(30 * time.Second):
		t.Fatal("the wait set no timer")
	}
	cur, err := b.st.Run(t.Context(), run.ID)
	require.NoError(t, err)
	require.Nil(t, cur.FinishedAt, "the wait is not cut short: the run has not ended")
	clk.Advance(10 * time.Minute)
	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	require.Equal(t, true, b.steps(t, run.ID)["after"][0].Output["ok"])
}

func TestQueuesRouteNodes(t *testing.T) {
	t.Parallel()
	b := setup(t, 1) // works the default queue only
	run := b.start(t, `version: 1
name: gpu
nodes:
  - {id: start, type: trigger.manual}
  - {id: train, type: set, queue: gpu, values: {ok: true}}
edges:
  - {from: start, to: train}
`, nil)
	// Nobody works gpu: the node waits in its queue.
	var jobs int
	require.NoError(t, b.st.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM river_job WHERE queue = 'gpu' AND state = 'available'`).Scan(&jobs))
	require.Equal(t, 1, jobs)
	// A worker of gpu takes it.
	b.work(t, queue.Config{Queues: map[string]int{"gpu": 1}, Poll: 50 * time.Millisecond, FetchPoll: 50 * time.Millisecond})
	end := b.wait(t, run.ID)
	require.Equal(t, "completed", string(end.Status), "%v", end.Error)
}

func TestCancelReachesWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t, 2)
	run := b.start(t, `version: 1
name: sleepy
nodes:
  - {id: start, type: trigger.manual}
  - {id: nap, type: wait, duration: 1h}
  - {id: after, type: set, values: {x: 1}}
edges:
  - {from: start, to: nap}
  - {from: nap, to: after}
`, nil)
	_, err := b.st.RequestCancel(context.Background(), run.ID, false)
	require.NoError(t, err)
	done := b.wait(t, run.ID)
	require.Equal(t, "cancelled", string(done.Status))
	steps := b.steps(t, run.ID)
	for _, s := range steps["after"] {
		require.Equal(t, "cancelled", string(s.Status), "a node ran after the cancel")
	}
	require.Len(t, steps["nap"], 1)
	require.NotEqual(t, "success", string(steps["nap"][0].Status), "the wait ended as if its hour had passed")
}

// released counts the services a worker released.
type released struct{ n atomic.Int64 }

func TestWorkerReleasesTheServicesOfEndedRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	var rel released
	var made atomic.Int64
	d, err := queue.New(queue.Config{Store: b.st, Registry: b.reg, Queues: map[string]int{queue.DefaultQueue: 2},
		Poll: 20 * time.Millisecond, FetchPoll: 20 * time.Millisecond,
		Services: func(*workflow.Workflow, map[string]any, map[string]string) (*node.Services, func()) {
			made.Add(1)
			return nil, func() { rel.n.Add(1) }
		}})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Work(ctx, time.Second) }()
	defer func() { stop(); require.NoError(t, <-done) }()
	for range 3 {
		run := b.start(t, fanOutFlow(3), nil)
		require.Equal(t, "completed", string(b.wait(t, run.ID).Status))
	}
	require.Eventually(t, func() bool { return rel.n.Load() == made.Load() }, 60*time.Second, 10*time.Millisecond,
		"the worker holds the services of runs that ended (%d made, %d released)", made.Load(), rel.n.Load())
	require.Positive(t, made.Load())
}

// blocker blocks until its context ends, the first time it runs in a
// test; it succeeds after that.
type blocker struct{ started chan struct{} }

var blockers sync.Map // run id → *blocker

func (blocker) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	v, _ := blockers.Load(c.RunID)
	b := v.(*blocker)
	select {
	case <-b.started:
		return map[string]any{"again": true}, nil
	default:
	}
	close(b.started)
	<-ctx.Done()
	return nil, ctx.Err()
}

// brieflyDraining starts a worker of one slot whose drain lasts 10 ms, so
// that stopping it stops the node it runs; stop returns Work's error.
func (b *bundle) brieflyDraining(t *testing.T) (stop func() error) {
	t.Helper()
	d, err := queue.New(queue.Config{Store: b.st, Registry: b.reg, Queues: map[string]int{queue.DefaultQueue: 1},
		Poll: 20 * time.Millisecond, FetchPoll: 20 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Work(ctx, 10*time.Millisecond) }()
	return func() error { cancel(); return <-done }
}

// TestStoppedWorkerLeavesItsNodeToAnother: a worker whose drain runs out
// records nothing for the node it stopped; River gives the job to another
// worker, where the node runs again and the run completes.
func TestStoppedWorkerLeavesItsNodeToAnother(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	reg := b.reg
	ctx := context.Background()
	stop := b.brieflyDraining(t)

	id := fmt.Sprintf("b%d", time.Now().UnixNano())
	bl := &blocker{started: make(chan struct{})}
	blockers.Store(id, bl)
	run := b.startWith(t, id, "version: 1\nname: block\nnodes:\n  - {id: hold, type: blocker}\n", nil)
	<-bl.started
	require.NoError(t, stop())
	steps := b.steps(t, run.ID)
	require.Equal(t, "pending", string(steps["hold"][0].Status), "the stopped attempt went back to the queue, recording nothing")
	require.Nil(t, steps["hold"][0].Output)

	second, err := queue.New(queue.Config{Store: b.st, Registry: reg, Queues: map[string]int{queue.DefaultQueue: 1},
		Poll: 20 * time.Millisecond, FetchPoll: 20 * time.Millisecond})
	require.NoError(t, err)
	// River retries the job after its backoff (a second or so); make it
	// due now.
	_, err = b.st.Pool().Exec(ctx, `UPDATE river_job SET scheduled_at = now(), state = 'available' WHERE state = 'retryable'`)
	require.NoError(t, err)
	w2ctx, stop2 := context.WithCancel(ctx)
	done2 := make(chan error, 1)
	go func() { done2 <- second.Work(w2ctx, time.Second) }()
	defer func() { stop2(); require.NoError(t, <-done2) }()
	end := b.wait(t, run.ID)
	require.Equal(t, "completed", string(end.Status), "%v", end.Error)
	steps = b.steps(t, run.ID)
	require.Equal(t, true, steps["hold"][0].Output["again"])
	require.Equal(t, 1, steps["hold"][0].Attempts, "the node's own attempt count is unchanged")
}

// talker emits an event, then waits for the test to have seen it.
type talker struct{}

var talkers sync.Map // run id → chan struct{}

func (talker) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	c.Emit("tool_call", map[string]any{"tool": "search"})
	v, _ := talkers.Load(c.RunID)
	select {
	case <-v.(chan struct{}):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return map[string]any{"ok": true}, nil
}

// TestEventsOfARunningNodeAreLive: what a node reports while it runs is
// recorded at once, not when it ends.
func TestEventsOfARunningNodeAreLive(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	id := fmt.Sprintf("t%d", time.Now().UnixNano())
	release := make(chan struct{})
	talkers.Store(id, release)
	run := b.startWith(t, id, "version: 1\nname: talk\nnodes:\n  - {id: ask, type: talker}\n", nil)
	require.Eventually(t, func() bool {
		evs, err := b.st.Events(context.Background(), run.ID, 0, 100)
		require.NoError(t, err)
		for _, ev := range evs {
			if ev.Type == "tool_call" && ev.Node == "ask" {
				return true
			}
		}
		return false
	}, 60*time.Second, 10*time.Millisecond, "the running node's event was not recorded")
	close(release)
	require.Equal(t, "completed", string(b.wait(t, run.ID).Status))
}

// TestQueuedNodeIsPendingUntilAWorkerTakesIt: a released node's step is
// pending while its job waits in the queue; it starts (running, with its
// node_started event) when a worker takes it.
func TestQueuedNodeIsPendingUntilAWorkerTakesIt(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	run := b.start(t, "version: 1\nname: one\nnodes:\n  - {id: only, type: set, values: {x: 1}}\n", nil)
	steps := b.steps(t, run.ID)
	require.Equal(t, "pending", string(steps["only"][0].Status))
	require.Nil(t, steps["only"][0].StartedAt)
	started := func() int {
		evs, err := b.st.Events(context.Background(), run.ID, 0, 100)
		require.NoError(t, err)
		n := 0
		for _, ev := range evs {
			if ev.Type == engine.EventNodeStarted && ev.Node == "only" {
				n++
			}
		}
		return n
	}
	require.Zero(t, started(), "node_started before a worker took the job")

	b.work(t, queue.Config{Queues: map[string]int{queue.DefaultQueue: 1}, Poll: 20 * time.Millisecond, FetchPoll: 20 * time.Millisecond})
	require.Equal(t, "completed", string(b.wait(t, run.ID).Status))
	require.Equal(t, 1, started())
	steps = b.steps(t, run.ID)
	require.Equal(t, "success", string(steps["only"][0].Status))
	require.NotNil(t, steps["only"][0].StartedAt)
}

// TestEventsOfEachNodeKeepTheirOrder: the outcomes, marks and reports of
// many nodes finishing at once on three workers are recorded in groups,
// and each node's events still read node_started, what it reported,
// node_finished — once each, for nodes that take no time and nodes that
// take 30 ms alike.
func TestEventsOfEachNodeKeepTheirOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	var nodes, edges string
	const n = 40
	for i := range n {
		nodes += fmt.Sprintf("  - {id: b%d, type: chatty, ms: %d}\n", i, (i%2)*30)
		edges += fmt.Sprintf("  - {from: start, to: b%d}\n  - {from: b%d, to: join}\n", i, i)
	}
	run := b.start(t, fmt.Sprintf(fanOut, nodes, edges), nil)
	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	evs, err := b.st.Events(context.Background(), run.ID, 0, 10_000)
	require.NoError(t, err)
	seen := map[string][]string{}
	for i, ev := range evs {
		require.EqualValues(t, i+1, ev.Seq, "event seqs have no gap")
		if ev.Node != "" {
			seen[ev.Node] = append(seen[ev.Node], ev.Type)
		}
	}
	for i := range n {
		id := fmt.Sprintf("b%d", i)
		require.Equal(t, []string{engine.EventNodeStarted, "tool_call", engine.EventNodeFinished}, seen[id], id)
	}
	steps := b.steps(t, run.ID)
	for i := range n {
		s := steps[fmt.Sprintf("b%d", i)][0]
		require.Equal(t, "success", string(s.Status))
		require.NotNil(t, s.StartedAt)
		if i%2 == 1 {
			require.GreaterOrEqual(t, s.FinishedAt.Sub(*s.StartedAt), 30*time.Millisecond, "a step starts when its node does")
		}
	}
}

// TestWideFanOutOnWorkersSharingAPool: four workers of ten jobs each on
// one connection pool (fewer connections than jobs) finish a fan-out of
// 200 nodes: a goroutine that holds a connection never waits for one that
// waits for a connection (it once did: a transaction waited for the run's
// state that a starting node held while it waited for a connection).
func TestWideFanOutOnWorkersSharingAPool(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	for range 4 {
		b.work(t, queue.Config{Queues: map[string]int{queue.DefaultQueue: 10}, Poll: 50 * time.Millisecond, FetchPoll: 50 * time.Millisecond})
	}
	run := b.start(t, fanOutFlow(200), nil)
	end := b.wait(t, run.ID)
	require.Equal(t, "completed", string(end.Status), "%v", end.Error)
	require.Len(t, b.steps(t, run.ID)["join"], 1)
}

// Workers give nodes the run's budget, going on from what the run's
// history spent: the third node of a run limited to 1,000 tokens, after
// two spent 700 each, is refused (nodes that check the budget failed on
// workers: no budget was provided).
func TestWorkersKeepTheRunsBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, 2)
	run := b.start(t, `version: 1
name: spend
limits: {max_tokens: 1000}
nodes:
  - {id: one, type: spender}
  - {id: two, type: spender}
  - {id: three, type: spender}
edges:
  - {from: one, to: two}
  - {from: two, to: three}
`, nil)
	done := b.wait(t, run.ID)
	require.Equal(t, "failed", string(done.Status))
	require.Equal(t, 1400, done.Tokens)
	steps := b.steps(t, run.ID)
	require.Equal(t, "success", string(steps["two"][0].Status), "%v", steps["two"][0].Error)
	three := steps["three"][0]
	require.Equal(t, "failed", string(three.Status))
	require.Equal(t, "budget_exceeded", three.Error.Category)
	require.Contains(t, three.Error.Message, "1400 tokens used, limits.max_tokens is 1000")
}

// A worker stopped before it started (its context ended while it
// registered) has nothing to drain: Work returns no error.
func TestWorkStoppedBeforeItStarts(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	d, err := queue.New(queue.Config{Store: b.st, Registry: b.reg, Queues: map[string]int{queue.DefaultQueue: 1}})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	stop()
	require.NoError(t, d.Work(ctx, time.Second))
}

// TestTriggerPayloadInScope: a run started by a trigger with a payload (a
// webhook's request) reads it as `trigger` in its nodes' templates and in
// its outputs on the workers, as the trigger node's output does, as a
// local run does.
func TestTriggerPayloadInScope(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	const src = `version: 1
name: hooked
nodes:
  - {id: hook, type: trigger.webhook, path: hook, auth: {type: none}}
  - {id: read, type: set, values: {from_trigger: "{{ trigger.body.n }}", from_hook: "{{ hook.body.n }}"}}
edges:
  - {from: hook, to: read}
outputs:
  n: "{{ trigger.body.n }}"
`
	file := filepath.Join(b.dir, "hooked.yaml")
	require.NoError(t, os.WriteFile(file, []byte(src), 0o600))
	w, ds := workflow.Load(file, b.reg)
	require.False(t, ds.HasErrors(), "%v", ds)
	run, err := b.starter.Start(context.Background(), queue.StartRequest{RunID: fmt.Sprintf("r%d", time.Now().UnixNano()),
		Workflow: w, Source: []byte(src), Trigger: "hook", Payload: map[string]any{"body": map[string]any{"n": 7}}})
	require.NoError(t, err)
	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	read := b.steps(t, run.ID)["read"]
	require.Len(t, read, 1)
	require.EqualValues(t, 7, read[0].Output["from_hook"], "the trigger node's output")
	require.EqualValues(t, 7, read[0].Output["from_trigger"], "`trigger` is the payload the run started with")
	require.EqualValues(t, 7, done.Outputs["n"], "the run's outputs read `trigger` too")
}

// TestManualTriggerIsTheInputs: a run started by hand on the queue reads
// its inputs as `trigger`, as a local run does.
func TestManualTriggerIsTheInputs(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	run := b.start(t, `version: 1
name: by-hand
inputs:
  who: {type: string}
nodes:
  - {id: start, type: trigger.manual}
  - {id: read, type: set, values: {trigger: "{{ trigger }}", who: "{{ trigger.who }}"}}
edges:
  - {from: start, to: read}
outputs:
  who: "{{ trigger.who }}"
`, map[string]any{"who": "Ada"})
	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	read := b.steps(t, run.ID)["read"]
	require.Len(t, read, 1)
	require.Equal(t, map[string]any{"who": "Ada"}, read[0].Output["trigger"], "`trigger` is the run's inputs")
	require.Equal(t, "Ada", done.Outputs["who"], "the run's outputs read it too")
}

// TestDriverTakesTheClock: what the queue driver records is timed by its
// clock, as the local driver's records are: the run's start and end, its
// steps and its events; and so does an expression's now().
func TestDriverTakesTheClock(t *testing.T) {
	t.Parallel()
	at := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	clk := clock.NewFake(at)
	b := setupWith(t, pgtest.URL(t), 1, func(c *queue.Config) { c.Clock = clk })
	run := b.start(t, `version: 1
name: timed
nodes:
  - {id: start, type: trigger.manual}
  - {id: a, type: set, values: {n: 1, at: "{{ now().Unix() }}"}}
  - {id: b, type: flaky, retries: 1, retry_backoff: 0s, tag: "{{ now().Format('15:04') }}"}
edges:
  - {from: start, to: a}
  - {from: a, to: b}
outputs:
  at: "{{ a.at }} {{ b.worker }} {{ now().Year() }}"
`, nil)
	require.Equal(t, at, run.StartedAt.UTC())
	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	require.Equal(t, fmt.Sprintf("%d 07:08 2031", at.Unix()), done.Outputs["at"], "now() reads the driver's clock in a pure node, an action and the outputs")
	require.Equal(t, at, done.StartedAt.UTC())
	require.NotNil(t, done.FinishedAt)
	require.Equal(t, at, done.FinishedAt.UTC())
	for id, steps := range b.steps(t, run.ID) {
		for _, s := range steps {
			require.NotNil(t, s.StartedAt, id)
			require.Equal(t, at, s.StartedAt.UTC(), "step %s started", id)
			require.NotNil(t, s.FinishedAt, id)
			require.Equal(t, at, s.FinishedAt.UTC(), "step %s finished", id)
		}
	}
	evs, err := b.st.Events(context.Background(), run.ID, 0, 1000)
	require.NoError(t, err)
	require.NotEmpty(t, evs)
	for _, ev := range evs {
		require.Equal(t, at, ev.Time.UTC(), "event %s of %s", ev.Type, ev.Node)
	}
}

// gated blocks the first attempt of a node until the test opens its gate
// (or the attempt's context ends); later attempts succeed at once.
type gated struct{}

// gate is one gated node of one run.
type gate struct {
	started, open chan struct{}
	once          sync.Once
}

// release opens the gate (once).
func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

var gates sync.Map // "run/node" → *gate

func gateOf(runID, nodeID string) *gate {
	v, _ := gates.LoadOrStore(runID+"/"+nodeID, &gate{started: make(chan struct{}), open: make(chan struct{})})
	return v.(*gate)
}

func (gated) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	if c.Attempt > 1 {
		return map[string]any{"attempt": c.Attempt}, nil
	}
	g := gateOf(c.RunID, c.NodeID)
	close(g.started)
	select {
	case <-g.open:
		return map[string]any{"attempt": c.Attempt}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestWorkerLossIsTheLostWorkers: of two workers, the one whose lease ran
// out loses its attempt: it is recorded failed (worker_lost), which takes
// one of the node's retries, and the node runs again and succeeds. The
// other worker's running attempt is untouched, and so is its lease while
// it records the loss (a worker busy recording another's loss must not
// look lost itself).
func TestWorkerLossIsTheLostWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	ctx := context.Background()
	work := func(cfg queue.Config) {
		cfg.Store, cfg.Registry, cfg.FetchPoll = b.st, b.reg, 20*time.Millisecond
		d, err := queue.New(cfg)
		require.NoError(t, err)
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- d.Work(wctx, 10*time.Second) }()
		t.Cleanup(func() { stop(); require.NoError(t, <-done) })
	}
	// lost works queue a; it renews its lease once (its lease is an
	// hour; the test makes it run out). keeper works queue b and the
	// timers, and looks for lost workers every 50 ms.
	// The keeper's lease is long enough that a loaded machine does not
	// make it look lost itself (at 200 ms it did, under -race).
	const lostLease, keeperLease = time.Hour, 3 * time.Second
	work(queue.Config{Queues: map[string]int{"a": 2}, RescueAfter: lostLease, Poll: time.Hour})
	work(queue.Config{Queues: map[string]int{"b": 2, queue.DefaultQueue: 2}, RescueAfter: keeperLease, Poll: 50 * time.Millisecond})

	id := fmt.Sprintf("g%d", time.Now().UnixNano())
	victim, bystander := gateOf(id, "victim"), gateOf(id, "bystander")
	defer victim.release()    // the lost worker's first attempt ends (its result is dropped)
	defer bystander.release() // when the test fails before it does
	run := b.startWith(t, id, `version: 1
name: lost
nodes:
  - {id: victim, type: gated, queue: a, retries: 1, retry_backoff: 0s}
  - {id: bystander, type: gated, queue: b, retries: 3, retry_backoff: 0s}
`, nil)
	recv(t, victim.started, "the first attempt of victim, on the worker to be lost")
	recv(t, bystander.started, "the first attempt of bystander, on the other worker")

	// The run's lock is held, so recording the loss waits.
	lock, err := b.st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }()
	var lockPID int
	require.NoError(t, lock.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&lockPID))
	_, err = lock.Exec(ctx, `SELECT 1 FROM runs WHERE id = $1 FOR UPDATE`, run.ID)
	require.NoError(t, err)

	// The lost worker's lease runs out: its last renewal and its job's
	// start are older than its lease, and the keeper has been connected
	// for longer than it.
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := b.st.Pool().Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	exec(`UPDATE skein_queue_workers SET seen_at = now() - interval '2 hours' WHERE lease_ms = $1`, lostLease.Milliseconds())
	exec(`UPDATE skein_queue_workers SET connected_since = now() - interval '2 hours' WHERE lease_ms = $1`, keeperLease.Milliseconds())
	exec(`UPDATE river_job SET attempted_at = now() - interval '2 hours' WHERE kind = 'skein_task' AND args->>'node' = 'victim'`)

	// The keeper waits for the run's lock to record the loss; meanwhile
	// it renews its lease.
	require.Eventually(t, func() bool {
		var blocked int
		require.NoError(t, b.st.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, lockPID).Scan(&blocked))
		return blocked > 0
	}, 30*time.Second, 10*time.Millisecond, "the keeper never went to record the lost attempt")
	var since time.Time
	require.NoError(t, b.st.Pool().QueryRow(ctx, `SELECT now()`).Scan(&since))
	require.Eventually(t, func() bool {
		var renewed bool
		require.NoError(t, b.st.Pool().QueryRow(ctx, `SELECT seen_at > $1 FROM skein_queue_workers WHERE lease_ms = $2`,
			since, keeperLease.Milliseconds()).Scan(&renewed))
		return renewed
	}, 60*time.Second, 10*time.Millisecond, "the keeper did not renew its lease while it waited to record another worker's loss")
	require.NoError(t, lock.Rollback(ctx))

	// victim's second attempt runs (on the lost worker's queue) and
	// succeeds; then bystander's first attempt ends.
	require.Eventually(t, func() bool {
		s := b.steps(t, run.ID)["victim"]
		return len(s) == 1 && s[0].Status == "success"
	}, 30*time.Second, 10*time.Millisecond, "victim was not run again after its worker was lost")
	bystander.release()
	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)

	steps := b.steps(t, run.ID)
	require.Equal(t, 2, steps["victim"][0].Attempts, "the lost attempt took one retry")
	require.EqualValues(t, 2, steps["victim"][0].Output["attempt"])
	retries := eventsOf(t, b, run.ID, engine.EventRetry, "victim")
	require.Len(t, retries, 1)
	require.Contains(t, retries[0].Data["error"], "stopped answering while it ran attempt 1 of node victim")

	require.Equal(t, "success", string(steps["bystander"][0].Status))
	require.Equal(t, 1, steps["bystander"][0].Attempts, "the other worker's attempt was not counted lost")
	require.EqualValues(t, 1, steps["bystander"][0].Output["attempt"])
	require.Empty(t, eventsOf(t, b, run.ID, engine.EventRetry, "bystander"))
}

// TestLostWorkersUnbegunJobRunsAgain: a job a worker took but whose node
// it never began (it died between the two) is no attempt of the node:
// once the worker is lost, the job goes to another worker and the node
// runs its first attempt there, its retries untouched.
func TestLostWorkersUnbegunJobRunsAgain(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	ctx := context.Background()
	work := func(cfg queue.Config) {
		cfg.Store, cfg.Registry, cfg.FetchPoll, cfg.Poll = b.st, b.reg, 20*time.Millisecond, 50*time.Millisecond
		cfg.RescueAfter = 200 * time.Millisecond
		d, err := queue.New(cfg)
		require.NoError(t, err)
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- d.Work(wctx, 10*time.Second) }()
		t.Cleanup(func() { stop(); require.NoError(t, <-done) })
	}
	work(queue.Config{Queues: map[string]int{queue.DefaultQueue: 1}}) // the keeper: no worker works queue c yet
	run := b.start(t, `version: 1
name: untaken
nodes:
  - {id: once, type: shell, command: [echo, ran], queue: c}
`, nil)
	// A worker, gone since, took the job and began nothing.
	tag, err := b.st.Pool().Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1,
		attempted_by = ARRAY['gone_1_0000'], attempted_at = now() - interval '1 hour'
		WHERE kind = 'skein_task' AND args->>'node' = 'once' AND state = 'available'`)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
	require.Eventually(t, func() bool {
		var state string
		require.NoError(t, b.st.Pool().QueryRow(ctx, `SELECT state FROM river_job WHERE kind = 'skein_task' AND args->>'node' = 'once'`).Scan(&state))
		return state == "available"
	}, 30*time.Second, 10*time.Millisecond, "the lost worker's job was not given out again")
	work(queue.Config{Queues: map[string]int{"c": 1}})

	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	steps := b.steps(t, run.ID)
	require.Equal(t, "success", string(steps["once"][0].Status))
	require.Equal(t, 1, steps["once"][0].Attempts, "no attempt was lost: the node never began")
	require.Empty(t, eventsOf(t, b, run.ID, engine.EventRetry, "once"))
}
