package cli

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestAdviseHugePagesAdvisesTheHeapsMapping: the block lies in the mapping
// adviseHugePages reports, and the kernel lists that mapping as advised
// for huge pages (VmFlags "hg"); a kernel without transparent huge pages
// refuses the advice, and then no mapping is reported.
func TestAdviseHugePagesAdvisesTheHeapsMapping(t *testing.T) {
	block, lo, hi := adviseHugePages(8 << 20)
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); os.IsNotExist(err) {
		require.Zero(t, lo, "a kernel without transparent huge pages takes no advice")
		return
	}
	require.NotZero(t, lo, "the heap's mapping found and advised")
	at := uintptr(unsafe.Pointer(unsafe.SliceData(block)))
	require.True(t, lo <= at && at+uintptr(len(block)) <= hi, "the block %x lies in %x-%x", at, lo, hi)

	smaps, err := os.ReadFile("/proc/self/smaps")
	require.NoError(t, err)
	head := fmt.Sprintf("%x-%x ", lo, hi)
	i := strings.Index(string(smaps), head)
	require.GreaterOrEqual(t, i, 0, "the mapping %s in /proc/self/smaps", head)
	entry := string(smaps[i:])
	flags := entry[strings.Index(entry, "VmFlags:"):]
	flags = flags[:strings.IndexByte(flags, '\n')]
	require.Contains(t, strings.Fields(flags), "hg", "advised for huge pages: %s", flags)
}

// TestMappingOfFindsNothingOutsideTheMaps: an address no mapping holds
// (the first page, never mapped) gives 0, 0.
func TestMappingOfFindsNothingOutsideTheMaps(t *testing.T) {
	lo, hi := mappingOf(1)
	require.Zero(t, lo)
	require.Zero(t, hi)
}
