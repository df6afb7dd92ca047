package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
)

// TestSkipReasons: every skipped step says why it did not run, and a step
// that never ran because of a cancel is cancelled, not skipped.
func TestSkipReasons(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		src  string
		// drive runs the scenario to its end.
		drive func(s *sim)
		// want is, for each step that did not run, its status and why:
		// "skipped reason", "skipped branch_not_taken handle" or
		// "cancelled".
		want map[string]string
	}{
		{
			name: "a branch not taken",
			src: `version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: gate, type: if, condition: "false"}
  - {id: yes, type: act}
  - {id: after_yes, type: act}
  - {id: no, type: act}
edges:
  - {from: start, to: gate}
  - {from: gate, to: yes, on: "true"}
  - {from: yes, to: after_yes}
  - {from: gate, to: no, on: "false"}
`,
			drive: func(s *sim) { s.start(""); s.drain() },
			want:  map[string]string{"yes": "skipped branch_not_taken false", "after_yes": "skipped dead_path"},
		},
		{
			name: "a switch case and a route not taken",
			src: `version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: pick, type: switch, cases: [{name: big, condition: "false"}, {name: small, condition: "true"}]}
  - {id: big, type: act}
  - {id: small, type: act}
  - {id: other, type: act}
  - {id: router, type: act, route: b}
  - {id: ra, type: act}
  - {id: rb, type: act}
edges:
  - {from: start, to: pick}
  - {from: pick, to: big, on: big}
  - {from: pick, to: small, on: small}
  - {from: pick, to: other, on: default}
  - {from: start, to: router}
  - {from: router, to: ra, on: a}
  - {from: router, to: rb, on: b}
`,
			drive: func(s *sim) { s.start(""); s.drain() },
			want: map[string]string{"big": "skipped branch_not_taken small", "other": "skipped branch_not_taken small",
				"ra": "skipped branch_not_taken b"},
		},
		{
			name: "an upstream node failed",
			src: `version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: fetch, type: act, fail: -1, on_error: route}
  - {id: use, type: act}
  - {id: after_use, type: act}
  - {id: handle, type: act}
  - {id: gate, type: if, condition: "int('x') > 1", on_error: continue}
  - {id: gated, type: act}
edges:
  - {from: start, to: fetch}
  - {from: fetch, to: use}
  - {from: use, to: after_use}
  - {from: fetch, to: handle, on: error}
  - {from: start, to: gate}
  - {from: gate, to: gated, on: "true"}
`,
			drive: func(s *sim) { s.start(""); s.drain() },
			want: map[string]string{"use": "skipped upstream_failed", "after_use": "skipped dead_path",
				"gated": "skipped upstream_failed"},
		},
		{
			name: "an error handler when nothing failed",
			src: `version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: fetch, type: act, on_error: route}
  - {id: handle, type: act}
edges:
  - {from: start, to: fetch}
  - {from: fetch, to: handle, on: error}
`,
			drive: func(s *sim) { s.start(""); s.drain() },
			want:  map[string]string{"handle": "skipped branch_not_taken "},
		},
		{
			name: "disabled",
			src: `version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: off, type: act, disabled: true}
  - {id: after, type: act}
edges:
  - {from: start, to: off}
  - {from: off, to: after}
`,
			drive: func(s *sim) { s.start(""); s.drain() },
			want:  map[string]string{"off": "skipped disabled"},
		},
		{
			name: "cancelled",
			src: `version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: busy, type: act}
  - {id: after, type: act}
edges:
  - {from: start, to: busy}
  - {from: busy, to: after}
`,
			drive: func(s *sim) {
				s.start("")
				s.apply(s.run.Cancel())
				s.drain()
			},
			want: map[string]string{"after": "cancelled"},
		},
		{
			name: "the run failed",
			src: `version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: broken, type: act, fail: -1}
  - {id: after, type: act}
edges:
  - {from: start, to: broken}
  - {from: broken, to: after}
`,
			drive: func(s *sim) { s.start(""); s.drain() },
			want:  map[string]string{"after": "skipped run_failed"},
		},
		{
			name: "a foreach item failed",
			src: `version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ [1, 2] }}"}
  - {id: check, type: act, fail: -1, on_error: continue}
  - {id: note, type: act}
  - {id: next, type: endloop, loop: each}
edges:
  - {from: start, to: each}
  - {from: each, to: check, on: body}
  - {from: check, to: note}
  - {from: note, to: next}
`,
			drive: func(s *sim) { s.start(""); s.drain() },
			want:  map[string]string{"note": "skipped item_failed", "next": "skipped item_failed"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSim(t, tc.src)
			tc.drive(s)
			require.NotNil(t, s.done, "the run ended")
			got := map[string]string{}
			for _, st := range s.steps {
				switch st.Status {
				case engine.StatusSkipped:
					got[st.Node] = "skipped " + st.SkipReason
					if st.SkipReason == engine.SkipBranchNotTaken {
						got[st.Node] += " " + st.TakenHandle
					} else {
						require.Empty(t, st.TakenHandle, "%s was skipped as %s: no handle", st.Node, st.SkipReason)
					}
				case engine.StatusCancelled:
					if st.TaskID == 0 {
						got[st.Node] = "cancelled"
					}
					require.Empty(t, st.SkipReason, "%s is cancelled: it has no skip reason", st.Node)
				default:
					require.Empty(t, st.SkipReason, "%s is %s: it has no skip reason", st.Node, st.Status)
				}
			}
			require.Equal(t, tc.want, got, s.dump())
		})
	}
}

// TestPlannedSteps: when a run starts, every node its start reaches is
// recorded pending (an unreachable one is not); a loop pass's and a
// foreach item's nodes are recorded pending as the pass or item is
// planned, and keep the visit they were planned with.
func TestPlannedSteps(t *testing.T) {
	t.Parallel()
	s := newSim(t, `version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: a, type: act}
  - {id: each, type: foreach, items: "{{ [1, 2] }}", concurrency: 1}
  - {id: sq, type: act}
  - {id: eend, type: endloop, loop: each}
  - {id: spin, type: loop, exit: "false", max_iterations: 2}
  - {id: body, type: act}
  - {id: back, type: endloop, loop: spin}
  - {id: last, type: act}
  - {id: hook, type: trigger.webhook, path: h}
  - {id: only_hook, type: act}
edges:
  - {from: start, to: a}
  - {from: a, to: each}
  - {from: each, to: sq, on: body}
  - {from: sq, to: eend}
  - {from: each, to: spin, on: done}
  - {from: spin, to: body, on: body}
  - {from: body, to: back}
  - {from: spin, to: last, on: done}
  - {from: hook, to: only_hook}
`)
	a := s.start("")
	planned := map[string]string{}
	for _, su := range a.Steps {
		if _, ok := planned[su.Node]; !ok {
			planned[su.Node] = string(su.Status)
		}
	}
	require.Equal(t, map[string]string{"start": "pending", "a": "pending", "each": "pending", "spin": "pending", "last": "pending"},
		planned, "the run's own nodes, reachable from its start, are planned before anything runs")
	require.Equal(t, engine.StatusPending, s.last("last").Status)

	s.finish("a")
	s.finish("each")
	require.Equal(t, engine.StatusRunning, s.last("sq").Status)
	require.Equal(t, engine.StatusPending, s.last("eend").Status, "the first item's endloop is planned with it")
	s.drain()
	for _, st := range s.steps {
		require.NotEqual(t, engine.StatusPending, st.Status, "%s/%d: a finished run has no pending step", st.Node, st.Visit)
	}
	require.Equal(t, []string{"success", "success"}, statusStrings(s, "sq"), "one step per item")
	require.Equal(t, []string{"success", "success"}, statusStrings(s, "body"), "one step per pass")
	for _, id := range []string{"only_hook", "hook"} {
		require.Empty(t, statusStrings(s, id), "%s is not reachable from the manual trigger", id)
	}
}

func statusStrings(s *sim, id string) []string {
	var out []string
	for _, st := range s.steps {
		if st.Node == id {
			out = append(out, string(st.Status))
		}
	}
	return out
}
