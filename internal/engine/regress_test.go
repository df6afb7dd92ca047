package engine_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
)

// TestSchedulerRegressions holds the cases that caught bugs in the
// scheduler, each driven in the order that showed it.
func TestSchedulerRegressions(t *testing.T) {
	t.Parallel()
	cancelErr := engine.Outcome{Err: &node.Error{Code: "cancelled", Category: node.CategoryCancelled, Message: "context canceled"}}

	t.Run("a run that fails while a foreach item waits for a retry ends", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ [1, 2] }}", concurrency: 2}
  - {id: work, type: act, fail: "{{ loop.item == 1 ? -1 : 1 }}", permanent: "{{ loop.item == 1 }}", retries: 3}
  - {id: eend, type: endloop, loop: each}
`, `
  - {from: start, to: each}
  - {from: each, to: work, on: body}
  - {from: work, to: eend}
`))
		s.start("")
		s.finish("each")
		require.Equal(t, []string{"work", "work"}, s.running())
		// Item 2 fails and waits for its retry; item 1 fails for good.
		t2 := s.tasks[1]
		s.tasks = s.tasks[:1]
		a := s.apply(s.run.Finished(t2.ID, execTask(t2)))
		require.Len(t, a.Timers, 1)
		a = s.finish("work")
		require.True(t, a.Done, "the run ends: the retry timer is dropped\n%s", s.dump())
		require.Equal(t, engine.RunFailed, a.Status)
		require.Equal(t, cancelled, s.last("each").Status, "the foreach step gets a final status")
	})

	t.Run("the first failure is the run's error", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: early, type: act, fail: -1, permanent: true}
  - {id: late, type: act, fail: -1, permanent: true}
`, `
  - {from: start, to: early}
  - {from: start, to: late}
`))
		s.start("")
		s.finish("early")
		a := s.finish("late")
		require.True(t, a.Done)
		require.Equal(t, "node early: early attempt 1 failed", a.Err.Message)
		require.Equal(t, failedSt, s.last("late").Status)
	})

	t.Run("a failure after a cancel leaves the run cancelled", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: a, type: act, fail: -1, permanent: true}
  - {id: b, type: act}
`, `
  - {from: start, to: a}
  - {from: start, to: b}
`))
		s.start("")
		s.apply(s.run.Cancel())
		s.finish("a")
		a := s.finishWith("b", cancelErr)
		require.True(t, a.Done)
		require.Equal(t, engine.RunCancelled, a.Status)
		require.Equal(t, failedSt, s.last("a").Status)
		require.Equal(t, cancelled, s.last("b").Status)
	})

	t.Run("a node holding its successors is cancelled with the run", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: slow, type: act, delay: 60}
  - {id: next, type: act}
`, `
  - {from: start, to: slow}
  - {from: slow, to: next}
`))
		s.start("")
		s.finish("slow")
		require.Equal(t, waiting, s.last("slow").Status)
		a := s.apply(s.run.Cancel())
		require.True(t, a.Done)
		require.Equal(t, engine.RunCancelled, a.Status)
		require.Equal(t, cancelled, s.last("slow").Status)
		require.Equal(t, cancelled, s.last("next").Status, "never started because of the cancel")
	})

	t.Run("a loop whose body fails gets a final status", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: lp, type: loop, exit: "false"}
  - {id: bad, type: act, fail: -1, permanent: true}
  - {id: lend, type: endloop, loop: lp}
`, `
  - {from: start, to: lp}
  - {from: lp, to: bad, on: body}
  - {from: bad, to: lend}
`))
		s.start("")
		s.drain()
		require.Equal(t, engine.RunFailed, s.done.Status)
		require.Equal(t, cancelled, s.last("lp").Status)
		require.Equal(t, skipped, s.last("lend").Status)
	})

	t.Run("a foreach result does not depend on which branch finished last", func(t *testing.T) {
		t.Parallel()
		src := wf(`
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ [1] }}"}
  - {id: a, type: act, out: {from: a}}
  - {id: b, type: act, out: {from: b}}
  - {id: eend, type: endloop, loop: each}
`, `
  - {from: start, to: each}
  - {from: each, to: a, on: body}
  - {from: each, to: b, on: body}
  - {from: a, to: eend}
  - {from: b, to: eend}
`)
		var results []any
		for _, order := range [][]string{{"a", "b"}, {"b", "a"}} {
			s := newSim(t, src)
			s.start("")
			s.finish("each")
			s.finish(order[0])
			s.finish(order[1])
			require.NotNil(t, s.done)
			results = append(results, s.last("each").Output["results"])
		}
		require.Equal(t, results[0], results[1])
		require.Equal(t, []any{map[string]any{"from": "b"}}, results[0], "the last body node in file order")
	})

	t.Run("a back-edge into a node that still runs does not start it twice", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: head, type: act, max_visits: 3}
  - {id: x, type: act}
  - {id: gather, type: merge, wait: any, max_visits: 3}
`, `
  - {from: start, to: head}
  - {from: start, to: x}
  - {from: head, to: gather}
  - {from: x, to: gather}
  - {from: gather, to: head}
`))
		s.start("")
		s.finish("x") // the merge fires and jumps back to head, which runs
		require.Equal(t, []string{"head"}, s.running(), "head runs once")
		require.Len(t, s.eventsOf(engine.EventWarning, "head"), 1)
		s.drain()
		require.Equal(t, engine.RunCompleted, s.done.Status, "%v", s.done.Err)
	})

	t.Run("a node whose visit limit's failure routes back into it ends the run", func(t *testing.T) {
		t.Parallel()
		// An error edge back into the node: a failure tries it again, and
		// the failure of its visit limit went round again, for ever (the
		// scheduler recursed until the process died of a stack overflow).
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: try, type: act, fail: -1, permanent: true, max_visits: 3, on_error: route}
  - {id: after, type: act}
`, `
  - {from: start, to: try}
  - {from: try, to: try, on: error}
  - {from: try, to: after}
`))
		s.start("")
		s.drain()
		require.NotNil(t, s.done)
		require.Equal(t, engine.RunFailed, s.done.Status)
		require.Equal(t, "max_visits", s.done.Err.Code, "%v", s.done.Err)
		require.Len(t, s.statuses("try"), 5, "three tries, the limit's failure routed back, and the arrival after it")
		require.Equal(t, statusList(skipped), s.statuses("after"), "a failure never goes on by the default edge")
	})

	t.Run("a node whose visit limit's failure goes on round a cycle ends the run", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: a, type: act, max_visits: 2, on_error: continue}
  - {id: b, type: act, max_visits: 5}
  - {id: out, type: if, condition: "false", max_visits: 20}
  - {id: after, type: act}
`, `
  - {from: start, to: a}
  - {from: a, to: b}
  - {from: b, to: out}
  - {from: out, to: a, on: "false"}
  - {from: out, to: after, on: "true"}
`))
		s.start("")
		s.drain()
		require.NotNil(t, s.done)
		require.Equal(t, engine.RunFailed, s.done.Status)
		require.Equal(t, "max_visits", s.done.Err.Code, "%v", s.done.Err)
	})

	t.Run("the pending nodes of an item stopped by on_error continue are skipped", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ [1] }}"}
  - {id: work, type: act, fail: -1, permanent: true, on_error: continue}
  - {id: next, type: act}
  - {id: eend, type: endloop, loop: each}
`, `
  - {from: start, to: each}
  - {from: each, to: work, on: body}
  - {from: work, to: next}
  - {from: next, to: eend}
`))
		s.start("")
		s.drain()
		require.Equal(t, engine.RunCompleted, s.done.Status)
		require.Equal(t, statusList(skipped), s.statuses("next"))
		require.Equal(t, statusList(skipped), s.statuses("eend"))
	})

	t.Run("a join that ran on other inputs does not run again when a cycle before it comes round", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: side, type: act}
  - {id: check, type: guardrail, condition: "(vars.fixes ?? 0) >= 1", max_visits: 3}
  - {id: fix, type: set, vars: {fixes: "{{ (vars.fixes ?? 0) + 1 }}"}, max_visits: 3}
  - {id: meet, type: merge, wait: any}
  - {id: after, type: act}
`, `
  - {from: start, to: side}
  - {from: start, to: check}
  - {from: check, to: meet, on: pass}
  - {from: check, to: fix, on: fail}
  - {from: fix, to: check}
  - {from: side, to: meet}
  - {from: meet, to: after}
`))
		s.start("")
		s.finish("side")
		s.finish("after")
		s.drain()
		require.Equal(t, engine.RunCompleted, s.done.Status, "%v", s.done.Err)
		require.Equal(t, statusList(success, success), s.statuses("check"))
		require.Equal(t, statusList(success), s.statuses("meet"))
		require.Equal(t, statusList(success), s.statuses("after"))
	})

	t.Run("a node after a cycle member runs once, when the cycle first reaches it", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: check, type: guardrail, condition: "(vars.fixes ?? 0) >= 2", max_visits: 3}
  - {id: fix, type: set, vars: {fixes: "{{ (vars.fixes ?? 0) + 1 }}"}, max_visits: 3}
  - {id: log, type: act, out: {n: "{{ vars.fixes }}"}}
`, `
  - {from: start, to: check}
  - {from: check, to: fix, on: fail}
  - {from: fix, to: check}
  - {from: fix, to: log}
`))
		s.start("")
		s.drain()
		require.Equal(t, engine.RunCompleted, s.done.Status, "%v", s.done.Err)
		require.Equal(t, statusList(success, success, success), s.statuses("check"))
		require.Equal(t, statusList(success, success, skipped), s.statuses("fix"))
		require.Equal(t, []any{1}, outputsOf(s, "log", "n"))
		require.Equal(t, statusList(success), s.statuses("log"), "a node off the cycle runs at most once per frame")
	})

	t.Run("a failure in a foreach item already stopped by on_error continue does not fail the run", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ [1] }}"}
  - {id: a, type: act, fail: -1, permanent: true, on_error: continue}
  - {id: b, type: act, fail: 1, retries: 1}
  - {id: meet, type: merge}
  - {id: eend, type: endloop, loop: each}
  - {id: after, type: act}
`, `
  - {from: start, to: each}
  - {from: each, to: a, on: body}
  - {from: each, to: b, on: body}
  - {from: a, to: meet}
  - {from: b, to: meet}
  - {from: meet, to: eend}
  - {from: each, to: after, on: done}
`))
		s.start("")
		s.finish("each")
		s.finish("a") // stops the item
		a := s.finish("b")
		require.Empty(t, a.Timers, "no retry in a stopped item")
		s.drain()
		require.Equal(t, engine.RunCompleted, s.done.Status, "%v", s.done.Err)
		require.Equal(t, failedSt, s.last("b").Status)
		require.Equal(t, []any{map[string]any{"success": false, "error": map[string]any{
			"code": "scripted", "category": "execution_failure", "message": "a attempt 1 failed"}}}, s.last("each").Output["results"],
			"the item holds the failure that stopped it (a's), not b's later one")
		require.Equal(t, 1, s.last("each").Output["failed"])
		require.Equal(t, statusList(success), s.statuses("after"))
	})

	t.Run("a retry timer that fires in a stopped foreach item starts nothing", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ [1] }}"}
  - {id: a, type: act, fail: 1, retries: 1}
  - {id: b, type: act, fail: -1, permanent: true, on_error: continue}
  - {id: meet, type: merge}
  - {id: eend, type: endloop, loop: each}
`, `
  - {from: start, to: each}
  - {from: each, to: a, on: body}
  - {from: each, to: b, on: body}
  - {from: a, to: meet}
  - {from: b, to: meet}
  - {from: meet, to: eend}
`))
		s.start("")
		s.finish("each")
		a := s.finish("a")
		require.Len(t, a.Timers, 1, "a waits for its retry")
		s.finish("b") // stops the item
		a = s.fire()
		require.Empty(t, a.Start, "the item has stopped: no retry")
		require.True(t, a.Done)
		require.Equal(t, engine.RunCompleted, a.Status)
		require.Equal(t, failedSt, s.last("a").Status)
	})

	t.Run("a merge with wait any that got an input after the run stopped is cancelled", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: a, type: act, fail: -1, permanent: true, on_error: continue}
  - {id: b, type: act}
  - {id: meet, type: merge, wait: any}
`, `
  - {from: start, to: a}
  - {from: start, to: b}
  - {from: a, to: meet}
  - {from: b, to: meet}
`))
		s.start("")
		s.apply(s.run.Cancel())
		s.finish("a") // continue: the failure flows on to the join
		a := s.finishWith("b", cancelErr)
		require.True(t, a.Done)
		require.Equal(t, engine.RunCancelled, a.Status)
		require.Equal(t, statusList(cancelled), s.statuses("meet"), "pending when the run stopped")
	})

	t.Run("a delay too long for a duration is the longest one", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: slow, type: act, delay: 1000000000000}
`, `
  - {from: start, to: slow}
`))
		s.start("")
		a := s.finish("slow")
		require.Len(t, a.Timers, 1)
		require.Equal(t, time.Duration(math.MaxInt64), a.Timers[0].Delay)
		require.Equal(t, waiting, s.last("slow").Status)
	})
}
