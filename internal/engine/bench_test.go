package engine_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
)

// chainSrc is a trigger followed by n no-op nodes in a row.
func chainSrc(n int) string { return chainOf("noop", n) }

// chainOf is a trigger followed by n nodes of kind in a row.
func chainOf(kind string, n int) string {
	var nodes, edges strings.Builder
	nodes.WriteString("  - {id: start, type: trigger.manual}\n")
	prev := "start"
	for i := range n {
		id := fmt.Sprintf("n%d", i)
		fmt.Fprintf(&nodes, "  - {id: %s, type: %s}\n", id, kind)
		fmt.Fprintf(&edges, "  - {from: %s, to: %s}\n", prev, id)
		prev = id
	}
	return wf(nodes.String(), edges.String())
}

// fanSrc is a trigger fanning out to n no-op nodes joined by a merge.
func fanSrc(n int) string { return fanOf("noop", n) }

// fanOf is a trigger fanning out to n nodes of kind joined by a merge.
func fanOf(kind string, n int) string {
	var nodes, edges strings.Builder
	fmt.Fprintf(&nodes, "  - {id: start, type: trigger.manual}\n  - {id: meet, type: merge}\n  - {id: end, type: %s}\n", kind)
	edges.WriteString("  - {from: meet, to: end}\n")
	for i := range n {
		id := fmt.Sprintf("n%d", i)
		fmt.Fprintf(&nodes, "  - {id: %s, type: %s}\n", id, kind)
		fmt.Fprintf(&edges, "  - {from: start, to: %s}\n  - {from: %s, to: meet}\n", id, id)
	}
	return wf(nodes.String(), edges.String())
}

// loopSrc is a loop whose body (one no-op node) runs n times.
func loopSrc(n int) string {
	return wf(fmt.Sprintf(`
  - {id: start, type: trigger.manual}
  - {id: lp, type: loop, max_iterations: %d}
  - {id: body, type: noop}
  - {id: lend, type: endloop, loop: lp}
  - {id: end, type: noop}
`, n), `
  - {from: start, to: lp}
  - {from: lp, to: body, on: body}
  - {from: body, to: lend}
  - {from: lp, to: end, on: done}
`)
}

// foreachSrc is a foreach over n items, all at once, each a no-op node.
func foreachSrc(n int) string {
	return wf(fmt.Sprintf(`
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ [] }}", concurrency: %d}
  - {id: body, type: noop}
  - {id: eend, type: endloop, loop: each}
`, n), `
  - {from: start, to: each}
  - {from: each, to: body, on: body}
  - {from: body, to: eend}
`)
}

var (
	noop     = engine.Outcome{Output: map[string]any{}}
	toBody   = engine.Outcome{Output: map[string]any{}, Directives: map[string]any{"_route": "body"}}
	benchCtx = context.Background()
)

// runPure runs a plan on the pure scheduler, finishing tasks oldest first:
// no-op nodes succeed, loops always ask for another pass (max_iterations
// ends them), a foreach gets items. It returns how many tasks ran.
func runPure(tb testing.TB, p *engine.Plan, items []any) int {
	r := engine.NewRun(p, "bench")
	starts, err := p.StartNodes("")
	if err != nil {
		tb.Fatal(err)
	}
	a := r.Start(starts, nil)
	queue := append([]*engine.Task(nil), a.Start...)
	n := 0
	for len(queue) > 0 {
		t := queue[0]
		queue = queue[1:]
		n++
		oc := noop
		switch t.Node.Type {
		case "loop":
			oc = toBody
		case "foreach":
			oc = engine.Outcome{Output: map[string]any{"items": items}}
		}
		a = r.Finished(t.ID, oc)
		queue = append(queue, a.Start...)
	}
	if !r.Ended() {
		tb.Fatal("the run did not end")
	}
	return n
}

func benchPure(b *testing.B, src string, items []any) {
	p := mustPlan(b, src)
	nodes := runPure(b, p, items)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		runPure(b, p, items)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nodes), "ns/node")
}

func benchDriver(b *testing.B, src string, nodes int) {
	p := mustPlan(b, src)
	d := engine.NewDriver(testReg, nil, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := d.Execute(benchCtx, p, engine.Options{RunID: "bench"})
		if err != nil || res.Status != engine.RunCompleted {
			b.Fatalf("run: %v %v", err, res.Error)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nodes), "ns/node")
}

// BenchmarkChain400 runs a chain of 400 no-op nodes: on the scheduler alone
// (the engine's own overhead) and through the local driver, where
// driver-pure's nodes are of a kind declared pure (calc).
func BenchmarkChain400(b *testing.B) {
	b.Run("scheduler", func(b *testing.B) { benchPure(b, chainSrc(400), nil) })
	b.Run("driver", func(b *testing.B) { benchDriver(b, chainSrc(400), 400) })
	b.Run("driver-pure", func(b *testing.B) { benchDriver(b, chainOf("calc", 400), 400) })
}

// BenchmarkFanOutFanIn1000 fans out to 1,000 no-op nodes and joins them.
func BenchmarkFanOutFanIn1000(b *testing.B) {
	b.Run("scheduler", func(b *testing.B) { benchPure(b, fanSrc(1000), nil) })
	b.Run("driver", func(b *testing.B) { benchDriver(b, fanSrc(1000), 1001) })
	b.Run("driver-pure", func(b *testing.B) { benchDriver(b, fanOf("calc", 1000), 1001) })
}

// BenchmarkForEachDriver runs a foreach over n items, one at a time, each
// a node of a kind declared pure, through the local driver (ns/node is
// per item).
func BenchmarkForEachDriver(b *testing.B) {
	for _, n := range []int{1000, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			benchDriver(b, wf(fmt.Sprintf(`
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ 1..%d }}"}
  - {id: body, type: calc, item: "{{ loop.item }}"}
  - {id: eend, type: endloop, loop: each}
`, n), `
  - {from: start, to: each}
  - {from: each, to: body, on: body}
  - {from: body, to: eend}
`), n)
		})
	}
}

// BenchmarkLoopDriver1000 runs a loop of 1,000 passes, each a node of a
// kind declared pure, through the local driver (ns/node is per pass).
func BenchmarkLoopDriver1000(b *testing.B) {
	benchDriver(b, wf(`
  - {id: start, type: trigger.manual}
  - {id: lp, type: loop, max_iterations: 1000}
  - {id: body, type: calc}
  - {id: lend, type: endloop, loop: lp}
`, `
  - {from: start, to: lp}
  - {from: lp, to: body, on: body}
  - {from: body, to: lend}
`), 1000)
}

// BenchmarkLoop10000 runs a loop body 10,000 times on the scheduler (a
// node here is one task: a loop evaluation or a body pass).
func BenchmarkLoop10000(b *testing.B) {
	benchPure(b, loopSrc(10_000), nil)
}

// BenchmarkForEach1000 runs 1,000 foreach items at once on the scheduler.
func BenchmarkForEach1000(b *testing.B) {
	items := make([]any, 1000)
	for i := range items {
		items[i] = i
	}
	benchPure(b, foreachSrc(1000), items)
}

// BenchmarkConcurrentRuns200 runs 200 runs of a 10-node chain at once
// through one driver.
func BenchmarkConcurrentRuns200(b *testing.B) {
	p := mustPlan(b, chainSrc(10))
	d := engine.NewDriver(testReg, nil, 64)
	const runs = 200
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make(chan error, runs)
		for i := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := d.Execute(benchCtx, p, engine.Options{RunID: fmt.Sprintf("run-%d", i)})
				if err == nil && res.Status != engine.RunCompleted {
					err = fmt.Errorf("run ended %s: %v", res.Status, res.Error)
				}
				if err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*runs), "ns/run")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*runs*10), "ns/node")
}

// BenchmarkNewPlan400 plans the 400-node chain.
func BenchmarkNewPlan400(b *testing.B) {
	w := mustPlan(b, chainSrc(400)).W
	b.ReportAllocs()
	for b.Loop() {
		if _, err := engine.NewPlan(w, testReg); err != nil {
			b.Fatal(err)
		}
	}
}

// pendingBytes starts a run that leaves n steps running and returns the
// heap the scheduler holds per running step.
func pendingBytes(tb testing.TB, src string, items []any, n int) float64 {
	p := mustPlan(tb, src)
	starts, err := p.StartNodes("")
	require.NoError(tb, err)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := engine.NewRun(p, "mem")
	a := r.Start(starts, nil)
	if len(a.Start) == 1 && a.Start[0].Node.Type == "foreach" {
		a = r.Finished(a.Start[0].ID, engine.Outcome{Output: map[string]any{"items": items}})
	}
	require.Len(tb, a.Start, n)
	a = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(r)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// TestSchedulerMemoryPerPendingStep checks that the scheduler holds at most
// 2 KiB per pending step, for steps side by side and for foreach items each
// in its own frame.
func TestSchedulerMemoryPerPendingStep(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	items := make([]any, 5000)
	for i := range items {
		items[i] = i
	}
	fan := pendingBytes(t, fanSrc(5000), nil, 5000)
	each := pendingBytes(t, foreachSrc(5000), items, 5000)
	t.Logf("scheduler memory per pending step: fan-out %.0f B, foreach %.0f B", fan, each)
	require.LessOrEqual(t, fan, 2048.0)
	require.LessOrEqual(t, each, 2048.0)
}

// BenchmarkPendingStepMemory reports the scheduler's heap per pending step.
func BenchmarkPendingStepMemory(b *testing.B) {
	items := make([]any, 5000)
	for i := range items {
		items[i] = i
	}
	var fan, each float64
	for b.Loop() {
		fan = pendingBytes(b, fanSrc(5000), nil, 5000)
		each = pendingBytes(b, foreachSrc(5000), items, 5000)
	}
	b.ReportMetric(fan, "B/step-fanout")
	b.ReportMetric(each, "B/step-foreach")
}
