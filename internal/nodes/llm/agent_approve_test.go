package llm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A wait for approval is named after its call: the same call (tool and
// arguments) gets the same name, so a signal given for it decides it
// again; another call, or the same one later in the step, waits for a
// signal of its own.
func TestAwaitName(t *testing.T) {
	t.Parallel()
	args := map[string]any{"path": "a.txt", "content": "x"}
	same := map[string]any{"content": "x", "path": "a.txt"}
	first := awaitName(1, "fs.write_file", args)
	require.Regexp(t, `^1-[0-9a-f]{8}$`, first)
	require.Equal(t, first, awaitName(1, "fs.write_file", same))
	require.NotEqual(t, first, awaitName(1, "fs.write_file", map[string]any{"path": "b.txt", "content": "x"}))
	require.NotEqual(t, first, awaitName(1, "fs.edit_file", args))
	require.NotEqual(t, first, awaitName(2, "fs.write_file", args))
}
