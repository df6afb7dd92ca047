package workflow

import (
	"fmt"
	"math"

	"github.com/dustin/go-humanize"
)

// Bounds of limits.max_output_memory.
const (
	MinOutputMemory = 1 << 20
	MaxOutputMemory = 1 << 40
)

// ParseSize reads a size in bytes: a whole number, or a number with a unit
// such as "512KiB", "256MiB", "1.5GB" or "2 GiB" (units of 1000 and of
// 1024 bytes, as go-humanize reads them).
func ParseSize(s string) (int64, error) {
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size (write e.g. 256MiB, 1GiB or a number of bytes)", s)
	}
	if n > math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(n), nil
}

// byteSize decodes a size in bytes between lo and hi: a whole number or a
// string that ParseSize reads.
func (dec *decoder) byteSize(v *value, path string, lo, hi int64) (int64, bool) {
	var n int64
	switch v.kind {
	case vInt:
		n = v.i
	case vString:
		var err error
		if n, err = ParseSize(v.s); err != nil {
			dec.d.errorf(v.pos, path, "", "bad size for %s: %v", lastKey(path), err)
			return 0, false
		}
	default:
		dec.typeErr(v, path, "", "a size such as 256MiB")
		return 0, false
	}
	if n < lo || n > hi {
		got := fmt.Sprint(n)
		if n > 0 {
			got = humanize.IBytes(uint64(n))
		}
		dec.d.errorf(v.pos, path, "", "%s must be between %s and %s, not %s",
			lastKey(path), humanize.IBytes(uint64(lo)), humanize.IBytes(uint64(hi)), got)
		return 0, false
	}
	return n, true
}
