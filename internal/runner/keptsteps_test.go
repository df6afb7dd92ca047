package runner_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
)

const longLoop = `version: 1
name: long
inputs:
  n: {type: integer, default: 40}
nodes:
  - {id: start, type: trigger.manual}
  - {id: lp, type: loop, max_iterations: 1000, exit: "(vars.n ?? 0) >= inputs.n"}
  - id: body
    type: set
    vars: {n: "{{ (vars.n ?? 0) + 1 }}"}
    values: {n: "{{ (vars.n ?? 0) + 1 }}"}
    checks:
      - {name: counted, type: expr, expr: "body.n == 40"}
  - {id: odd, type: if, condition: "vars.n % 2 == 1"}
  - {id: mark, type: set, values: {odd: "{{ vars.n }}"}}
  - {id: next, type: endloop, loop: lp}
  - {id: done, type: set, values: {n: "{{ vars.n }}"}}
edges:
  - {from: start, to: lp}
  - {from: lp, to: body, on: body}
  - {from: body, to: odd}
  - {from: odd, to: mark, on: "true"}
  - {from: odd, to: next, on: "false"}
  - {from: mark, to: next}
  - {from: lp, to: done, on: done}
outputs:
  n: "{{ done.n }}"
`

// A run past Config.KeptSteps lets go of its finished step records, and
// nothing a user reads changes: run.json, skein run -o json's document and
// the stored run's document list every step, as a run that kept them all
// does, and the checks see the latest step of each node.
func TestALongRunsDocumentComesFromTheStore(t *testing.T) {
	t.Parallel()
	run := func(kept int) (*runner.Runner, *runner.Result) {
		t.Helper()
		dir := t.TempDir()
		r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein"), KeptSteps: kept})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, r.Close()) })
		p := filepath.Join(dir, "long.yaml")
		require.NoError(t, os.WriteFile(p, []byte(longLoop), 0o644))
		w, err := r.Load(p)
		require.NoError(t, err)
		res, err := r.Start(t.Context(), runner.StartRequest{Workflow: w, Inputs: map[string]any{"n": 40}})
		require.NoError(t, err)
		require.NoError(t, res.Err)
		require.Equal(t, "completed", string(res.Run.Status), "%+v", res.Run.Error)
		return r, res
	}
	r, res := run(8)
	require.Positive(t, res.Engine.Dropped, "a run of ~200 steps let go of most")
	require.Less(t, len(res.Engine.Steps), 30)
	require.NotNil(t, res.Verdict)

	stored, err := r.Get(t.Context(), res.Run.ID)
	require.NoError(t, err)
	storedJSON, err := json.Marshal(stored)
	require.NoError(t, err)
	runJSON, err := os.ReadFile(filepath.Join(res.Run.Dir, "run.json"))
	require.NoError(t, err)
	require.JSONEq(t, string(storedJSON), string(runJSON), "run.json is the stored run's document")
	var streamed bytes.Buffer
	require.NoError(t, r.StreamDoc(t.Context(), res).WriteJSON(&streamed))
	require.JSONEq(t, string(storedJSON), streamed.String(), "-o json's document is the stored run's")
	whole, err := json.Marshal(r.Doc(t.Context(), res))
	require.NoError(t, err)
	require.JSONEq(t, string(storedJSON), string(whole), "Doc reads every step back")

	_, all := run(0)
	require.Zero(t, all.Engine.Dropped, "the default keeps a short run's records")
	require.Equal(t, all.Run.Outputs, res.Run.Outputs)
	require.EqualValues(t, 40, res.Run.Outputs["n"])
	require.Equal(t, shownSteps(t, r.Doc(t.Context(), all)), shownSteps(t, stored))
}

// shownSteps is what a document says of each step, times and ids aside.
func shownSteps(t *testing.T, d *runner.RunDoc) []string {
	t.Helper()
	out := make([]string, 0, len(d.Steps))
	for _, s := range d.Steps {
		out = append(out, fmt.Sprintf("%d %s/%d #%d %s %s attempts=%d out=%v err=%v", s.StepOrder, s.Node, s.Visit,
			s.Iteration, s.Status, s.SkipReason, s.Attempts, s.Output, s.Error))
	}
	require.Greater(t, len(out), 150)
	return out
}
