package runner_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/workflow"
)

// tracedFlows are a parent whose subworkflow node runs a child; trace is
// the parent's trace: line.
func tracedFlows(t *testing.T, trace string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "child.yaml"), []byte(`version: 1
name: child
nodes:
  - {id: twice, type: set, values: {n: 2}}
`), 0o644))
	p := filepath.Join(dir, "parent.yaml")
	require.NoError(t, os.WriteFile(p, []byte(`version: 1
name: parent
`+trace+`
nodes:
  - {id: first, type: set, values: {n: 1}}
  - {id: sub, type: subworkflow, workflow: child.yaml}
edges:
  - {from: first, to: sub}
`), 0o644))
	return p
}

// nodeStatus reads the status in <dir>/<node>/run.json.
func nodeStatus(t *testing.T, dir, node string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, node, "run.json"))
	require.NoError(t, err)
	var n struct {
		Node   string `json:"node"`
		Trace  string `json:"trace"`
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal(data, &n))
	require.Equal(t, node, n.Node)
	require.Equal(t, "nodes", n.Trace)
	return n.Status
}

// TestTraceNodesOnDemandAndChildRuns: with run folders made on demand
// (skein serve's default), a run traced with nodes gets its folder when it
// ends, with run.json and the node files but no events.jsonl of its own;
// one traced with run keeps no folder. A child run is traced as the
// command's --trace says, else as its own workflow does.
func TestTraceNodesOnDemandAndChildRuns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		field       string
		flag        workflow.Trace
		parent      bool // the parent's folder has node files
		childTraced bool
	}{
		{name: "trace: nodes", field: "trace: nodes", parent: true},
		{name: "--trace nodes", flag: workflow.TraceNodes, parent: true, childTraced: true},
		{name: "default", parent: false},
		{name: "--trace run over trace: nodes", field: "trace: nodes", flag: workflow.TraceRun, parent: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), ".skein")
			r, err := runner.Open(runner.Config{Dir: dir, OnDemandFolders: true, Clock: clock.NewFake(time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC))})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, r.Close()) })
			w, err := r.Load(tracedFlows(t, tc.field))
			require.NoError(t, err)
			res, err := r.Start(t.Context(), runner.StartRequest{Workflow: w, Options: runner.Options{Trace: tc.flag}})
			require.NoError(t, err)
			require.NoError(t, res.Err)
			require.Equal(t, "completed", string(res.Run.Status))

			if !tc.parent {
				require.NoDirExists(t, res.Run.Dir, "an on-demand run that keeps nothing gets no folder")
			} else {
				require.FileExists(t, filepath.Join(res.Run.Dir, "run.json"))
				require.NoFileExists(t, filepath.Join(res.Run.Dir, "events.jsonl"), "an on-demand run's events are in the database")
				require.Equal(t, "success", nodeStatus(t, res.Run.Dir, "first"))
				require.Equal(t, "success", nodeStatus(t, res.Run.Dir, "sub"))
				require.FileExists(t, filepath.Join(res.Run.Dir, "sub", "events.jsonl"))
			}

			kids, err := r.List(t.Context(), runner.ListRequest{Parent: res.Run.ID})
			require.NoError(t, err)
			require.Len(t, kids, 1)
			if tc.childTraced {
				require.Equal(t, "success", nodeStatus(t, kids[0].Dir, "twice"), "the child is traced as the command says")
			} else {
				require.NoFileExists(t, filepath.Join(kids[0].Dir, "twice", "run.json"))
			}
		})
	}
}
