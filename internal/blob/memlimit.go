package blob

import (
	"math"
	"runtime/debug"
	"sync"
)

// MemoryLimit is the soft memory limit (GOMEMLIMIT) a process needs to run
// a run that keeps up to budget bytes of output values in memory: twice
// that, and room for the rest, so that the garbage collector keeps the
// garbage of big values under it without running all the time.
func MemoryLimit(budget int64) int64 {
	return 2*budget + 64<<20
}

var memoryLimitMu sync.Mutex

// RaiseMemoryLimit raises the process's soft memory limit, when it has
// one, to what a run with this output budget needs.
func RaiseMemoryLimit(budget int64) {
	if budget <= 0 {
		budget = DefaultBudget
	}
	memoryLimitMu.Lock()
	defer memoryLimitMu.Unlock()
	if cur := debug.SetMemoryLimit(-1); cur != math.MaxInt64 && cur < MemoryLimit(budget) {
		debug.SetMemoryLimit(MemoryLimit(budget))
	}
}
