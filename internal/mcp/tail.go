package mcp

import (
	"sync"
	"unicode/utf8"
)

// tailSize is how much of the end of a server's stderr is kept.
const tailSize = 2 << 10

// tail keeps the last tailSize bytes written to it. It never fails a write,
// so a chatty server is not stopped by a broken pipe. exec.Cmd writes to it
// from its own goroutine while errors read it, hence the lock.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if n >= tailSize {
		t.buf = append(t.buf[:0], p[n-tailSize:]...)
		return n, nil
	}
	if over := len(t.buf) + n - tailSize; over > 0 {
		t.buf = t.buf[:copy(t.buf, t.buf[over:])]
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns the kept bytes, starting at a character boundary.
func (t *tail) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return string(b)
}
