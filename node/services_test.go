package node_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
)

type clock interface{ Name() string }

type namedClock string

func (c namedClock) Name() string { return string(c) }

// TestServicesProvideAndLookup: a key finds the value its latest Provide
// gave it, the services a Provide extends do not change, and a key never
// provided (or provided as nil) is not found.
func TestServicesProvideAndLookup(t *testing.T) {
	a := node.NewService[clock]("clock a")
	b := node.NewService[string]("thing b")
	c := node.NewService[string]("thing c")

	_, ok := a.Lookup(nil)
	require.False(t, ok, "no services: nothing found")

	one := a.Provide(nil, namedClock("first"))
	two := b.Provide(one, "bee")
	three := a.Provide(two, namedClock("second"))

	got, ok := a.Lookup(three)
	require.True(t, ok)
	require.Equal(t, namedClock("second"), got, "the latest Provide wins")
	got, ok = a.Lookup(two)
	require.True(t, ok)
	require.Equal(t, namedClock("first"), got, "what a Provide extended is unchanged")
	s, ok := b.Lookup(three)
	require.True(t, ok)
	require.Equal(t, "bee", s)
	_, ok = b.Lookup(one)
	require.False(t, ok, "provided after one")
	_, ok = c.Lookup(three)
	require.False(t, ok, "never provided")

	hidden := a.Provide(three, nil)
	_, ok = a.Lookup(hidden)
	require.False(t, ok, "a service provided as nil hides the one before it")

	_, err := b.Get(&node.Call{NodeID: "n1", Services: one})
	require.ErrorContains(t, err, "node n1 needs thing b, which this host does not provide")

	require.Equal(t, "[clock a thing b]", three.String(), "each service once, the latest first")
	require.Equal(t, "no services", (*node.Services)(nil).String())
}
