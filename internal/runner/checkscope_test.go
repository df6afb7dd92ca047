package runner_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
)

// An expr check reads the run's inputs, trigger and secrets, when the run
// ends and when `skein check` evaluates the recorded run again.
func TestChecksReadTheRunsInputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein"), LookupEnv: func(k string) (string, bool) {
		return "s3cret-value", k == "API_TOKEN"
	}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	b := &bundle{ctx: t.Context(), r: r, dir: dir}
	w, err := b.r.Load(b.write(t, "double.yaml", `version: 1
name: double
secrets: [API_TOKEN]
inputs:
  n: {type: integer}
nodes:
  - {id: start, type: trigger.manual}
  - id: count
    type: set
    values: {n: "{{ inputs.n * 2 }}"}
    checks:
      - {name: doubled, type: expr, expr: "count.n == inputs.n * 2 && inputs.n == 21 && trigger.n == 21"}
      - {name: token, type: expr, expr: "len(secrets.API_TOKEN) == 12"}
edges:
  - {from: start, to: count}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w, Inputs: map[string]any{"n": 21}})
	require.NoError(t, err)
	require.NoError(t, res.Err)
	require.NotNil(t, res.Verdict)
	require.Equal(t, "PASSED", res.Verdict.Status, "%+v", res.Verdict.Nodes)
	require.Len(t, res.Verdict.Nodes[0].Checks, 2)
	again, err := b.r.Check(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.Equal(t, "PASSED", again.Status, "%+v", again.Nodes)
}
