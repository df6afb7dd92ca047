package cli

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/workflow"
)

// TestCollectAfterLoadCollectsOnlyABigHeapOrARepeatingWorkflow: a heap
// of at least the limit is collected once, and so is the heap of a
// workflow with a foreach or a loop node whatever its size; a smaller
// heap of a workflow without them is left alone.
func TestCollectAfterLoadCollectsOnlyABigHeapOrARepeatingWorkflow(t *testing.T) {
	chain := &workflow.Workflow{Nodes: []*workflow.Node{{ID: "start", Type: "trigger.manual"}, {ID: "a", Type: "set"}}}
	before := forcedCollections()
	require.False(t, collectAfterLoad(math.MaxUint64, chain))
	require.Equal(t, before, forcedCollections(), "no collection under the limit")
	require.True(t, collectAfterLoad(1, chain))
	require.Greater(t, forcedCollections(), before, "a collection at the limit")

	for _, kind := range []string{"foreach", "loop"} {
		w := &workflow.Workflow{Nodes: []*workflow.Node{{ID: "start", Type: "trigger.manual"}, {ID: "each", Type: kind}}}
		before := forcedCollections()
		require.True(t, collectAfterLoad(math.MaxUint64, w), kind)
		require.Greater(t, forcedCollections(), before, "a collection for a workflow with a %s node", kind)
	}
}

// TestCollectEarlyLowersALateGOGC: a server or worker started with GOGC
// put off (cmd/skein's 1500) collects at GCPercent from the start; a
// GOGC the environment sets, or a lower one, is kept.
func TestCollectEarlyLowersALateGOGC(t *testing.T) {
	prev := debug.SetGCPercent(1500)
	defer debug.SetGCPercent(prev)
	unset := &env{lookupEnv: func(string) (string, bool) { return "", false }}
	collectEarly(unset)
	require.Equal(t, GCPercent, debug.SetGCPercent(1500), "1500 lowered")

	collectEarly(&env{lookupEnv: func(k string) (string, bool) { return "1500", k == "GOGC" }})
	require.Equal(t, 1500, debug.SetGCPercent(100), "GOGC=1500 in the environment is kept")

	collectEarly(unset)
	require.Equal(t, 100, debug.SetGCPercent(1500), "a lower GOGC is kept")
}

// TestRoomBeforeReadingOnlyForABigFile: a workflow file of bigFile bytes
// or more gets the heap's room in huge pages and one collection before it
// is read; a smaller one, or one that is not there, neither.
func TestRoomBeforeReadingOnlyForABigFile(t *testing.T) {
	dir := t.TempDir()
	small, big := filepath.Join(dir, "small.yaml"), filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(small, make([]byte, bigFile-1), 0o644))
	require.NoError(t, os.WriteFile(big, make([]byte, bigFile), 0o644))

	before := forcedCollections()
	require.False(t, roomBeforeReading(small))
	require.False(t, roomBeforeReading(filepath.Join(dir, "missing.yaml")))
	require.Equal(t, before, forcedCollections(), "no collection for a small file")
	require.True(t, roomBeforeReading(big))
	require.Greater(t, forcedCollections(), before, "a collection for a big one")
}

// forcedCollections is the count of the process's forced collections.
func forcedCollections() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
