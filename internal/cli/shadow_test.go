package cli_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Nodes named like expression built-ins (join, filter, count) validate and
// are read by templates; calls still reach the built-ins.
func TestNodeIDsNamedLikeBuiltins(t *testing.T) {
	t.Parallel()
	v := skein(t, "validate", "testdata/builtin-ids.yaml")
	require.Equal(t, 0, v.code, v.stdout+v.stderr)

	r, m := runJSON(t, "testdata/builtin-ids.yaml")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "completed", m["status"])
	outputs := m["outputs"].(map[string]any)
	require.Equal(t, "joined [1,2,3] 3 a+b 2", outputs["text"])
	require.EqualValues(t, 3, outputs["n"])
}
