package upstream_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/upstream"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
	"github.com/skeinhq/skein/workflow"
)

const branches = `version: 1
name: branches
nodes:
  - {id: start, type: trigger.manual}
  - {id: a, type: template, text: a}
  - {id: off, type: template, text: off, disabled: true}
  - {id: gate, type: if, condition: "a.text == 'a'"}
  - id: yes
    type: template
    text: "yes {{ a.text }}"
  - {id: no, type: template, text: "no", checks: [{type: contains, value: "n"}]}
  - {id: after, type: template, text: "after {{ yes.text }}"}
  - {id: l, type: loop, exit: "true", max_iterations: 2}
  - {id: body, type: template, text: body}
  - {id: back, type: endloop, loop: l}
edges:
  - {from: start, to: a}
  - {from: a, to: off}
  - {from: off, to: gate}
  - {from: gate, to: "yes", on: "true"}
  - {from: gate, to: "no", on: "false"}
  - {from: "no", to: "yes"}
  - {from: "yes", to: after}
  - {from: after, to: l}
  - {from: l, to: body, on: body}
  - {from: body, to: back}
outputs:
  said: "{{ after.text }}"
`

func TestOf(t *testing.T) {
	t.Parallel()
	w, ds := workflow.LoadSource("branches.yaml", []byte(branches), node.Default)
	require.False(t, ds.HasErrors(), "%v", ds)
	for _, tc := range []struct {
		node string
		want []string
		err  string
	}{
		{node: "start"},
		{node: "a", want: []string{"start"}},
		{node: "yes", want: []string{"start", "a", "off", "gate", "no"}},
		{node: "body", err: `node "body" is on a loop`},
		{node: "zz", err: `no node "zz"`},
	} {
		t.Run(tc.node, func(t *testing.T) {
			got, err := upstream.Of(w, tc.node)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestCut(t *testing.T) {
	t.Parallel()
	cut, needed, err := upstream.Cut("branches.yaml", []byte(branches), node.Default, "yes")
	require.NoError(t, err)
	var ids []string
	for _, n := range cut.Nodes {
		ids = append(ids, n.ID)
	}
	require.Equal(t, []string{"start", "a", "off", "gate", "yes", "no"}, ids, "the node and its upstream, nothing after")
	require.Len(t, cut.Edges, 6)
	require.Equal(t, []string{"start", "a", "gate", "no"}, needed, "a disabled node is not needed")
	require.Nil(t, cut.Outputs, "the run's result is the node's output")
	require.Empty(t, cut.Node("no").Checks, "the upstream nodes' checks are not judged again")
	require.Nil(t, cut.Node("after"))
	require.Equal(t, branches, string(cut.Source), "a run of the cut records the whole text")
}
