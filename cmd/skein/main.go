// Command skein runs, validates and inspects Skein workflows.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"syscall"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/cli"
	_ "github.com/skeinhq/skein/node/standard"
)

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		collectLate()
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		// A soft limit on the heap, so that at GOGC=400 the garbage of big
		// values does not pile up beyond a run's output budget; a run
		// whose workflow sets a larger budget raises it. GOMEMLIMIT
		// overrides.
		debug.SetMemoryLimit(blob.MemoryLimit(blob.DefaultBudget))
	}
	os.Exit(profiled(run))
}

// collectLate tunes the garbage collector for a process that allocates a
// lot of short-lived records and keeps little. Until its first collection
// GOGC is 1500, so that it comes when the heap reaches 60 MiB (4 MiB ×
// GOGC/100) rather than 16 MiB: a run of a workflow of up to ~400 nodes
// is read, planned and run without one (a collection in the middle of a
// 1,000-node chain cost it 5–20%, BENCHMARKS.md), for ~5 MB more
// resident memory; a bigger workflow, or one with a foreach or loop node,
// is collected once between reading and running it, while its heap is
// mostly the reading's garbage (the run command's collectAfterLoad). From the first collection on, GOGC is 400:
// collecting at 4× the live heap instead of 2× cut `skein run` of a
// 10,000-item foreach by ~15%. `skein serve` and `skein worker`, which
// run until stopped, set 400 at once (the command's collectEarly). The
// soft memory limit (below) holds either way. GOGC overrides both.
//
// The returned channel is closed once GOGC is 400.
func collectLate() <-chan struct{} {
	debug.SetGCPercent(firstGCPercent)
	switched := make(chan struct{})
	type sentinel struct{ _ *int } // holds a pointer: not packed with other small objects
	runtime.AddCleanup(&sentinel{}, func(int) {
		debug.SetGCPercent(gcPercent)
		close(switched)
	}, 0)
	return switched
}

// firstGCPercent and gcPercent are collectLate's GOGC before and after the
// first collection.
const (
	firstGCPercent = 1500
	gcPercent      = cli.GCPercent
)

// profiled runs fn, with a CPU profile of it written to the file
// SKEIN_CPUPROFILE names when that is set, and a profile of what it
// allocated to the file SKEIN_MEMPROFILE names (for `go tool pprof`;
// BENCHMARKS.md profiles skein run this way), and an execution trace to
// the file SKEIN_TRACE names (for `go tool trace`: what waited for what).
func profiled(fn func() int) int {
	if path := os.Getenv("SKEIN_MEMPROFILE"); path != "" {
		// A sample every 4 KiB allocated (not every 512 KiB): a short
		// run's allocations are seen.
		runtime.MemProfileRate = 4 << 10
		defer writeAllocs(path)
	}
	if path := os.Getenv("SKEIN_TRACE"); path != "" {
		if f, err := os.Create(path); err != nil {
			fmt.Fprintln(os.Stderr, "skein: SKEIN_TRACE:", err)
		} else if err := trace.Start(f); err != nil {
			fmt.Fprintln(os.Stderr, "skein: SKEIN_TRACE:", err)
		} else {
			defer f.Close()
			defer trace.Stop()
		}
	}
	path := os.Getenv("SKEIN_CPUPROFILE")
	if path == "" {
		return fn()
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "skein: SKEIN_CPUPROFILE:", err)
		return fn()
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "skein: SKEIN_CPUPROFILE:", err)
		return fn()
	}
	defer pprof.StopCPUProfile()
	return fn()
}

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// writeAllocs writes the profile of what the process allocated to path.
func writeAllocs(path string) {
	runtime.GC() // the profile counts what was allocated until the last collection
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "skein: SKEIN_MEMPROFILE:", err)
	}
}
