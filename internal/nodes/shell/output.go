package shell

import (
	"unicode/utf8"
)

// tailSize is how much of the end of stderr a failure's details carry.
const tailSize = 2 << 10

// capture keeps the first limit bytes written to it and counts the rest,
// which it drops. It never fails a write, so a command with a lot to say is
// not killed by a broken pipe. With tail set it also keeps the last tailSize
// bytes, dropped or not. exec.Cmd writes to it from one goroutine and Wait
// returns only after that goroutine is done, so it needs no lock.
type capture struct {
	limit   int
	keepEnd bool
	buf     []byte
	dropped int
	end     []byte
}

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	if room := c.limit - len(c.buf); room > 0 {
		k := min(room, n)
		c.buf = append(c.buf, p[:k]...)
		c.dropped += n - k
	} else {
		c.dropped += n
	}
	if c.keepEnd {
		c.keepLast(p)
	}
	return n, nil
}

// keepLast appends p to end, keeping only its last tailSize bytes.
func (c *capture) keepLast(p []byte) {
	if len(p) >= tailSize {
		c.end = append(c.end[:0], p[len(p)-tailSize:]...)
		return
	}
	if over := len(c.end) + len(p) - tailSize; over > 0 {
		c.end = c.end[:copy(c.end, c.end[over:])]
	}
	c.end = append(c.end, p...)
}

// kept returns the kept text and how many bytes were dropped. When the
// limit cut a character in two, its first bytes are dropped too, so the
// text stays valid UTF-8 where the output was.
func (c *capture) kept() ([]byte, int) {
	if c.dropped == 0 {
		return c.buf, 0
	}
	b := cutPartialRune(c.buf)
	return b, c.dropped + len(c.buf) - len(b)
}

// tail returns the last bytes written, starting at a character boundary.
func (c *capture) tail() string {
	b := c.end
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return string(b)
}

// cutPartialRune drops an incomplete multi-byte character at the end of b.
func cutPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// parseJSON returns b parsed as one JSON value, with whole numbers as int
// and other numbers as float64. It reports false when b is empty, is not
