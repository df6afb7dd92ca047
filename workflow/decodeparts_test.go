package workflow_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/workflow"
)

// A long node list decoded in parts on several cores gives the nodes and
// the diagnostics (in their order) it gives decoded in one go, mistakes
// in any part included.
func TestNodesDecodedInPartsAsInOneGo(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nname: parts\nnodes:\n")
	for i := range 1500 {
		switch i % 97 {
		case 5:
			b.WriteString("  - just a string\n") // not a map
		case 11:
			fmt.Fprintf(&b, "  - {type: set, values: {i: %d}}\n", i) // no id
		case 23:
			fmt.Fprintf(&b, "  - {id: n%d, retries: lots, timeout: 5x}\n", i) // no type, bad fields
		case 31:
			fmt.Fprintf(&b, "  - {id: n%d, type: set, checks: [{type: nope}], on_error: maybe}\n", i)
		default:
			fmt.Fprintf(&b, "  - {id: n%d, type: set, name: step %d, values: {i: %d, s: \"{{ inputs.x }}\"}, timeout: 2s}\n", i, i, i)
		}
	}
	src := []byte(b.String())
	decode := func(procs int) (*workflow.Workflow, workflow.Diagnostics) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		return workflow.Decode("parts.yaml", src)
	}
	one, d1 := decode(1)
	many, d4 := decode(4)
	require.NotEmpty(t, d1.Errors(), "the list has mistakes")
	require.Equal(t, d1, d4)
	require.Len(t, many.Nodes, len(one.Nodes))
	for i := range one.Nodes {
		a, b := one.Nodes[i], many.Nodes[i]
		require.Equal(t, a.Map(), b.Map(), "node %d", i)
		require.Equal(t, a.Pos, b.Pos)
		require.Equal(t, a.Timeout, b.Timeout)
		require.Equal(t, a.Retries, b.Retries)
		require.Equal(t, a.Checks, b.Checks)
	}
}
