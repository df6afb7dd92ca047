package workflow_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

func TestDecodeTrace(t *testing.T) {
	t.Parallel()
	const nodes = "nodes:\n  - id: a\n    type: set\n    vars: {x: 1}\n"
	tests := []struct {
		name string
		src  string
		want workflow.Trace
		err  string
	}{
		{name: "absent", src: "version: 1\nname: t\n" + nodes, want: ""},
		{name: "nodes", src: "version: 1\nname: t\ntrace: nodes\n" + nodes, want: workflow.TraceNodes},
		{name: "run", src: "version: 1\nname: t\ntrace: run\n" + nodes, want: workflow.TraceRun},
		{name: "unknown", src: "version: 1\nname: t\ntrace: node\n" + nodes,
			err: `t.yaml:3:8: error: trace must be run or nodes, not "node"; did you mean "nodes"?`},
		{name: "not a string", src: "version: 1\nname: t\ntrace: [nodes]\n" + nodes, err: "t.yaml:3:8: error:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, ds := workflow.Decode("t.yaml", []byte(tc.src))
			if w != nil {
				ds = append(ds, workflow.Validate(w, node.Default)...)
			}
			if tc.err != "" {
				require.True(t, ds.HasErrors(), "want an error containing %q", tc.err)
				require.Contains(t, ds.Error(), tc.err)
				return
			}
			require.False(t, ds.HasErrors(), ds.Error())
			require.Equal(t, string(tc.want), string(w.Trace))
		})
	}
}

func TestTraces(t *testing.T) {
	t.Parallel()
	var none *workflow.Workflow
	require.Equal(t, string(workflow.TraceRun), string(none.Traces("")), "no workflow, no flag: the default")
	w := &workflow.Workflow{}
	require.Equal(t, string(workflow.TraceRun), string(w.Traces("")))
	w.Trace = workflow.TraceNodes
	require.Equal(t, string(workflow.TraceNodes), string(w.Traces("")), "the workflow's field")
	require.Equal(t, string(workflow.TraceRun), string(w.Traces(workflow.TraceRun)), "the flag wins")
}
