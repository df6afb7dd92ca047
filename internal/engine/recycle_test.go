package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRecycledActionsChangeNothing: a run whose driver hands every Actions
// back (Recycle, as the local driver does) takes the same steps and events
// as one whose driver keeps them, and its calls fill the handed-back
// slices instead of new ones.
func TestRecycledActionsChangeNothing(t *testing.T) {
	t.Parallel()
	flows := map[string]string{
		"foreach, two items at a time": wf(`
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ [1, 2, 3, 4, 5] }}", concurrency: 2}
  - {id: item, type: act, out: {i: "{{ loop.item }}"}}
  - {id: next, type: endloop, loop: each}
  - {id: done, type: act, out: {n: "{{ len(each.results) }}"}}
`, `
  - {from: start, to: each}
  - {from: each, to: item, on: body}
  - {from: item, to: next}
  - {from: each, to: done, on: done}
`),
		"loop and branch": wf(`
  - {id: start, type: trigger.manual}
  - {id: lp, type: loop, max_iterations: 4}
  - {id: body, type: act, out: {n: "{{ loop.iteration }}"}}
  - {id: next, type: endloop, loop: lp}
  - {id: cond, type: if, condition: "lp.iterations > 2"}
  - {id: yes, type: act}
  - {id: no, type: act}
`, `
  - {from: start, to: lp}
  - {from: lp, to: body, on: body}
  - {from: body, to: next}
  - {from: lp, to: cond, on: done}
  - {from: cond, to: yes, on: "true"}
  - {from: cond, to: no, on: "false"}
`),
	}
	for name, src := range flows {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			kept := newSim(t, src)
			kept.start("")
			kept.drain()
			handed := newSim(t, src)
			handed.recycle = true
			handed.start("")
			handed.drain()

			require.Equal(t, kept.steps, handed.steps)
			require.Equal(t, kept.events, handed.events)
			require.Equal(t, kept.done.Status, handed.done.Status)
			require.Equal(t, kept.calls, handed.calls)
			require.Equal(t, handed.calls-1, handed.reused, "every call after the first filled the Actions handed back")
		})
	}
}

// TestRecycleKeepsNoValues: Actions handed back hold none of their values
// any more, even in the part of a slice the driver cut off (as the local
// driver cuts the steps it recorded itself): the outputs they held can be
// collected.
func TestRecycleKeepsNoValues(t *testing.T) {
	t.Parallel()
	s := newSim(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: a, type: act, out: {n: 1}}
`, `
  - {from: start, to: a}
`))
	a := s.start("")
	require.NotEmpty(t, a.Steps)
	steps := a.Steps
	a.Steps = a.Steps[:0]
	s.run.Recycle(a)
	for _, su := range steps {
		require.Empty(t, su.Node)
		require.Nil(t, su.Output)
	}
}
