package shell

import (
	"unicode/utf8"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/node"
)

// tailSize is how much of the end of stdout and of stderr a failure's
// details carry.
const tailSize = 2 << 10

// capture keeps the first limit bytes written to it and counts the rest,
// which it drops. It never fails a write, so a command with a lot to say is
// not killed by a broken pipe. With tail set it also keeps the last tailSize
// bytes, dropped or not. Its pipe's copy writes to it from one goroutine,
// and drain returns only after that goroutine is done, so it needs no lock.
//
// With blobs set, a text that grows past spillAt bytes is moved to a blob
// of the run and written there as it comes: only the last chunk stays in
// memory, so a command's output takes its limit in memory no more.
type capture struct {
	limit   int
	keepEnd bool
	buf     []byte
	dropped int
	end     []byte

	blobs node.Blobs
	w     node.BlobWriter // the blob the text goes to, once it is long
	n     int             // bytes kept, in buf and in w
	err   error           // writing the blob failed
}

// spillAt is the length past which a captured text goes to a blob: the
// host's inline limit, above which it would move the text anyway.
const spillAt = blob.InlineLimit

// Chunks of a text that goes to a blob: it is written flushAt bytes at a
// time, holding back the last holdBack bytes, where a character the limit
// cuts in two would be.
const (
	flushAt  = 64 << 10
	holdBack = utf8.UTFMax - 1
)

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	if room := c.limit - c.n; room > 0 {
		k := min(room, n)
		c.keep(p[:k])
		c.dropped += n - k
	} else {
		c.dropped += n
	}
	if c.keepEnd {
		c.keepLast(p)
	}
	return n, nil
}

// keep appends p to the kept text.
func (c *capture) keep(p []byte) {
	c.n += len(p)
	if c.w == nil && c.blobs != nil && len(c.buf)+len(p) > spillAt {
		w, err := c.blobs.Create()
		if err != nil {
			c.err = err
			c.blobs = nil
		} else {
			c.w = w
		}
	}
	c.buf = append(c.buf, p...)
	if c.w != nil && len(c.buf) >= flushAt {
		cut := len(c.buf) - holdBack
		if c.err == nil {
			if _, err := c.w.Write(c.buf[:cut]); err != nil {
				c.err = err
			}
		}
		c.buf = c.buf[:copy(c.buf, c.buf[cut:])]
	}
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

// droppedBytes is how many bytes were dropped. When the limit cut a
// character in two, its first bytes are dropped too, so the text stays
// valid UTF-8 where the output was.
func (c *capture) droppedBytes() int {
	if c.dropped == 0 {
		return 0
	}
	return c.dropped + len(c.buf) - len(cutPartialRune(c.buf))
}

// kept returns the kept text, without the bytes droppedBytes counts: a
// string, or what the blob it went to gave in its place
// (node.BlobWriter.Commit).
func (c *capture) kept() (any, error) {
	b := c.buf
	if c.dropped > 0 {
		b = cutPartialRune(c.buf)
	}
	if c.w == nil {
		return string(b), nil
	}
	if c.err == nil {
		if _, err := c.w.Write(b); err != nil {
			c.err = err
		}
	}
	if c.err != nil {
		c.w.Abort()
		return nil, c.err
	}
	return c.w.Commit()
}

// abort drops the blob the text went to, if any.
func (c *capture) abort() {
	if c.w != nil {
		c.w.Abort()
	}
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
