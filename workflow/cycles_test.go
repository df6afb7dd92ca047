package workflow_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// cycleFlow makes a workflow with a manual trigger "start" from its other
// nodes and its edges (YAML list items).
func cycleFlow(nodes, edges string) string {
	return "version: 1\nname: cycles\nnodes:\n  - {id: start, type: trigger.manual}\n" + nodes + "edges:\n" + edges
}

// A cycle no node can leave is an error when every run that reaches it
// fails at max_visits, a warning when it may still stop in a way no edge
// was written for, and nothing at all when a node on it can take a
// handle that leaves it or ends the branch.
func TestCyclesWithoutAWayOut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		sev  workflow.Severity // "": no diagnostic about the cycle
		node string
		part string // of the message
		at   string // line:col
	}{
		{
			name: "two nodes that send the run to each other",
			src: cycleFlow(`  - {id: a, type: template, text: a}
  - {id: b, type: template, text: b}
`, `  - {from: start, to: a}
  - {from: a, to: b}
  - {from: b, to: a}
`),
			sev: workflow.Error, node: "a", at: "5:6",
			part: "cycle a → b → a has no way out: no edge leaves it, so a run that reaches it fails when a node reaches max_visits (10); add an if, switch or loop that routes out of it",
		},
		{
			name: "a node that goes back to itself",
			src: cycleFlow(`  - {id: poll, type: http, url: "http://127.0.0.1:8080/", max_visits: 3}
`, `  - {from: start, to: poll}
  - {from: poll, to: poll}
`),
			sev: workflow.Error, node: "poll", at: "5:6",
			part: "cycle poll → poll has no way out: no edge leaves it, so a run that reaches it fails when a node reaches max_visits (3)",
		},
		{
			// b takes both of its edges: the run goes on to after, and
			// round the cycle again, until a node reaches max_visits.
			name: "an edge out taken with one back in",
			src: cycleFlow(`  - {id: a, type: template, text: a, max_visits: 3}
  - {id: b, type: template, text: b}
  - {id: after, type: template, text: done}
`, `  - {from: start, to: a}
  - {from: a, to: b}
  - {from: b, to: a}
  - {from: b, to: after}
`),
			sev: workflow.Error, node: "a", at: "5:6",
			part: "cycle a → b → a has no way out: the edges that leave it (b → after) are never taken without one that goes round it again, so a run that reaches it fails when a node reaches max_visits (3 to 10)",
		},
		{
			name: "an if whose two handles both go back",
			src: cycleFlow(`  - {id: draft, type: template, text: d}
  - {id: check, type: if, condition: "draft.text == 'ok'"}
  - {id: fix, type: template, text: f}
`, `  - {from: start, to: draft}
  - {from: draft, to: check}
  - {from: check, to: draft, on: "true"}
  - {from: check, to: fix, on: "false"}
  - {from: fix, to: draft}
`),
			sev: workflow.Error, node: "draft", at: "5:6",
			part: "cycle draft → check → draft, with fix joined to it, has no way out: no edge leaves it",
		},
		{
			name: "a loop whose done handle goes back round",
			src: cycleFlow(`  - {id: prep, type: template, text: p}
  - {id: lp, type: loop, exit: "true", max_iterations: 2}
  - {id: work, type: template, text: w}
  - {id: lend, type: endloop, loop: lp}
`, `  - {from: start, to: prep}
  - {from: prep, to: lp}
  - {from: lp, to: work, on: body}
  - {from: work, to: lend}
  - {from: lp, to: prep, on: done}
`),
			sev: workflow.Error, node: "prep", at: "5:6",
			part: "cycle prep → lp → prep has no way out: no edge leaves it",
		},
		{
			name: "a cycle inside a loop body",
			src: cycleFlow(`  - {id: lp, type: loop, exit: "true", max_iterations: 2}
  - {id: a, type: template, text: a}
  - {id: b, type: template, text: b}
  - {id: lend, type: endloop, loop: lp}
`, `  - {from: start, to: lp}
  - {from: lp, to: a, on: body}
  - {from: a, to: b}
  - {from: b, to: a}
  - {from: b, to: lend}
`),
			sev: workflow.Error, node: "a", at: "6:6",
			part: "cycle a → b → a has no way out: the edges that leave it (b → lend) are never taken without one that goes round it again",
		},
		{
			name: "defaults: on_error: continue sends a failure back round",
			src: "version: 1\nname: cycles\ndefaults: {on_error: continue}\nnodes:\n  - {id: start, type: trigger.manual}\n" +
				"  - {id: a, type: template, text: a}\n  - {id: b, type: template, text: b}\nedges:\n" +
				"  - {from: start, to: a}\n  - {from: a, to: b}\n  - {from: b, to: a}\n",
			sev: workflow.Error, node: "a", at: "6:6", part: "cycle a → b → a has no way out",
		},
		{
			name: "nodes that route by _route and have no edge out",
			src: cycleFlow(`  - {id: a, type: shell, command: [echo, a]}
  - {id: b, type: set, values: {n: 1}}
`, `  - {from: start, to: a}
  - {from: a, to: b}
  - {from: b, to: a}
`),
			sev: workflow.Warning, node: "a", at: "5:6",
			part: `cycle a → b → a may have no way out: no edge leaves it; unless node "a" returns a _route no edge takes, a run that reaches it fails when a node reaches max_visits (10)`,
		},
		{
			// A set node routes only by a _route among its values, or by
			// values a template makes.
			name: "set nodes whose values hold no _route",
			src: cycleFlow(`  - {id: a, type: set, values: {n: 1}, vars: {m: 2}}
  - {id: b, type: set, vars: {m: 3}}
`, `  - {from: start, to: a}
  - {from: a, to: b}
  - {from: b, to: a}
`),
			sev: workflow.Error, node: "a", at: "5:6",
			part: "cycle a → b → a has no way out: no edge leaves it, so a run that reaches it fails when a node reaches max_visits (10)",
		},
		{
			name: "a set node with a _route among its values",
			src: cycleFlow(`  - {id: a, type: set, values: {n: 1}}
  - {id: b, type: set, values: {_route: "{{ a.n > 0 ? 'out' : 'default' }}"}}
`, `  - {from: start, to: a}
  - {from: a, to: b}
  - {from: b, to: a}
`),
			sev: workflow.Warning, node: "a", at: "5:6",
			part: `unless node "b" returns a _route no edge takes,`,
		},
		{
			name: "a set node whose values a template makes",
			src: cycleFlow(`  - {id: a, type: set, values: {n: 1}}
  - {id: b, type: set, values: "{{ a }}"}
`, `  - {from: start, to: a}
  - {from: a, to: b}
  - {from: b, to: a}
`),
			sev: workflow.Warning, node: "a", at: "5:6",
			part: `unless node "b" returns a _route no edge takes,`,
		},
		{
			name: "a wait for a signal with no timeout",
			src: cycleFlow(`  - {id: ask, type: wait, until: signal}
  - {id: answer, type: template, text: "{{ ask.data }}"}
`, `  - {from: start, to: ask}
  - {from: ask, to: answer}
  - {from: answer, to: ask}
`),
			sev: workflow.Warning, node: "ask", at: "5:6",
			part: `unless the run waits at "ask" for a signal that never comes,`,
		},
		{
			name: "a failure on_error: route sends nowhere",
			src: cycleFlow(`  - {id: fetch, type: http, url: "http://127.0.0.1:8080/", on_error: route}
  - {id: show, type: template, text: "{{ fetch.status }}"}
`, `  - {from: start, to: fetch}
  - {from: fetch, to: show}
  - {from: show, to: fetch}
`),
			sev: workflow.Warning, node: "fetch", at: "5:6",
			part: `unless node "fetch" fails (on_error: route, and no edge by its "error" handle),`,
		},
		{
			name: "a failure that ends a foreach item",
			src: cycleFlow(`  - {id: each, type: foreach, items: "{{ [1, 2] }}"}
  - {id: a, type: template, text: a, on_error: continue}
  - {id: b, type: template, text: b}
  - {id: eend, type: endloop, loop: each}
`, `  - {from: start, to: each}
  - {from: each, to: a, on: body}
  - {from: a, to: b}
  - {from: b, to: a}
  - {from: b, to: eend}
`),
			sev: workflow.Warning, node: "a", at: "6:6",
			part: `unless node "a" fails (on_error: continue ends its foreach item),`,
		},
		{
			// The scheduler ignores a jump back to a node that still runs,
			// so branches side by side on a cycle may end it.
			name: "branches side by side on the cycle",
			src: cycleFlow(`  - {id: work, type: template, text: w}
  - {id: left, type: template, text: l}
  - {id: right, type: template, text: r}
  - {id: meet, type: merge}
`, `  - {from: start, to: work}
  - {from: work, to: left}
  - {from: work, to: right}
  - {from: left, to: meet}
  - {from: right, to: meet}
  - {from: meet, to: work}
`),
			sev: workflow.Warning, node: "work", at: "5:6",
			part: `unless the branches that run side by side on it (from "work") cut one another short,`,
		},
		{
			// When a goes round by true, its edge to b dies and b runs on
			// the edge from start: two ways round the cycle at once.
			name: "a cycle entered in the middle from outside",
			src: cycleFlow(`  - {id: a, type: if, condition: "true"}
  - {id: b, type: template, text: b}
`, `  - {from: start, to: a}
  - {from: start, to: b}
  - {from: a, to: a, on: "true"}
  - {from: a, to: b, on: "false"}
  - {from: b, to: a}
`),
			sev: workflow.Warning, node: "a", at: "5:6",
			part: `unless the branches that run side by side on it (into "b" from outside it) cut one another short,`,
		},
		{
			name: "an if-based retry that gives up",
			src: cycleFlow(`  - {id: draft, type: template, text: d}
  - {id: review, type: guardrail, condition: "draft.text == 'ok'"}
  - {id: again, type: if, condition: "true", max_visits: 3}
  - {id: give_up, type: fail, message: no}
  - {id: publish, type: template, text: p}
`, `  - {from: start, to: draft}
  - {from: draft, to: review}
  - {from: review, to: publish, on: pass}
  - {from: review, to: again, on: fail}
  - {from: again, to: draft, on: "true"}
  - {from: again, to: give_up, on: "false"}
`),
		},
		{
			// The false handle has no edge: the branch ends there.
			name: "a poll that stops when an if has no edge",
			src: cycleFlow(`  - {id: poll, type: template, text: p}
  - {id: more, type: if, condition: "poll.text == 'again'"}
`, `  - {from: start, to: poll}
  - {from: poll, to: more}
  - {from: more, to: poll, on: "true"}
`),
		},
		{
			name: "a loop and its endloop",
			src: cycleFlow(`  - {id: lp, type: loop, exit: "true", max_iterations: 3}
  - {id: work, type: template, text: w}
  - {id: lend, type: endloop, loop: lp}
  - {id: after, type: template, text: a}
`, `  - {from: start, to: lp}
  - {from: lp, to: work, on: body}
  - {from: work, to: lend}
  - {from: lp, to: after, on: done}
`),
		},
		{
			name: "a loop inside a cycle leaves it by done",
			src: cycleFlow(`  - {id: prep, type: template, text: p}
  - {id: lp, type: loop, exit: "true", max_iterations: 2}
  - {id: work, type: template, text: w}
  - {id: lend, type: endloop, loop: lp}
  - {id: check, type: if, condition: "true"}
  - {id: after, type: template, text: a}
`, `  - {from: start, to: prep}
  - {from: prep, to: lp}
  - {from: lp, to: work, on: body}
  - {from: work, to: lend}
  - {from: lp, to: check, on: done}
  - {from: check, to: prep, on: "true"}
  - {from: check, to: after, on: "false"}
`),
		},
		{
			name: "an error edge that leaves the cycle",
			src: cycleFlow(`  - {id: fetch, type: http, url: "http://127.0.0.1:8080/", on_error: route}
  - {id: show, type: template, text: "{{ fetch.status }}"}
  - {id: gave_up, type: template, text: "gave up"}
`, `  - {from: start, to: fetch}
  - {from: fetch, to: show}
  - {from: show, to: fetch}
  - {from: fetch, to: gave_up, on: error}
`),
		},
		{
			name: "a routed handle that leaves the cycle",
			src: cycleFlow(`  - {id: step, type: shell, command: [./step.sh]}
  - {id: rest, type: template, text: r}
  - {id: finish, type: template, text: f}
`, `  - {from: start, to: step}
  - {from: step, to: rest}
  - {from: rest, to: step}
  - {from: step, to: finish, on: done}
`),
		},
		{
			name: "a wait for a signal whose timeout leaves",
			src: cycleFlow(`  - {id: ask, type: wait, until: signal, timeout: 1h}
  - {id: answer, type: template, text: a}
  - {id: bye, type: template, text: b}
`, `  - {from: start, to: ask}
  - {from: ask, to: answer}
  - {from: answer, to: ask}
  - {from: ask, to: bye, on: timeout}
`),
		},
		{
			// Disabled, the if follows only false, which leaves.
			name: "a disabled if that falls through out of the cycle",
			src: cycleFlow(`  - {id: a, type: template, text: a}
  - {id: gate, type: if, condition: "true", disabled: true}
  - {id: after, type: template, text: b}
`, `  - {from: start, to: a}
  - {from: a, to: gate}
  - {from: gate, to: a, on: "true"}
  - {from: gate, to: after, on: "false"}
`),
		},
		{
			// Its nodes are warned about as unreachable instead.
			name: "a cycle no run reaches",
			src: cycleFlow(`  - {id: a, type: template, text: a}
  - {id: b, type: template, text: b}
`, `  - {from: a, to: b}
  - {from: b, to: a}
`),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, ds := validateText(t, tc.src)
			var cycles workflow.Diagnostics
			for _, d := range ds {
				if strings.Contains(d.Message, "no way out") {
					cycles = append(cycles, d)
				}
			}
			if tc.sev == "" {
				require.Empty(t, cycles, "no cycle diagnostic expected; got:\n%s", diagLines(ds))
				require.False(t, ds.HasErrors(), "%s", diagLines(ds))
				return
			}
			require.Len(t, cycles, 1, "one cycle diagnostic expected; got:\n%s", diagLines(ds))
			d := cycles[0]
			require.Equal(t, string(tc.sev), string(d.Severity), d.String())
			require.Equal(t, tc.node, d.Node, d.String())
			require.Equal(t, tc.at, workflow.Pos{Line: d.Line, Col: d.Col}.String(), d.String())
			require.Contains(t, d.Message, tc.part)
			if tc.sev == workflow.Warning {
				require.False(t, ds.HasErrors(), "a warning only; got:\n%s", diagLines(ds))
			}
		})
	}
}

// A subworkflow node routes only when its child's outputs may hold a
// _route: a cycle through a child that declares none has no way out; one
// through a child whose outputs name _route, or whose file is not read
// (ValidateOwn), may.
func TestCycleThroughAChild(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := writerIn(t, dir)
	write("plain.yaml", "version: 1\nname: plain\nnodes:\n  - {id: out, type: set, values: {n: 1}}\noutputs:\n  n: \"{{ out.n }}\"\n")
	write("leaves.yaml", "version: 1\nname: leaves\nnodes:\n  - {id: out, type: set, values: {n: 1}}\n")
	write("router.yaml", "version: 1\nname: router\nnodes:\n  - {id: out, type: set, values: {n: 1}}\noutputs:\n  _route: \"{{ out.n > 0 ? 'done' : 'default' }}\"\n")
	flow := func(child string) string {
		return write("flow-"+child, cycleFlow(`  - {id: a, type: subworkflow, workflow: `+child+`}
  - {id: b, type: template, text: b}
`, `  - {from: start, to: a}
  - {from: a, to: b}
  - {from: b, to: a}
`))
	}
	cycleDiag := func(t *testing.T, ds workflow.Diagnostics) workflow.Diagnostic {
		t.Helper()
		var found []workflow.Diagnostic
		for _, d := range ds {
			if strings.Contains(d.Message, "no way out") {
				found = append(found, d)
			}
		}
		require.Len(t, found, 1, "%s", diagLines(ds))
		return found[0]
	}
	for _, child := range []string{"plain.yaml", "leaves.yaml"} {
		_, ds := workflow.Load(flow(child), node.Default)
		d := cycleDiag(t, ds)
		require.Equal(t, workflow.Error, d.Severity, child+": "+d.String())
		require.Contains(t, d.Message, "cycle a → b → a has no way out", child)
	}
	_, ds := workflow.Load(flow("router.yaml"), node.Default)
	d := cycleDiag(t, ds)
	require.Equal(t, workflow.Warning, d.Severity, d.String())
	require.Contains(t, d.Message, `unless node "a" returns a _route no edge takes`)
	require.NotContains(t, d.Message, "waits at")

	// A child that may wait for a signal may keep the run at the node.
	write("asks.yaml", "version: 1\nname: asks\nnodes:\n  - {id: ask, type: wait, until: signal}\noutputs:\n  n: \"{{ ask.data }}\"\n")
	_, ds = workflow.Load(flow("asks.yaml"), node.Default)
	d = cycleDiag(t, ds)
	require.Equal(t, workflow.Warning, d.Severity, d.String())
	require.Contains(t, d.Message, `unless the run waits at "a" for a signal that never comes`)
	require.NotContains(t, d.Message, "_route")

	// Without its child read, the node may route.
	src, err := os.ReadFile(flow("plain.yaml"))
	require.NoError(t, err)
	w, ds := workflow.Decode(filepath.Join(dir, "flow-plain.yaml"), src)
	require.NotNil(t, w, "%v", ds)
	d = cycleDiag(t, workflow.ValidateOwn(w, node.Default))
	require.Equal(t, workflow.Warning, d.Severity, d.String())
}
