package cli

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"

	"github.com/skeinhq/skein/internal/nodes/control"
	"github.com/skeinhq/skein/workflow"
)

// loadGarbage is how big the heap must be, once `skein run` has read its
// workflow, for collectAfterLoad to collect it: what reading a workflow of
// ~400 nodes leaves (1 MB from the process's start, then ~7 KB a node,
// most of it the YAML parser's).
const loadGarbage = 4 << 20

// collectAfterLoad collects the heap between reading a workflow and
// running it, and reports whether it did: when the heap holds at least
// limit bytes of objects, or when the workflow repeats nodes (a foreach or
// a loop node: a run whose size its file does not tell). Before it
// collects, it gives the heap its room in huge pages (giveHugeRoom),
// unless roomBeforeReading did already.
//
// After reading a big workflow most of what reading made is garbage (of
// a 1,000-node chain's 8.4 MB, ~3 MB is live), and the run's records then
// reuse that memory instead of taking new pages. A new page costs a fault,
// and on a virtual machine that gives the memory it frees back to its
// host (free page reporting) one that waits for the host, 11 µs a page in
// its slow hours: there a 1,000-node chain's run took ~1,170 fewer pages,
// 5% less time and 9% less CPU. The room in huge pages (for such a chain
// given before reading, roomBeforeReading) then halved its pages again,
// and took half the pages and 30% of the CPU off a 1,000-item foreach's
// run.
// A small workflow without a foreach or loop is run as it is: a
// collection and the room cost its run ~200 pages more than it saves
// (BENCHMARKS.md, 2026-12-06).
func collectAfterLoad(limit uint64, w *workflow.Workflow) bool {
	if !repeats(w) {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 || s[0].Value.Uint64() < limit {
			return false
		}
	}
	giveHugeRoom()
	runtime.GC()
	return true
}

// repeats reports whether w has a foreach or a loop node.
func repeats(w *workflow.Workflow) bool {
	for _, n := range w.Nodes {
		if n.Type == control.ForEach || n.Type == control.Loop {
			return true
		}
	}
	return false
}

// giveHugeRoom gives the heap hugeRoom bytes more to reuse, advised for
// huge pages (adviseHugePages), once a process; the collection that
// follows frees them. Where the kernel backs advised memory with huge
// pages (transparent huge pages set to "madvise", or "always"), the
// process then takes its memory mostly 2 MiB at a time: one fault for
// what took 512.
func giveHugeRoom() {
	hugeOnce.Do(func() { adviseHugePages(hugeRoom) }) // the block is garbage at once
}

var hugeOnce sync.Once

// roomBeforeReading is for `skein run` before it reads the workflow file
// at path: when the file holds bigFile bytes or more, it gives the heap
// hugeRoom bytes advised for huge pages and collects, so that reading the
// workflow, not only running it, takes its memory 2 MiB at a time. It
// reports whether it did. A smaller file is read as it is: the collection
// and the room's bookkeeping cost a short run more than its few pages.
func roomBeforeReading(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() < bigFile {
		return false
	}
	giveHugeRoom()
	runtime.GC()
	return true
}

// bigFile is the size from which a workflow file is read into huge pages
// (roomBeforeReading): a chain of ~300 nodes.
const bigFile = 16 << 10

// hugeRoom is the room giveHugeRoom gives the heap in huge pages: about
// what reading and running a 1,000-node chain allocates.
const hugeRoom = 32 << 20

// GCPercent is the GOGC of a skein process: of `skein run` from its first
// collection on (cmd/skein's collectLate, which puts that collection off),
// of `skein serve` and `skein worker` from the start (collectEarly).
const GCPercent = 400

// collectEarly is for a command that runs until it is stopped (serve,
// worker): it lowers GOGC to GCPercent at once, unless GOGC is set or
// is lower already. cmd/skein puts the first collection off to a 60 MiB
// heap for a short `skein run`; a server or a worker gains nothing from
// that, and a new one took every page of its first 60 MiB of allocations
// new: a new worker's first ~1,200 `http` nodes 12.8 new pages each and a
// third of its CPU where new pages are dear, a server's first second of a
// webhook burst its slowest answers (BENCHMARKS.md, 2026-12-06). First it
// gives the heap its room in huge pages (adviseHugePages) and collects to
// free it: a new worker then took 0.7–0.8 new pages an `http` node instead
// of 2.6–3.0.
func collectEarly(e *env) {
	giveHugeRoom()
	runtime.GC() // frees the room
	if _, set := e.lookupEnv("GOGC"); set {
		return
	}
	if prev := debug.SetGCPercent(GCPercent); prev >= 0 && prev < GCPercent {
		debug.SetGCPercent(prev)
	}
}
