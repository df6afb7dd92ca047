package cli

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// adviseHugePages makes room for the heap to grow into and asks the kernel
// to back the heap with huge pages: it allocates a block of size bytes,
// which the runtime maps next to the heap it has, and advises the whole
// mapping that holds it MADV_HUGEPAGE. The caller drops the block and
// collects: the heap then reuses its memory, a 2 MiB page at a time where
// it finds a 2 MiB stretch untouched. The runtime does not advise its
// heap, so where transparent huge pages are set to "madvise" (the default
// of many distributions) every 4 KiB of it costs a page fault, and on a
// virtual machine that gives freed memory back to its host each fault
// waits for the host: 10–15 µs in its slow hours, a large part of a big
// run's CPU (BENCHMARKS.md, 2026-12-06). It reports the mapping advised, 0, 0
// when it found none or the kernel refused the advice (a kernel without
// transparent huge pages).
func adviseHugePages(size int) (block []byte, lo, hi uintptr) {
	block = make([]byte, size)
	at := uintptr(unsafe.Pointer(unsafe.SliceData(block)))
	lo, hi = mappingOf(at)
	if lo == 0 {
		return block, 0, 0
	}
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_HUGEPAGE); errno != 0 {
		return block, 0, 0
	}
	return block, lo, hi
}

// mappingOf returns the bounds of the mapping that holds at, from
// /proc/self/maps; 0, 0 when it cannot tell.
func mappingOf(at uintptr) (lo, hi uintptr) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 7f21c6e00000-7f21c8e00000 rw-p 00000000 00:00 0
		rng, _, _ := bytes.Cut(sc.Bytes(), []byte(" "))
		a, z, ok := bytes.Cut(rng, []byte("-"))
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(string(a), 16, 64)
		end, err2 := strconv.ParseUint(string(z), 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if uintptr(start) <= at && at < uintptr(end) {
			return uintptr(start), uintptr(end)
		}
	}
	return 0, 0
}
