package benchproc

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"
)

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
// host's cores moves by the second (the same loop: 152–300 ms in one
// minute, BENCHMARKS.md), and every figure moves with it, so the
// benchmarks print it beside their load.
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
