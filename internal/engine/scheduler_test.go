package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
)

// wf makes a workflow file from its nodes and edges (YAML list items).
func wf(nodes, edges string) string {
	return "version: 1\nname: t\nnodes:\n" + nodes + "edges:\n" + edges
}

const (
	success   = engine.StatusSuccess
	skipped   = engine.StatusSkipped
	failedSt  = engine.StatusFailed
	cancelled = engine.StatusCancelled
	waiting   = engine.StatusWaiting
	runningSt = engine.StatusRunning
)

func statusList(ss ...engine.Status) []engine.Status { return ss }

// TestSchedulerRules drives the pure scheduler through each rule of DESIGN
// §2, finishing tasks oldest first with their real kinds unless a case
// drives it by hand.
func TestSchedulerRules(t *testing.T) {
	t.Parallel()
	type tc struct {
		name  string
		src   string
		drive func(t *testing.T, s *sim) // nil: start and drain
		check func(t *testing.T, s *sim)
	}
	cases := []tc{
		{
			name: "join after if runs once with the taken branch",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: cond, type: if, condition: "1 < 2"}
  - {id: yes, type: act, out: {branch: yes}}
  - {id: no, type: act, out: {branch: no}}
  - {id: meet, type: merge}
  - {id: after, type: act, out: {got: "{{ yes.branch ?? no.branch }}"}}
`, `
  - {from: start, to: cond}
  - {from: cond, to: yes, on: "true"}
  - {from: cond, to: no, on: "false"}
  - {from: yes, to: meet}
  - {from: no, to: meet}
  - {from: meet, to: after}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, statusList(success), s.statuses("yes"))
				require.Equal(t, statusList(skipped), s.statuses("no"))
				require.Equal(t, statusList(success), s.statuses("meet"))
				require.Equal(t, statusList(success), s.statuses("after"))
				require.Equal(t, "yes", s.last("after").Output["got"])
				require.Len(t, s.eventsOf(engine.EventBranchEvaluated, "cond"), 1)
			},
		},
		{
			name: "join after if with no edge for the false branch does not hang",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: side, type: act}
  - {id: cond, type: if, condition: "1 > 2"}
  - {id: yes, type: act}
  - {id: meet, type: merge}
  - {id: after, type: act}
`, `
  - {from: start, to: cond}
  - {from: start, to: side}
  - {from: cond, to: yes, on: "true"}
  - {from: yes, to: meet}
  - {from: side, to: meet}
  - {from: meet, to: after}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, statusList(skipped), s.statuses("yes"))
				require.Equal(t, statusList(success), s.statuses("meet"), "side fired, so the join runs")
				require.Equal(t, statusList(success), s.statuses("after"))
			},
		},
		{
			name: "every input of a join dead skips it and what follows",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: cond, type: if, condition: "false"}
  - {id: a, type: act}
  - {id: b, type: act}
  - {id: meet, type: merge, wait: any}
  - {id: after, type: act}
`, `
  - {from: start, to: cond}
  - {from: cond, to: a, on: "true"}
  - {from: cond, to: b, on: "true"}
  - {from: a, to: meet}
  - {from: b, to: meet}
  - {from: meet, to: after}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				for _, id := range []string{"a", "b", "meet", "after"} {
					require.Equal(t, statusList(skipped), s.statuses(id), id)
				}
			},
		},
		{
			name: "nested loops reset the inner counter on each outer pass",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: outer, type: loop, exit: "false", max_iterations: 3}
  - {id: inner, type: loop, exit: "false", max_iterations: 2}
  - {id: work, type: act, out: {outer: "{{ vars.o ?? 0 }}"}}
  - {id: iend, type: endloop, loop: inner}
  - {id: tally, type: set, vars: {o: "{{ (vars.o ?? 0) + 1 }}"}}
  - {id: oend, type: endloop, loop: outer}
  - {id: after, type: act}
`, `
  - {from: start, to: outer}
  - {from: outer, to: inner, on: body}
  - {from: inner, to: work, on: body}
  - {from: work, to: iend}
  - {from: inner, to: tally, on: done}
  - {from: tally, to: oend}
  - {from: outer, to: after, on: done}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, 6, s.count("work", success), "2 inner passes × 3 outer passes")
				require.Equal(t, 3, s.count("inner", success), "the inner loop finishes once per outer pass")
				require.Equal(t, 3, s.count("tally", success))
				require.Equal(t, 3, s.run.Vars()["o"])
				for _, st := range s.sortedSteps("inner") {
					require.Equal(t, 2, st.Output["iterations"], "a fresh counter each outer pass")
				}
				require.Equal(t, 3, s.last("outer").Output["iterations"])
				require.Equal(t, statusList(success), s.statuses("after"))
				// Iterations are the innermost pass.
				var its []int
				for _, st := range s.sortedSteps("work") {
					its = append(its, st.Iteration)
				}
				require.Equal(t, []int{0, 1, 0, 1, 0, 1}, its)
			},
		},
		{
			name: "foreach inside a loop runs every item on every pass",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: lp, type: loop, exit: "false", max_iterations: 2}
  - {id: each, type: foreach, items: "{{ [1, 2, 3] }}", concurrency: 2}
  - {id: dbl, type: act, out: {v: "{{ loop.item * 2 }}"}}
  - {id: eend, type: endloop, loop: each}
  - {id: lend, type: endloop, loop: lp}
  - {id: after, type: act, out: {last: "{{ each.results }}"}}
`, `
  - {from: start, to: lp}
  - {from: lp, to: each, on: body}
  - {from: each, to: dbl, on: body}
  - {from: dbl, to: eend}
  - {from: each, to: lend, on: done}
  - {from: lp, to: after, on: done}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, 6, s.count("dbl", success))
				require.Equal(t, 2, s.count("each", success))
				for _, st := range s.sortedSteps("each") {
					require.Equal(t, []any{map[string]any{"v": 2}, map[string]any{"v": 4}, map[string]any{"v": 6}}, st.Output["results"])
				}
				require.Equal(t, statusList(success), s.statuses("after"))
			},
		},
		{
			name: "guardrail cycle fails twice then passes, and the join after it runs once",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: side, type: act}
  - {id: check, type: guardrail, condition: "(vars.fixes ?? 0) >= 2", max_visits: 3}
  - {id: fix, type: set, vars: {fixes: "{{ (vars.fixes ?? 0) + 1 }}"}, max_visits: 3}
  - {id: good, type: act}
  - {id: meet, type: merge}
  - {id: after, type: act}
`, `
  - {from: start, to: check}
  - {from: start, to: side}
  - {from: check, to: good, on: pass}
  - {from: check, to: fix, on: fail}
  - {from: fix, to: check}
  - {from: good, to: meet}
  - {from: side, to: meet}
  - {from: meet, to: after}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status, "%v", s.done.Err)
				require.Equal(t, statusList(success, success, success), s.statuses("check"))
				require.Equal(t, []any{false, false, true}, outputsOf(s, "check", "passed"))
				require.Equal(t, statusList(success, success, skipped), s.statuses("fix"))
				require.Equal(t, statusList(success), s.statuses("good"))
				require.Equal(t, statusList(success), s.statuses("meet"), "the join waits for the cycle to end")
				require.Equal(t, statusList(success), s.statuses("after"))
				require.Equal(t, 2, s.run.Vars()["fixes"])
			},
		},
		{
			name: "a cycle that reaches max_visits fails the node with a clear message",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: check, type: guardrail, condition: "false", max_visits: 3}
  - {id: fix, type: act, max_visits: 3}
  - {id: good, type: act}
`, `
  - {from: start, to: check}
  - {from: check, to: good, on: pass}
  - {from: check, to: fix, on: fail}
  - {from: fix, to: check}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunFailed, s.done.Status)
				require.Equal(t, "max_visits", s.done.Err.Code)
				require.Contains(t, s.done.Err.Message, `node "check" reached its visit limit (max_visits: 3)`)
				require.Equal(t, statusList(success, success, success, failedSt), s.statuses("check"))
				require.Equal(t, 3, s.count("fix", success))
				require.Equal(t, statusList(skipped), s.statuses("good"))
			},
		},
		{
			name: "a disabled loop follows done",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: lp, type: loop, exit: "false", disabled: true}
  - {id: body, type: act}
  - {id: lend, type: endloop, loop: lp}
  - {id: after, type: act}
`, `
  - {from: start, to: lp}
  - {from: lp, to: body, on: body}
  - {from: body, to: lend}
  - {from: lp, to: after, on: done}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, statusList(skipped), s.statuses("lp"))
				require.Empty(t, s.statuses("body"))
				require.Equal(t, statusList(success), s.statuses("after"))
			},
		},
		{
			name: "disabled nodes fall through their default handles",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: act1, type: act, disabled: true}
  - {id: cond, type: if, condition: "true", disabled: true}
  - {id: t, type: act}
  - {id: f, type: act}
  - {id: sw, type: switch, cases: [{name: one, condition: "true"}], disabled: true}
  - {id: case_one, type: act}
  - {id: dflt, type: act}
  - {id: gr, type: guardrail, condition: "false", disabled: true}
  - {id: pass, type: act}
  - {id: fail, type: act}
  - {id: each, type: foreach, items: "{{ [1] }}", disabled: true}
  - {id: eb, type: act}
  - {id: eend, type: endloop, loop: each}
  - {id: edone, type: act}
`, `
  - {from: start, to: act1}
  - {from: act1, to: cond}
  - {from: cond, to: t, on: "true"}
  - {from: cond, to: f, on: "false"}
  - {from: f, to: sw}
  - {from: sw, to: case_one, on: one}
  - {from: sw, to: dflt, on: default}
  - {from: dflt, to: gr}
  - {from: gr, to: pass, on: pass}
  - {from: gr, to: fail, on: fail}
  - {from: pass, to: each}
  - {from: each, to: eb, on: body}
  - {from: eb, to: eend}
  - {from: each, to: edone, on: done}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				for _, id := range []string{"act1", "cond", "sw", "gr", "each", "t", "case_one", "fail"} {
					require.Equal(t, statusList(skipped), s.statuses(id), id)
				}
				for _, id := range []string{"f", "dflt", "pass", "edone"} {
					require.Equal(t, statusList(success), s.statuses(id), id)
				}
				require.Empty(t, s.statuses("eb"))
			},
		},
		{
			name: "on_error route inside a foreach follows error for that item",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ [1, 2, 3] }}"}
  - {id: work, type: act, fail: "{{ loop.item == 2 ? -1 : 0 }}", permanent: true, on_error: route, out: {ok: "{{ loop.item }}"}}
  - {id: handle, type: act, out: {handled: "{{ loop.item }}"}}
  - {id: eend, type: endloop, loop: each}
  - {id: after, type: act}
`, `
  - {from: start, to: each}
  - {from: each, to: work, on: body}
  - {from: work, to: eend}
  - {from: work, to: handle, on: error}
  - {from: handle, to: eend}
  - {from: each, to: after, on: done}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, statusList(success, failedSt, success), s.statuses("work"))
				require.Equal(t, statusList(skipped, success, skipped), s.statuses("handle"))
				require.Equal(t, []any{map[string]any{"ok": 1}, map[string]any{"handled": 2}, map[string]any{"ok": 3}}, s.last("each").Output["results"])
				require.Equal(t, statusList(success), s.statuses("after"))
			},
		},
		{
			name: "on_error continue inside a foreach moves to the next item",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ [1, 2, 3] }}"}
  - {id: work, type: act, fail: "{{ loop.item == 2 ? -1 : 0 }}", permanent: true, on_error: continue, out: {v: "{{ loop.item }}"}}
  - {id: next, type: act, out: {v: "{{ work.v * 10 }}"}}
  - {id: eend, type: endloop, loop: each}
  - {id: after, type: act}
`, `
  - {from: start, to: each}
  - {from: each, to: work, on: body}
  - {from: work, to: next}
  - {from: next, to: eend}
  - {from: each, to: after, on: done}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, statusList(success, failedSt, success), s.statuses("work"))
				require.Equal(t, 2, s.count("next", success), "the failed item stops; the others go on")
				results := s.last("each").Output["results"].([]any)
				require.Equal(t, map[string]any{"v": 10}, results[0])
				require.Equal(t, false, results[1].(map[string]any)["success"], "the failed item keeps its outcome in its place")
				require.Equal(t, map[string]any{"v": 30}, results[2])
				require.Equal(t, 1, s.last("each").Output["failed"])
				require.Equal(t, statusList(success), s.statuses("after"))
			},
		},
		{
			name: "on_error continue outside a foreach goes on with success false",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: work, type: act, fail: -1, permanent: true, on_error: continue}
  - {id: next, type: act, out: {saw: "{{ work.success }}", err: "{{ work.error }}"}}
`, `
  - {from: start, to: work}
  - {from: work, to: next}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, false, s.last("next").Output["saw"])
				require.Equal(t, "work attempt 1 failed", s.last("next").Output["err"])
			},
		},
		{
			name: "_route from an action node picks the edge",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: pick, type: act, route: b}
  - {id: a, type: act}
  - {id: b, type: act}
  - {id: plain, type: act}
`, `
  - {from: start, to: pick}
  - {from: pick, to: a, on: a}
  - {from: pick, to: b, on: b}
  - {from: pick, to: plain}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, statusList(skipped), s.statuses("a"))
				require.Equal(t, statusList(success), s.statuses("b"))
				require.Equal(t, statusList(skipped), s.statuses("plain"), "a route replaces the default handle")
				ev := s.eventsOf(engine.EventBranchEvaluated, "pick")
				require.Len(t, ev, 1)
				require.Equal(t, "b", ev[0].Data["handle"])
			},
		},
		{
			name: "_route to a handle without edges warns and ends the branch",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: pick, type: act, route: nowhere}
  - {id: a, type: act}
`, `
  - {from: start, to: pick}
  - {from: pick, to: a, on: a}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, statusList(skipped), s.statuses("a"))
				require.Len(t, s.eventsOf(engine.EventWarning, "pick"), 1)
			},
		},
		{
			name: "_state_patch sets vars that later nodes read",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: p1, type: act, patch: {a: 1, b: two}}
  - {id: p2, type: act, patch: {a: "{{ vars.a + 1 }}"}}
  - {id: read, type: act, out: {a: "{{ vars.a }}", b: "{{ vars.b }}"}}
`, `
  - {from: start, to: p1}
  - {from: p1, to: p2}
  - {from: p2, to: read}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, map[string]any{"a": 2, "b": "two"}, s.run.Vars())
				require.Equal(t, 2, s.last("read").Output["a"])
				require.Equal(t, "two", s.last("read").Output["b"])
				ev := s.eventsOf(engine.EventVariableSet, "p1")
				require.Len(t, ev, 1)
				require.Equal(t, []string{"a", "b"}, ev[0].Data["names"])
			},
		},
		{
			name: "_delay_seconds holds the successors behind a timer",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: slow, type: act, delay: 30, out: {x: 1}}
  - {id: next, type: act}
`, `
  - {from: start, to: slow}
  - {from: slow, to: next}
`),
			drive: func(t *testing.T, s *sim) {
				s.start("")
				a := s.finish("slow")
				require.Equal(t, []engine.Timer{{ID: a.Timers[0].ID, Delay: 30 * time.Second, Hold: true, Index: 1, Visit: 1}}, a.Timers)
				require.Empty(t, a.Start, "successors wait for the timer")
				require.Equal(t, waiting, s.last("slow").Status)
				require.Equal(t, 1, s.last("slow").Output["x"])
				a = s.fire()
				require.Equal(t, success, s.last("slow").Status)
				require.Len(t, a.Start, 1)
				require.Equal(t, "next", a.Start[0].Node.ID)
				s.drain()
			},
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
			},
		},
		{
			name: "the wait node waits through a timer",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: pause, type: wait, duration: 90s}
  - {id: next, type: act}
`, `
  - {from: start, to: pause}
  - {from: pause, to: next}
`),
			drive: func(t *testing.T, s *sim) {
				s.start("")
				a := s.finish("pause")
				require.Len(t, a.Timers, 1)
				require.Equal(t, 90*time.Second, a.Timers[0].Delay)
				require.Empty(t, a.Start)
				s.drain()
			},
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, statusList(success), s.statuses("next"))
			},
		},
		{
			name: "merge wait any fires on the first input",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: fast, type: act}
  - {id: slow, type: act}
  - {id: meet, type: merge, wait: any}
  - {id: after, type: act}
`, `
  - {from: start, to: fast}
  - {from: start, to: slow}
  - {from: fast, to: meet}
  - {from: slow, to: meet}
  - {from: meet, to: after}
`),
			drive: func(t *testing.T, s *sim) {
				s.start("")
				a := s.finish("fast")
				require.Len(t, a.Start, 1)
				require.Equal(t, "after", a.Start[0].Node.ID, "the join does not wait for slow")
				s.finish("after")
				a = s.finish("slow")
				require.Empty(t, a.Start, "the join fires once")
				require.True(t, a.Done)
			},
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, statusList(success), s.statuses("meet"))
				require.Equal(t, statusList(success), s.statuses("after"))
			},
		},
		{
			name: "merge wait all waits for every live input",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: fast, type: act}
  - {id: slow, type: act}
  - {id: meet, type: merge}
  - {id: after, type: act}
`, `
  - {from: start, to: fast}
  - {from: start, to: slow}
  - {from: fast, to: meet}
  - {from: slow, to: meet}
  - {from: meet, to: after}
`),
			drive: func(t *testing.T, s *sim) {
				s.start("")
				a := s.finish("fast")
				require.Empty(t, a.Start, "the join waits for slow")
				a = s.finish("slow")
				require.Len(t, a.Start, 1)
				require.Equal(t, "after", a.Start[0].Node.ID)
				s.drain()
			},
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, statusList(success), s.statuses("meet"))
			},
		},
		{
			name: "switch follows the first matching case",
			src: wf(`
  - {id: start, type: trigger.manual}
  - id: sw
    type: switch
    cases:
      - {name: x, condition: "1 > 2"}
      - {name: y, condition: "1 < 2"}
      - {name: z, condition: "true"}
  - {id: x, type: act}
  - {id: y, type: act}
  - {id: z, type: act}
  - {id: d, type: act}
`, `
  - {from: start, to: sw}
  - {from: sw, to: x, on: x}
  - {from: sw, to: y, on: y}
  - {from: sw, to: z, on: z}
  - {from: sw, to: d, on: default}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, statusList(skipped), s.statuses("x"))
				require.Equal(t, statusList(success), s.statuses("y"))
				require.Equal(t, statusList(skipped), s.statuses("z"), "first match wins")
				require.Equal(t, statusList(skipped), s.statuses("d"))
				require.Equal(t, "y", s.last("sw").Output["case"])
			},
		},
		{
			name: "switch follows default when no case matches",
			src: wf(`
  - {id: start, type: trigger.manual}
  - id: sw
    type: switch
    cases:
      - {name: x, condition: "1 > 2"}
  - {id: x, type: act}
  - {id: d, type: act}
`, `
  - {from: start, to: sw}
  - {from: sw, to: x, on: x}
  - {from: sw, to: d, on: default}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, statusList(skipped), s.statuses("x"))
				require.Equal(t, statusList(success), s.statuses("d"))
			},
		},
		{
			name: "loop is do-while: iteration 0 enters the body without checking exit",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: lp, type: loop, exit: "true"}
  - {id: body, type: act}
  - {id: lend, type: endloop, loop: lp}
  - {id: after, type: act}
`, `
  - {from: start, to: lp}
  - {from: lp, to: body, on: body}
  - {from: body, to: lend}
  - {from: lp, to: after, on: done}
`),
			drive: func(t *testing.T, s *sim) {
				a := s.start("")
				require.Len(t, a.Start, 1)
				require.Zero(t, a.Start[0].Passes, "the first evaluation has 0 passes")
				s.finish("lp")
				a = s.finish("body")
				require.Len(t, a.Start, 1)
				require.Equal(t, "lp", a.Start[0].Node.ID)
				require.Equal(t, 1, a.Start[0].Passes)
				s.drain()
			},
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, 1, s.count("body", success))
				require.Empty(t, s.eventsOf(engine.EventWarning, "lp"), "exit held: no warning")
				require.Equal(t, 1, s.last("lp").Output["iterations"])
			},
		},
		{
			name: "loop stops at max_iterations with a warning",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: lp, type: loop, exit: "false", max_iterations: 5}
  - {id: body, type: act}
  - {id: lend, type: endloop, loop: lp}
  - {id: after, type: act}
`, `
  - {from: start, to: lp}
  - {from: lp, to: body, on: body}
  - {from: body, to: lend}
  - {from: lp, to: after, on: done}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, 5, s.count("body", success), "max_iterations is the most times the body runs")
				warn := s.eventsOf(engine.EventWarning, "lp")
				require.Len(t, warn, 1)
				require.Contains(t, warn[0].Data["message"], "max_iterations (5)")
				require.Len(t, s.eventsOf(engine.EventLoopIteration, "lp"), 5)
				require.Len(t, s.eventsOf(engine.EventLoopExited, "lp"), 1)
				require.Equal(t, statusList(success), s.statuses("after"))
				require.Equal(t, 5, s.last("lp").Output["iterations"])
			},
		},
		{
			name: "a loop inside a cycle starts with a fresh counter each visit",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: lp, type: loop, exit: "false", max_iterations: 2, max_visits: 5}
  - {id: body, type: act}
  - {id: lend, type: endloop, loop: lp}
  - {id: again, type: guardrail, condition: "(vars.rounds ?? 0) >= 2", max_visits: 5}
  - {id: bump, type: set, vars: {rounds: "{{ (vars.rounds ?? 0) + 1 }}"}, max_visits: 5}
`, `
  - {from: start, to: lp}
  - {from: lp, to: body, on: body}
  - {from: body, to: lend}
  - {from: lp, to: again, on: done}
  - {from: again, to: bump, on: fail}
  - {from: bump, to: lp}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status, "%v", s.done.Err)
				require.Equal(t, 6, s.count("body", success), "3 visits × 2 passes")
				for _, st := range s.sortedSteps("lp") {
					require.Equal(t, 2, st.Output["iterations"])
				}
			},
		},
		{
			name: "unreachable nodes are ignored with a warning",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: a, type: act}
  - {id: orphan, type: act}
  - {id: child, type: act}
  - {id: olp, type: loop, exit: "true"}
  - {id: obody, type: act}
  - {id: oend, type: endloop, loop: olp}
`, `
  - {from: start, to: a}
  - {from: orphan, to: child}
  - {from: child, to: a}
  - {from: olp, to: obody, on: body}
  - {from: obody, to: oend}
`),
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, statusList(success), s.statuses("a"), "an edge from an ignored node does not hold a back")
				require.Empty(t, s.statuses("orphan"))
				require.Empty(t, s.statuses("child"))
				for _, id := range []string{"orphan", "child", "olp", "obody", "oend"} {
					require.Len(t, s.eventsOf(engine.EventWarning, id), 1, id)
					require.Empty(t, s.statuses(id), id)
				}
			},
		},
		{
			name: "without triggers every entry node starts",
			src: wf(`
  - {id: a, type: act}
  - {id: b, type: act}
  - {id: c, type: act}
`, `
  - {from: a, to: c}
  - {from: b, to: c}
`),
			drive: func(t *testing.T, s *sim) {
				a := s.start("")
				require.ElementsMatch(t, []string{"a", "b"}, s.running())
				require.Equal(t, []string{"a", "b"}, a.Events[0].Data["starts"])
				s.drain()
			},
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, statusList(success), s.statuses("c"))
			},
		},
		{
			name: "a chosen trigger starts the run; the others are ignored",
			src: wf(`
  - {id: manual, type: trigger.manual}
  - {id: hook, type: trigger.webhook}
  - {id: by_hand, type: act}
  - {id: by_hook, type: act}
`, `
  - {from: manual, to: by_hand}
  - {from: hook, to: by_hook}
`),
			drive: func(t *testing.T, s *sim) {
				s.start("hook")
				s.drain()
			},
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunCompleted, s.done.Status)
				require.Equal(t, statusList(success), s.statuses("hook"))
				require.Equal(t, "test", s.last("hook").Output["who"], "the trigger outputs the payload")
				require.Equal(t, statusList(success), s.statuses("by_hook"))
				require.Empty(t, s.statuses("by_hand"))
				require.Empty(t, s.statuses("manual"))
			},
		},
		{
			name: "a fail node fails the run",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: boom, type: fail, message: "it broke", retries: 3}
  - {id: side, type: act}
  - {id: after, type: act}
`, `
  - {from: start, to: boom}
  - {from: start, to: side}
  - {from: side, to: after}
`),
			drive: func(t *testing.T, s *sim) {
				s.start("")
				a := s.finish("boom")
				require.Empty(t, a.Timers, "a fail node is not retried")
				require.True(t, a.CancelRunning, "side is still running")
				require.False(t, a.Done)
				a = s.finish("side")
				require.True(t, a.Done)
			},
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunFailed, s.done.Status)
				require.Equal(t, "node boom: it broke", s.done.Err.Message)
				require.Equal(t, statusList(failedSt), s.statuses("boom"))
				require.Equal(t, statusList(skipped), s.statuses("after"))
			},
		},
		{
			name: "on_error fail stops the run and skips pending nodes",
			src: wf(`
  - {id: start, type: trigger.manual}
  - {id: bad, type: act, fail: -1, permanent: true}
  - {id: after_bad, type: act}
  - {id: good, type: act}
  - {id: after_good, type: act}
  - {id: meet, type: merge}
`, `
  - {from: start, to: bad}
  - {from: bad, to: after_bad}
  - {from: start, to: good}
  - {from: good, to: after_good}
  - {from: after_bad, to: meet}
  - {from: after_good, to: meet}
`),
			drive: func(t *testing.T, s *sim) {
				s.start("")
				s.finish("bad")
				a := s.finish("good")
				require.Empty(t, a.Start, "nothing new starts once the run fails")
				require.True(t, a.Done)
			},
			check: func(t *testing.T, s *sim) {
				require.Equal(t, engine.RunFailed, s.done.Status)
				require.Equal(t, "node bad: bad attempt 1 failed", s.done.Err.Message)
				require.Equal(t, statusList(success), s.statuses("good"), "running nodes finish")
				for _, id := range []string{"after_bad", "after_good", "meet"} {
					require.Equal(t, statusList(skipped), s.statuses(id), id)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newSim(t, c.src)
			if c.drive != nil {
				c.drive(t, s)
			} else {
				s.start("")
				s.drain()
			}
			require.NotNil(t, s.done, "the run did not end\n%s", s.dump())
			for _, st := range s.steps {
				require.True(t, st.Status.Final(), "step %s/%d ended %s\n%s", st.Node, st.Visit, st.Status, s.dump())
			}
			c.check(t, s)
		})
	}
}

func outputsOf(s *sim, id, key string) []any {
	var out []any
	for _, st := range s.sortedSteps(id) {
		out = append(out, st.Output[key])
	}
	return out
}

// TestSchedulerCancel cancels a run while three branches run: nothing new
// starts, the running tasks finish, pending nodes become skipped and the run
// ends cancelled.
func TestSchedulerCancel(t *testing.T) {
	t.Parallel()
	src := wf(`
  - {id: start, type: trigger.manual}
  - {id: a, type: act}
  - {id: b, type: act}
  - {id: c, type: act, fail: 1, retries: 2}
  - {id: d, type: act}
  - {id: a2, type: act}
  - {id: meet, type: merge}
  - {id: after, type: act}
`, `
  - {from: start, to: a}
  - {from: start, to: b}
  - {from: start, to: c}
  - {from: start, to: d}
  - {from: a, to: a2}
  - {from: a2, to: meet}
  - {from: b, to: meet}
  - {from: c, to: meet}
  - {from: d, to: meet}
  - {from: meet, to: after}
`)
	s := newSim(t, src)
	s.start("")
	require.ElementsMatch(t, []string{"a", "b", "c", "d"}, s.running())
	a := s.finish("c") // fails; a retry timer is set
	require.Len(t, a.Timers, 1)
	s.finish("d")
	// Three branches run (a, b) or wait (c, for its retry).
	a = s.apply(s.run.Cancel())
	require.False(t, a.Done, "running tasks finish first")
	require.Empty(t, a.Start)
	a = s.apply(s.run.TimerFired(s.timers[0].ID))
	require.Empty(t, a.Start, "the retry does not start after a cancel")
	a = s.finish("a")
	require.Empty(t, a.Start, "a2 does not start")
	a = s.finishWith("b", engine.Outcome{Err: &node.Error{Code: "cancelled", Category: node.CategoryCancelled, Message: "context canceled"}})
	require.True(t, a.Done)
	require.Equal(t, engine.RunCancelled, a.Status)
	require.Equal(t, statusList(success), s.statuses("a"))
	require.Equal(t, statusList(cancelled), s.statuses("b"))
	require.Equal(t, statusList(failedSt), s.statuses("c"), "the attempt that failed stays failed; no retry")
	require.Equal(t, statusList(success), s.statuses("d"))
	for _, id := range []string{"a2", "meet", "after"} {
		require.Equal(t, statusList(cancelled), s.statuses(id), id)
	}
	for _, st := range s.steps {
		require.True(t, st.Status.Final(), "%s ended %s", st.Node, st.Status)
	}
	// Cancelling again, or reporting unknown tasks and timers, does nothing.
	require.Equal(t, &engine.Actions{}, s.run.Cancel())
	require.Equal(t, &engine.Actions{}, s.run.Finished(999, ok(nil)))
	require.Equal(t, &engine.Actions{}, s.run.TimerFired(999))
}

// TestSchedulerRetryBackoff checks the delays asked for between attempts:
// retry_backoff × 2^(n-1) plus at most 20% jitter, capped at MaxBackoff.
func TestSchedulerRetryBackoff(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		node    string
		want    []time.Duration // base delays before jitter
		attempt int             // the attempt that succeeds
	}{
		{name: "doubles each attempt", node: `{id: work, type: act, fail: 3, retries: 3, retry_backoff: 1s}`,
			want: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, attempt: 4},
		{name: "capped", node: `{id: work, type: act, fail: 4, retries: 4, retry_backoff: 2m}`,
			want: []time.Duration{2 * time.Minute, 4 * time.Minute, engine.MaxBackoff, engine.MaxBackoff}, attempt: 5},
		{name: "retry_after wins when longer", node: `{id: work, type: act, fail: 1, retries: 1, retry_backoff: 1s, retry_after: 1m}`,
			want: []time.Duration{time.Minute}, attempt: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newSim(t, wf("  - {id: start, type: trigger.manual}\n  - "+c.node+"\n", "  - {from: start, to: work}\n"))
			s.start("")
			var got []time.Duration
			for range c.want {
				a := s.finish("work")
				require.Len(t, a.Timers, 1)
				require.Equal(t, failedSt, s.last("work").Status)
				ev := s.eventsOf(engine.EventRetry, "work")
				require.Equal(t, a.Timers[0].Delay.Milliseconds(), ev[len(ev)-1].Data["delay_ms"])
				got = append(got, a.Timers[0].Delay)
				a = s.fire()
				require.Len(t, a.Start, 1, "the timer starts the next attempt")
				require.Equal(t, len(got)+1, a.Start[0].Attempt)
			}
			s.drain()
			for i, d := range got {
				base := c.want[i]
				require.GreaterOrEqual(t, d, base, "attempt %d", i+1)
				limit := base + base/5
				if base == engine.MaxBackoff {
					limit = engine.MaxBackoff
				}
				require.LessOrEqual(t, d, limit, "attempt %d: at most 20%% jitter, capped", i+1)
			}
			require.Equal(t, engine.RunCompleted, s.done.Status)
			st := s.last("work")
			require.Equal(t, success, st.Status)
			require.Equal(t, c.attempt, st.Attempt)
			require.Len(t, s.steps, 2, "one step per visit, however many attempts")
		})
	}
	t.Run("jitter is deterministic per run, node, visit and attempt", func(t *testing.T) {
		t.Parallel()
		src := wf("  - {id: start, type: trigger.manual}\n  - {id: work, type: act, fail: 1, retries: 1, retry_backoff: 10s}\n", "  - {from: start, to: work}\n")
		delay := func() time.Duration {
			s := newSim(t, src)
			s.start("")
			return s.finish("work").Timers[0].Delay
		}
		require.Equal(t, delay(), delay())
	})
	t.Run("permanent errors are not retried", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, wf("  - {id: start, type: trigger.manual}\n  - {id: work, type: act, fail: -1, permanent: true, retries: 3}\n", "  - {from: start, to: work}\n"))
		s.start("")
		a := s.finish("work")
		require.Empty(t, a.Timers)
		require.True(t, a.Done)
		require.Equal(t, engine.RunFailed, a.Status)
	})
}

// TestSchedulerStartNodes checks which nodes a run starts from.
func TestSchedulerStartNodes(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, wf(`
  - {id: manual, type: trigger.manual}
  - {id: hook, type: trigger.webhook}
  - {id: a, type: act}
  - {id: b, type: act}
`, `
  - {from: manual, to: a}
  - {from: hook, to: b}
`))
	ids := func(idx []int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, p.Nodes[i].ID)
		}
		return out
	}
	got, err := p.StartNodes("")
	require.NoError(t, err)
	require.Equal(t, []string{"manual"}, ids(got), "the manual triggers by default")
	got, err = p.StartNodes("hook")
	require.NoError(t, err)
	require.Equal(t, []string{"hook"}, ids(got))
	_, err = p.StartNodes("nope")
	require.ErrorContains(t, err, `no trigger "nope"`)
	require.ErrorContains(t, err, "manual")
	_, err = p.StartNodes("a")
	require.ErrorContains(t, err, `no trigger "a"`, "a node that is not a trigger")

	hooks := mustPlan(t, wf(`
  - {id: hook, type: trigger.webhook}
  - {id: b, type: act}
  - {id: loose, type: act}
`, `
  - {from: hook, to: b}
`))
	got, err = hooks.StartNodes("")
	require.NoError(t, err)
	require.Len(t, got, 2, "no manual trigger: every entry node, triggers among them")
}

// TestSchedulerEvents checks the events a plain run writes, in order.
func TestSchedulerEvents(t *testing.T) {
	t.Parallel()
	s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: a, type: act}
`, `
  - {from: start, to: a}
`))
	s.start("")
	s.drain()
	var types []string
	for _, ev := range s.events {
		types = append(types, ev.Type+":"+ev.Node)
	}
	require.Equal(t, []string{
		"execution_started:", "node_started:start", "node_finished:start",
		"node_started:a", "node_finished:a", "execution_finished:",
	}, types)
	require.Equal(t, "completed", s.events[len(s.events)-1].Data["status"])
	require.True(t, strings.HasPrefix(s.steps[0].Node, "start"))
}
