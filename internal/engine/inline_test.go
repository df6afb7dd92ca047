package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
)

// TestPureKindsRunAsBefore: tasks of pure kinds run on the driver's loop
// goroutine; each workflow gives the same steps, events and outputs as
// with no kind declared pure (every task in a goroutine of its own).
func TestPureKindsRunAsBefore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		nodes  string
		edges  string
		status engine.RunStatus
	}{
		{
			name: "branches, data and a join",
			nodes: `
  - {id: start, type: trigger.manual}
  - {id: a, type: set, values: {x: 2}, vars: {seen: "{{ 1 }}"}}
  - {id: pick, type: if, condition: "a.x > 1"}
  - {id: yes, type: template, text: "x is {{ a.x }}"}
  - {id: no, type: set, values: {y: 0}}
  - {id: sw, type: switch, cases: [{name: big, condition: "a.x > 1"}]}
  - {id: big, type: calc, item: "{{ a.x * 10 }}"}
  - {id: small, type: calc, item: 0}
  - {id: meet, type: merge}
  - {id: last, type: act, out: {done: "{{ big.item }}"}}
`,
			edges: `
  - {from: start, to: a}
  - {from: a, to: pick}
  - {from: pick, to: yes, on: "true"}
  - {from: pick, to: no, on: "false"}
  - {from: a, to: sw}
  - {from: sw, to: big, on: big}
  - {from: sw, to: small, on: default}
  - {from: yes, to: meet}
  - {from: big, to: meet}
  - {from: meet, to: last}
`,
			status: engine.RunCompleted,
		},
		{
			name: "a foreach and a loop",
			nodes: `
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ 1..25 }}", concurrency: 3}
  - {id: item, type: calc, item: "{{ loop.item * 2 }}"}
  - {id: eend, type: endloop, loop: each}
  - {id: lp, type: loop, exit: "vars.n >= 7", max_iterations: 50}
  - {id: body, type: set, vars: {n: "{{ (vars.n ?? 0) + 1 }}"}}
  - {id: lend, type: endloop, loop: lp}
  - {id: done, type: template, text: "{{ len(each.results) }} items, {{ vars.n }} passes"}
`,
			edges: `
  - {from: start, to: each}
  - {from: each, to: item, on: body}
  - {from: item, to: eend}
  - {from: each, to: lp, on: done}
  - {from: lp, to: body, on: body}
  - {from: body, to: lend}
  - {from: lp, to: done, on: done}
`,
			status: engine.RunCompleted,
		},
		{
			name: "a template that fails, routed, and a fail node",
			nodes: `
  - {id: start, type: trigger.manual}
  - {id: bad, type: template, text: "{{ start.nothing.here }}", on_error: route}
  - {id: fix, type: set, values: {fixed: true}}
  - {id: stop, type: fail, message: "stopped after {{ fix.fixed }}"}
  - {id: never, type: calc, item: 1}
`,
			edges: `
  - {from: start, to: bad}
  - {from: bad, to: fix, on: error}
  - {from: bad, to: never}
  - {from: fix, to: stop}
`,
			status: engine.RunFailed,
		},
		{
			name: "a pure node that panics",
			nodes: `
  - {id: start, type: trigger.manual}
  - {id: boom, type: calc, panic: true}
`,
			edges: `
  - {from: start, to: boom}
`,
			status: engine.RunFailed,
		},
	}
	run := func(t *testing.T, reg *node.Registry, src string) (*engine.Result, []string) {
		t.Helper()
		p := mustPlanWith(t, reg, src)
		log := &eventLog{}
		res, err := engine.NewDriver(reg, nil, 8).Execute(context.Background(), p, engine.Options{RunID: "r", Host: engine.Host{Recorder: log}})
		require.NoError(t, err)
		var evs []string
		for _, ev := range log.events {
			evs = append(evs, fmt.Sprintf("%s %s/%d/%d %v", ev.Type, ev.Node, ev.Visit, ev.Iteration, ev.Data))
		}
		slices.Sort(evs) // parallel branches end in any order
		return res, evs
	}
	impure := impureRegistry(testReg)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := wf(tc.nodes, tc.edges)
			got, gotEvents := run(t, testReg, src)
			want, wantEvents := run(t, impure, src)
			require.Equal(t, tc.status, got.Status, "run error: %v", got.Error)
			require.Equal(t, want.Status, got.Status)
			require.Equal(t, want.Error, got.Error)
			require.Equal(t, want.Outputs, got.Outputs)
			require.Equal(t, wantEvents, gotEvents, "the events, sorted")
			require.Equal(t, stepSummary(want), stepSummary(got), "the steps, by node and visit")
		})
	}
}

// stepSummary is what a user reads of a result's steps, sorted by node,
// visit and iteration (times left out).
func stepSummary(res *engine.Result) []string {
	var out []string
	for _, s := range res.Steps {
		code := ""
		if s.Error != nil {
			code = s.Error.Code + ": " + s.Error.Message
		}
		out = append(out, fmt.Sprintf("%s/%d/%d %s attempts=%d out=%v err=%s skip=%s", s.Node, s.Visit, s.Iteration,
			s.Status, s.Attempts, s.Output, code, s.SkipReason))
	}
	slices.Sort(out)
	return out
}

// TestPurePanicIsAFailure: a pure node that panics, running on the
// driver's loop, fails its step as a crashed node; the run goes on to
// fail as before.
func TestPurePanicIsAFailure(t *testing.T) {
	t.Parallel()
	b := setupDriver(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: boom, type: calc, panic: true}
`, `
  - {from: start, to: boom}
`))
	res := result(t, b.execute(context.Background(), engine.Options{}))
	require.Equal(t, engine.RunFailed, res.Status)
	steps := stepsOf(res, "boom")
	require.Len(t, steps, 1)
	require.Equal(t, failedSt, steps[0].Status)
	require.Equal(t, "panic", steps[0].Error.Code)
	require.Equal(t, node.CategoryInternal, steps[0].Error.Category)
	require.Contains(t, steps[0].Error.Message, "node boom crashed: calc was asked to panic")
}

// bigForEach is a foreach over 10,000 items, one at a time, each a calc
// node, and a block node on a branch of its own.
const bigForEach = `
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ 1..10000 }}"}
  - {id: item, type: calc, item: "{{ loop.item }}"}
  - {id: eend, type: endloop, loop: each}
  - {id: side, type: block}
  - {id: stop, type: fail, message: the other branch ended first}
`

// TestPureForEachYields: a foreach of 10,000 pure items runs on the
// driver's loop, but not all at once: a cancel, and the end of a node on
// another branch, are acted on while it runs.
func TestPureForEachYields(t *testing.T) {
	t.Parallel()
	items := func(res *engine.Result) int {
		n := 0
		for _, s := range stepsOf(res, "item") {
			if s.Status == success {
				n++
			}
		}
		return n
	}
	t.Run("a cancel", func(t *testing.T) {
		t.Parallel()
		b := setupDriver(t, wf(bigForEach, `
  - {from: start, to: each}
  - {from: each, to: item, on: body}
  - {from: item, to: eend}
`))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		hook := func(c *node.Call) {
			if c.Params["item"] == 10 {
				cancel()
			}
		}
		res := result(t, b.execute(ctx, engine.Options{Host: engine.Host{Services: calcHook.Provide(nil, hook)}}))
		require.Equal(t, engine.RunCancelled, res.Status)
		require.Less(t, items(res), 10_000, "items that ran after the cancel")
	})
	t.Run("another branch", func(t *testing.T) {
		t.Parallel()
		b := setupDriver(t, wf(bigForEach, `
  - {from: start, to: each}
  - {from: each, to: item, on: body}
  - {from: item, to: eend}
  - {from: start, to: side}
  - {from: side, to: stop}
`))
		hook := func(c *node.Call) {
			if c.Params["item"] == 10 {
				b.gates.open("side")
			}
		}
		res := result(t, b.execute(context.Background(), engine.Options{Host: engine.Host{Services: calcHook.Provide(nil, hook)}}))
		require.Equal(t, engine.RunFailed, res.Status)
		require.True(t, strings.Contains(res.Error.Message, "the other branch ended first"), res.Error.Message)
		require.Less(t, items(res), 10_000, "items that ran after the other branch failed the run")
	})
}

// TestPureWithEvidenceRunsOffTheLoop: the evidence of a pure node with
// expect: is captured by a call that may take a while (a screenshot), so
// that node runs in a goroutine: a pure node on another branch runs on
// the loop meanwhile.
func TestPureWithEvidenceRunsOffTheLoop(t *testing.T) {
	t.Parallel()
	b := setupDriver(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: shown, type: calc, item: 1, expect: "item is 1"}
  - {id: other, type: calc, item: 2}
`, `
  - {from: start, to: shown}
  - {from: start, to: other}
`))
	otherRan := make(chan struct{})
	hook := func(c *node.Call) {
		if c.NodeID == "other" {
			close(otherRan)
		}
	}
	evidence := func(ctx context.Context, nodeID, _ string) {
		<-otherRan // on the loop, this would wait for ever
	}
	res := result(t, b.execute(context.Background(), engine.Options{Host: engine.Host{
		Services: calcHook.Provide(nil, hook), Evidence: evidence, ArtifactDir: func(string) string { return t.TempDir() }}}))
	require.Equal(t, engine.RunCompleted, res.Status, "run error: %v", res.Error)
}

// TestIdempotencyKeyIsRunNodeVisit: a node's call carries the key its
// kind may pass on (the http kind's Idempotency-Key header): run/node/visit,
// the same for every attempt of a visit.
func TestIdempotencyKeyIsRunNodeVisit(t *testing.T) {
	t.Parallel()
	b := setupDriver(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: c, type: calc, item: 1}
`, `
  - {from: start, to: c}
`))
	var keys []string
	hook := func(c *node.Call) { keys = append(keys, c.IdempotencyKey) }
	res := result(t, b.execute(context.Background(), engine.Options{RunID: "run-7", Host: engine.Host{Services: calcHook.Provide(nil, hook)}}))
	require.Equal(t, engine.RunCompleted, res.Status)
	require.Equal(t, []string{"run-7/c/1"}, keys)
}

// countingRecorder counts the steps recorded and the flushes that hand
// them on, and the steps each flush handed on.
type countingRecorder struct {
	mu              sync.Mutex
	steps, pending  int
	flushes, handed int
}

func (r *countingRecorder) Step(*engine.StepRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps++
	r.pending++
	return nil
}

func (r *countingRecorder) Event(engine.TimedEvent) error { return nil }

func (r *countingRecorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushes++
	r.handed += r.pending
	r.pending = 0
	return nil
}

// The pure tasks the loop runs in a batch hand their records to the
// recorder once, at the batch's end: a chain of 160 `set` nodes is
// flushed about once a batch, not once a node, and every record is
// handed on by the run's end.
func TestPureBatchFlushesOnce(t *testing.T) {
	t.Parallel()
	const n = 160
	var nodes, edges strings.Builder
	nodes.WriteString("\n  - {id: start, type: trigger.manual}\n")
	edges.WriteString("\n  - {from: start, to: n0}\n")
	for i := range n {
		fmt.Fprintf(&nodes, "  - {id: n%d, type: set, values: {i: %d}}\n", i, i)
		if i > 0 {
			fmt.Fprintf(&edges, "  - {from: n%d, to: n%d}\n", i-1, i)
		}
	}
	b := setupDriver(t, wf(nodes.String(), edges.String()))
	rec := &countingRecorder{}
	res := result(t, b.execute(context.Background(), engine.Options{Host: engine.Host{Recorder: rec}}))
	require.Equal(t, engine.RunCompleted, res.Status)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Equal(t, rec.steps, rec.handed, "every record is handed on")
	require.GreaterOrEqual(t, rec.steps, n+1)
	require.LessOrEqual(t, rec.flushes, n/16+8, "one flush a batch of 16 pure tasks, not one a task")
}
