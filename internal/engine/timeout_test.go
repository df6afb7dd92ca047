package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// deadlineKind outputs whether its call's context has a deadline.
type deadlineKind struct{}

func (deadlineKind) Run(ctx context.Context, _ *node.Call) (map[string]any, error) {
	_, has := ctx.Deadline()
	return map[string]any{"deadline": has}, nil
}

// TestPureTaskGetsNoTimer: a node's timeout is its call's deadline, but
// for a kind declared pure, which computes at once and waits for nothing:
// its call gets no timer.
func TestPureTaskGetsNoTimer(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry()
	for kind, pure := range map[string]bool{"deadline-pure": true, "deadline-io": false} {
		reg.MustRegister(node.Spec{
			Kind: kind, Category: node.Action, Pure: pure, Description: "Test kind: reports its deadline.",
			Outputs: []string{"deadline"},
		}, func() node.Kind { return deadlineKind{} })
	}
	file := filepath.Join(t.TempDir(), "f.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`version: 1
name: f
nodes:
  - {id: pure, type: deadline-pure, timeout: 5s}
  - {id: io, type: deadline-io, timeout: 5s}
`), 0o644))
	w, ds := workflow.Load(file, reg)
	require.False(t, ds.HasErrors(), ds.Error())
	plan, err := engine.NewPlan(w, reg)
	require.NoError(t, err)
	res, err := engine.NewDriver(reg, nil, 4).Execute(context.Background(), plan, engine.Options{RunID: "r"})
	require.NoError(t, err)
	require.Equal(t, engine.RunCompleted, res.Status, "%v", res.Error)
	outs := map[string]any{}
	for _, s := range res.Steps {
		outs[s.Node] = s.Output["deadline"]
	}
	require.Equal(t, map[string]any{"pure": false, "io": true}, outs)
}
