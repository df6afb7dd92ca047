//go:build !linux

package cli

// adviseHugePages allocates the block; only Linux is advised (see
// hugepages_linux.go).
func adviseHugePages(size int) (block []byte, lo, hi uintptr) {
	return make([]byte, size), 0, 0
}
