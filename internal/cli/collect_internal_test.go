package cli

import (
	"math"
	"runtime/metrics"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCollectAfterLoadCollectsOnlyABigHeap: a heap of at least the limit
// is collected once; a smaller one is left alone.
func TestCollectAfterLoadCollectsOnlyABigHeap(t *testing.T) {
	forced := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	before := forced()
	require.False(t, collectAfterLoad(math.MaxUint64))
	require.Equal(t, before, forced(), "no collection under the limit")
	require.True(t, collectAfterLoad(1))
	require.Greater(t, forced(), before, "a collection at the limit")
}
