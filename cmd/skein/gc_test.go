package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTheFirstCollectionComesLate: until the first collection the heap
// may grow to 60 MiB (GOGC 1500); from then on GOGC is 400.
func TestTheFirstCollectionComesLate(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	runtime.GC() // the heap this test starts with is small

	switched := collectLate()
	require.Equal(t, int64(firstGCPercent), readGC(t, "/gc/gogc:percent"))
	require.GreaterOrEqual(t, readGC(t, "/gc/heap/goal:bytes"), int64(60<<20), "no collection before the heap is 60 MiB")

	runtime.GC()
	<-switched
	require.Equal(t, int64(gcPercent), readGC(t, "/gc/gogc:percent"), "GOGC from the first collection on")
}

func readGC(t *testing.T, name string) int64 {
	t.Helper()
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	require.Equal(t, metrics.KindUint64, s[0].Value.Kind(), name)
	return int64(s[0].Value.Uint64())
}
