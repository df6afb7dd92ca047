package node_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
)

type echo struct{}

func (echo) Run(_ context.Context, c *node.Call) (map[string]any, error) { return c.Params, nil }

func TestRegistry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec node.Spec
		want string
	}{
		{"empty kind", node.Spec{}, "without a kind"},
		{"unnamed param", node.Spec{Kind: "x", Params: []node.Param{{Type: node.String}}}, "without a name"},
		{"untyped param", node.Spec{Kind: "x", Params: []node.Param{{Name: "a"}}}, "has no type"},
		{"duplicate param", node.Spec{Kind: "x", Params: []node.Param{{Name: "a", Type: node.String}, {Name: "a", Type: node.Int}}}, "twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := node.NewRegistry().Register(tc.spec, nil)
			require.ErrorContains(t, err, tc.want)
		})
	}
	t.Run("duplicate kind", func(t *testing.T) {
		t.Parallel()
		r := node.NewRegistry()
		require.NoError(t, r.Register(node.Spec{Kind: "echo"}, func() node.Kind { return echo{} }))
		err := r.Register(node.Spec{Kind: "echo"}, nil)
		require.True(t, errors.Is(err, node.ErrDuplicate), "a second registration is refused, never overwritten")
		require.Panics(t, func() { r.MustRegister(node.Spec{Kind: "echo"}, nil) })
		k, ok := r.New("echo")
		require.True(t, ok)
		out, err := k.Run(context.Background(), &node.Call{Params: map[string]any{"a": 1}})
		require.NoError(t, err)
		require.Equal(t, map[string]any{"a": 1}, out)
		require.Equal(t, []string{"echo"}, r.Kinds())
	})
}

func TestRegistryClone(t *testing.T) {
	t.Parallel()
	base := node.NewRegistry()
	base.MustRegister(node.Spec{Kind: "echo"}, func() node.Kind { return echo{} })
	c := base.Clone()
	c.MustRegister(node.Spec{Kind: "extra"}, nil)
	base.MustRegister(node.Spec{Kind: "later"}, nil)

	require.Equal(t, []string{"echo", "extra"}, c.Kinds(), "the clone holds what the registry held, and its own kinds")
	require.Equal(t, []string{"echo", "later"}, base.Kinds(), "a kind added to the clone does not reach the registry it came from")
	k, ok := c.New("echo")
	require.True(t, ok, "the clone makes the registry's kinds")
	require.IsType(t, echo{}, k)
	require.ErrorIs(t, c.Register(node.Spec{Kind: "echo"}, nil), node.ErrDuplicate, "the clone refuses a kind it holds already")
}

func TestAsError(t *testing.T) {
	t.Parallel()
	require.Nil(t, node.AsError(nil))
	require.Equal(t, node.CategoryTimeout, node.AsError(context.DeadlineExceeded).Category)
	require.Equal(t, node.CategoryCancelled, node.AsError(context.Canceled).Category)
	e := node.Failf(node.CategoryHTTPStatus, "http_404", "not found")
	require.Same(t, e, node.AsError(e))
	require.Equal(t, node.CategoryExecution, node.AsError(errors.New("x")).Category)
}
