package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/engine"
)

// driverBundle runs a workflow through the local driver on a fake clock.
type driverBundle struct {
	t     *testing.T
	clk   *clock.Fake
	drv   *engine.Driver
	plan  *engine.Plan
	gates *gates
}

func setupDriver(t *testing.T, src string) *driverBundle {
	t.Helper()
	clk := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	return &driverBundle{t: t, clk: clk, drv: engine.NewDriver(testReg, clk, 8), plan: mustPlan(t, src), gates: newGates()}
}

// execute starts the run in a goroutine; the result arrives on the channel.
func (b *driverBundle) execute(ctx context.Context, opts engine.Options) <-chan *engine.Result {
	if opts.RunID == "" {
		opts.RunID = "run-1"
	}
	opts.Services = gatesService.Provide(opts.Services, b.gates)
	out := make(chan *engine.Result, 1)
	go func() {
		res, err := b.drv.Execute(ctx, b.plan, opts)
		if err != nil {
			b.t.Errorf("Execute: %v", err)
		}
		out <- res
	}()
	return out
}

// waitTimer waits until the run has set a timer on the fake clock.
func (b *driverBundle) waitTimer() {
	b.t.Helper()
	for {
		ch := b.clk.WaitForTimer()
		if b.clk.Pending() > 0 {
			return
		}
		select {
		case <-ch:
		case <-time.After(60 * time.Second):
			b.t.Fatal("no timer was set")
		}
	}
}

// started waits until n block nodes have started and returns their ids.
func (b *driverBundle) started(n int) []string {
	b.t.Helper()
	var ids []string
	for range n {
		select {
		case id := <-b.gates.started:
			ids = append(ids, id)
		case <-time.After(60 * time.Second):
			b.t.Fatalf("only %v of %d block nodes started", ids, n)
		}
	}
	return ids
}

func result(t *testing.T, ch <-chan *engine.Result) *engine.Result {
	t.Helper()
	select {
	case res := <-ch:
		require.NotNil(t, res)
		return res
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end")
		return nil
	}
}

func stepsOf(res *engine.Result, id string) []*engine.StepRecord {
	var out []*engine.StepRecord
	for _, s := range res.Steps {
		if s.Node == id {
			out = append(out, s)
		}
	}
	return out
}

// TestDriverRetryBackoff retries a failing node on the fake clock: each
// attempt waits for its backoff and not less.
func TestDriverRetryBackoff(t *testing.T) {
	t.Parallel()
	b := setupDriver(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: work, type: act, fail: 2, retries: 2, retry_backoff: 1s, out: {ok: true}}
  - {id: after, type: act}
`, `
  - {from: start, to: work}
  - {from: work, to: after}
`))
	done := b.execute(context.Background(), engine.Options{})
	for _, base := range []time.Duration{time.Second, 2 * time.Second} {
		b.waitTimer()
		at, ok := b.clk.Next()
		require.True(t, ok)
		wait := at.Sub(b.clk.Now())
		require.GreaterOrEqual(t, wait, base, "the retry waits at least %s", base)
		require.LessOrEqual(t, wait, base+base/5, "and at most %s more", base/5)
		b.clk.Advance(wait)
	}
	res := result(t, done)
	require.Equal(t, engine.RunCompleted, res.Status, "%v", res.Error)
	work := stepsOf(res, "work")
	require.Len(t, work, 1)
	require.Equal(t, engine.StatusSuccess, work[0].Status)
	require.Equal(t, 3, work[0].Attempts)
	require.Equal(t, map[string]any{"ok": true, "success": true}, work[0].Output)
	require.Equal(t, engine.StatusSuccess, stepsOf(res, "after")[0].Status)
}

// TestDriverWait holds the successors of a wait node until the fake clock
// passes its duration.
func TestDriverWait(t *testing.T) {
	t.Parallel()
	b := setupDriver(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: pause, type: wait, duration: 90s}
  - {id: after, type: act}
`, `
  - {from: start, to: pause}
  - {from: pause, to: after}
`))
	done := b.execute(context.Background(), engine.Options{})
	b.waitTimer()
	b.clk.Advance(89 * time.Second)
	require.Equal(t, 1, b.clk.Pending())
	b.clk.Advance(time.Second)
	res := result(t, done)
	require.Equal(t, engine.RunCompleted, res.Status, "%v", res.Error)
	require.Equal(t, int64(90_000), res.DurationMS)
	pause := stepsOf(res, "pause")[0]
	require.Equal(t, engine.StatusSuccess, pause.Status)
	require.EqualValues(t, 90_000, pause.Output["waited_ms"])
	require.Equal(t, engine.StatusSuccess, stepsOf(res, "after")[0].Status)
}

// TestDriverWrittenParams gives a kind its parameters as written next to
// the rendered ones, so it can tell a templated value from a literal one.
func TestDriverWrittenParams(t *testing.T) {
	t.Parallel()
	b := setupDriver(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: w, type: written, value: [git, "--", "{{ '--upload-pack=' + 'x' }}"]}
`, `
  - {from: start, to: w}
`))
	res := result(t, b.execute(context.Background(), engine.Options{}))
	require.Equal(t, engine.RunCompleted, res.Status, "%v", res.Error)
	out := stepsOf(res, "w")[0].Output
	require.Equal(t, []any{"git", "--", "--upload-pack=x"}, out["rendered"])
	require.Equal(t, []any{"git", "--", "{{ '--upload-pack=' + 'x' }}"}, out["written"])
}

const threeBranches = `
  - {id: start, type: trigger.manual}
  - {id: a, type: block, gate: all}
  - {id: b, type: block, gate: all}
  - {id: c, type: block, gate: all}
  - {id: meet, type: merge}
  - {id: after, type: act}
`

const threeBranchEdges = `
  - {from: start, to: a}
  - {from: start, to: b}
  - {from: start, to: c}
  - {from: a, to: meet}
  - {from: b, to: meet}
  - {from: c, to: meet}
  - {from: meet, to: after}
`

// TestDriverCancel cancels a run while three branches run.
func TestDriverCancel(t *testing.T) {
	t.Parallel()
	t.Run("running tasks finish, pending nodes are cancelled", func(t *testing.T) {
		t.Parallel()
		b := setupDriver(t, wf(threeBranches, threeBranchEdges))
		ctx, cancel := context.WithCancel(context.Background())
		done := b.execute(ctx, engine.Options{CancelGrace: time.Hour})
		require.ElementsMatch(t, []string{"a", "b", "c"}, b.started(3))
		cancel()
		b.waitTimer()       // the grace period started: the run took the cancel
		b.gates.open("all") // the running tasks finish within it
		res := result(t, done)
		require.Equal(t, engine.RunCancelled, res.Status)
		require.Equal(t, "cancelled", res.Error.Code)
		for _, id := range []string{"a", "b", "c"} {
			require.Equal(t, engine.StatusSuccess, stepsOf(res, id)[0].Status, id)
		}
		for _, id := range []string{"meet", "after"} {
			st := stepsOf(res, id)[0]
			require.Equal(t, engine.StatusCancelled, st.Status, id)
			require.Nil(t, st.StartedAt, "%s never started", id)
			require.Nil(t, st.RanOn, "%s ran nowhere", id)
		}
	})
	t.Run("after the grace period running tasks are cancelled", func(t *testing.T) {
		t.Parallel()
		b := setupDriver(t, wf(threeBranches, threeBranchEdges))
		ctx, cancel := context.WithCancel(context.Background())
		done := b.execute(ctx, engine.Options{CancelGrace: 30 * time.Second})
		b.started(3)
		cancel()
		b.waitTimer()
		b.clk.Advance(30 * time.Second)
		res := result(t, done)
		require.Equal(t, engine.RunCancelled, res.Status)
		for _, id := range []string{"a", "b", "c"} {
			st := stepsOf(res, id)[0]
			require.Equal(t, engine.StatusCancelled, st.Status, id)
		}
		require.Equal(t, engine.StatusCancelled, stepsOf(res, "meet")[0].Status)
	})
}

// TestDriverFailCancelsRunning fails the run while other branches run: they
// are cancelled and the run fails with the first error.
func TestDriverFailCancelsRunning(t *testing.T) {
	t.Parallel()
	b := setupDriver(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: a, type: block}
  - {id: b, type: block}
  - {id: gate, type: block}
  - {id: boom, type: fail, message: "stop here"}
  - {id: after, type: act}
`, `
  - {from: start, to: a}
  - {from: start, to: b}
  - {from: start, to: gate}
  - {from: gate, to: boom}
  - {from: a, to: after}
`))
	done := b.execute(context.Background(), engine.Options{Concurrency: 3})
	b.started(3)
	// Only gate goes on: a and b wait until the failure cancels them.
	b.gates.open("gate")
	res := result(t, done)
	require.Equal(t, engine.RunFailed, res.Status)
	require.Equal(t, "node boom: stop here", res.Error.Message)
	require.Equal(t, engine.StatusSuccess, stepsOf(res, "gate")[0].Status)
	require.Equal(t, engine.StatusFailed, stepsOf(res, "boom")[0].Status)
	for _, id := range []string{"a", "b"} {
		require.Equal(t, engine.StatusCancelled, stepsOf(res, id)[0].Status, id)
	}
	require.Equal(t, engine.StatusSkipped, stepsOf(res, "after")[0].Status)
}

// TestDriverForEachLoop runs a foreach inside a loop end to end, with
// concurrency, and reads the results.
func TestDriverForEachLoop(t *testing.T) {
	t.Parallel()
	b := setupDriver(t, `
version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: lp, type: loop, exit: "vars.n >= 2", max_iterations: 5}
  - {id: each, type: foreach, items: "{{ [1, 2, 3, 4] }}", concurrency: 3}
  - {id: sq, type: act, out: {v: "{{ loop.item * loop.item }}"}}
  - {id: eend, type: endloop, loop: each}
  - {id: tally, type: set, vars: {n: "{{ (vars.n ?? 0) + 1 }}"}}
  - {id: lend, type: endloop, loop: lp}
edges:
  - {from: start, to: lp}
  - {from: lp, to: each, on: body}
  - {from: each, to: sq, on: body}
  - {from: sq, to: eend}
  - {from: each, to: tally, on: done}
  - {from: tally, to: lend}
outputs:
  squares: "{{ map(each.results, .v) }}"
  n: "{{ vars.n }}"
`)
	res := result(t, b.execute(context.Background(), engine.Options{}))
	require.Equal(t, engine.RunCompleted, res.Status, "%v", res.Error)
	require.Equal(t, []any{1, 4, 9, 16}, res.Outputs["squares"])
	require.Equal(t, 2, res.Outputs["n"])
	require.Len(t, stepsOf(res, "sq"), 8)
}
