package benchproc

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// State is the line the benchmarks print beside their load: what the
// first write to a page of fresh memory costs (PageTouch over 64 MiB),
// how long 10^8 multiply-adds take on one core (Spin), what a system
// call costs (Syscall) and what a random load costs within 4 MiB (more
// than a core's L2, a part of the L3) and within 32 MiB (Cycle.Load), each
// the median of three; and, on a virtual machine whose kernel gives the
// memory it frees back to its host (Reporting), in what blocks it does.
func State() (string, error) {
	var touch, spin, call, near, far []time.Duration
	small, big := NewCycle(4<<20), NewCycle(32<<20)
	for range 3 {
		t, err := PageTouch(64 << 20)
		if err != nil {
			return "", err
		}
		touch = append(touch, t)
		spin = append(spin, Spin(1e8))
		call = append(call, Syscall(1e5))
		near = append(near, small.Load(5e5))
		far = append(far, big.Load(5e5))
	}
	for _, ds := range [][]time.Duration{touch, spin, call, near, far} {
		slices.Sort(ds)
	}
	return fmt.Sprintf("a first write to a %d KiB page %.1f µs; 10^8 multiply-adds on one core %.0f ms; a system call %.2f µs; a random load within 4 MiB %d ns, 32 MiB %d ns",
		os.Getpagesize()/1024, float64(touch[1].Nanoseconds())/1e3, float64(spin[1].Nanoseconds())/1e6, float64(call[1].Nanoseconds())/1e3, near[1].Nanoseconds(), far[1].Nanoseconds()) +
		reported(os.DirFS("/sys"), os.Getpagesize()), nil
}

// reported is State's ending for a machine whose freed memory goes back
// to its host: what Reporting finds under sys, "" when it finds nothing.
func reported(sys fs.FS, page int) string {
	order, ok := Reporting(sys)
	if !ok {
		return ""
	}
	return fmt.Sprintf("; freed memory goes back to the host in %d KiB blocks", page<<order/1024)
}

// Reporting reports whether the kernel whose /sys is sys gives the memory
// it frees back to its host: a virtio balloon that offers free page
// reporting (its feature bit 5) and the kernel's page_reporting module,
// whose order (a block of 2^order pages) it returns. There a page that one
// process frees is given back, in whole blocks, and the next process to
// write to it waits for the host to provide it again: PageTouch's price is
// then what a process pays for every page of its heap, not only the first
// time the machine touches it (BENCHMARKS.md, 2026-12-06).
func Reporting(sys fs.FS) (order int, ok bool) {
	devices, _ := fs.Glob(sys, "bus/virtio/devices/*/device")
	for _, dev := range devices {
		id, err := fs.ReadFile(sys, dev)
		if err != nil || strings.TrimSpace(string(id)) != "0x0005" { // a balloon
			continue
		}
		bits, err := fs.ReadFile(sys, path.Join(path.Dir(dev), "features"))
		if err != nil || len(bits) <= 5 || bits[5] != '1' { // VIRTIO_BALLOON_F_REPORTING
			continue
		}
		o, err := fs.ReadFile(sys, "module/page_reporting/parameters/page_reporting_order")
		if err != nil {
			return 0, false
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(o)))
		return n, err == nil && n >= 0 && n < 20
	}
	return 0, false
}

// Cycle is a random cycle through a block of memory bigger than the CPU's
// caches, for Load.
type Cycle []uint32

// NewCycle makes a Cycle of size bytes: each entry the index of the next,
// in one cycle through all of them in a random order (Sattolo's
// algorithm), the same order every time.
func NewCycle(size int) Cycle {
	c := make(Cycle, max(size/4, 2))
	for i := range c {
		c[i] = uint32(i)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := len(c) - 1; i > 0; i-- {
		j := r.IntN(i)
		c[i], c[j] = c[j], c[i]
	}
	return c
}

// Load follows the cycle for n steps and returns what one step cost on
// average: a load that waits for the one before it, from wherever the
// cycle's block is kept (a cache, or memory), the price the multiply-adds
// of Spin never pay. Two machines with the same Spin can differ here, and
// so can one machine by the hour (a host's other guests share its L3 and
// its memory), and what a node costs (maps, JSON, a scheduler's state)
// moves with it.
func (c Cycle) Load(n int) time.Duration {
	start := time.Now()
	var at uint32
	for range n {
		at = c[at]
	}
	d := time.Since(start)
	runtime.KeepAlive(at)
	return d / time.Duration(n)
}

// Syscall returns what one of n system calls that do nothing (getppid)
// cost on average: the price of entering the kernel, which every read,
// write and wake-up of a node's hop pays (0.96 µs on the machine of
// BENCHMARKS.md, 2026-12-06).
func Syscall(n int) time.Duration {
	start := time.Now()
	for range n {
		syscall.Getppid()
	}
	return time.Since(start) / time.Duration(n)
}

// PageTouch maps size bytes of fresh anonymous memory, writes one byte to
// each of its pages and returns what the first write to a page cost on
// average: the price this machine asks for each page a process touches
// first (its binary, heap and stacks). A virtual machine's price moves by
// hours with the host (BENCHMARKS.md: 1–4 µs a 4 KiB page in its quick
// state, 10–15 in its slow one), and every figure that starts a process
// or grows a heap moves with it, so the benchmarks print it beside their
// load.
func PageTouch(size int) (time.Duration, error) {
	page := os.Getpagesize()
	if size < page {
		return 0, fmt.Errorf("page touch: %d bytes is less than a page (%d)", size, page)
	}
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return 0, fmt.Errorf("page touch: %w", err)
	}
	defer func() { _ = syscall.Munmap(mem) }()
	start := time.Now()
	for i := 0; i < len(mem); i += page {
		mem[i] = 1
	}
	return time.Since(start) / time.Duration(len(mem)/page), nil
}

// Spin times a fixed loop of n multiply-adds on one core: what the
// machine's CPU gives a process now. A virtual machine's share of its
// host's cores moves by the minute (10^8 of them: 31–43 ms in some
// minutes, 64–70 ms in others, BENCHMARKS.md), and every figure moves
// with it, so the benchmarks print it beside their load.
func Spin(n uint64) time.Duration {
	start := time.Now()
	var x uint64
	for i := range n {
		x += i * i
	}
	d := time.Since(start)
	runtime.KeepAlive(x) // the loop is not left out
	return d
}
