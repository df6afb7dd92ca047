package shell

import (
	"io"
	"os"
	"sync/atomic"
	"time"
)

// A command's stdout and stderr are pipes this process reads, not exec's:
// once the command has exited, what it wrote is read to the end however
// long that takes on a loaded machine, and only processes it left behind,
// holding the pipes open with nothing more to say, are cut off.

// pipeCopy copies a pipe to a writer in a goroutine of its own.
type pipeCopy struct {
	r *os.File
	// moves counts the copy's writes begun and ended: odd while one is
	// under way.
	moves atomic.Int64
	done  chan struct{}
}

// copyPipe starts copying r to w until r ends or is closed.
func copyPipe(r *os.File, w io.Writer) *pipeCopy {
	c := &pipeCopy{r: r, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				c.moves.Add(1)
				_, _ = w.Write(buf[:n]) // a capture never fails a write
				c.moves.Add(1)
			}
			if err != nil {
				return
			}
		}
	}()
	return c
}

// drainLimit bounds how many periods of the pipe wait drain waits for
// copies that move in each: a process left behind that never stops
// writing. Periods in which a copy is held up — in a slow write, or not
// run at all on a loaded machine — do not count.
const drainLimit = 10

// drain waits for the copies of an exited command's output to end, then
// closes their pipes. A copy whose pipe holds unread bytes, or that is
// writing what it read, is waited for; when every copy has been idle — its
// pipe empty, nothing being written — for a whole period of wait,
// processes the command left behind hold the pipes, and they are closed.
// After drainLimit periods in which the copies moved, they are closed
// anyway.
func drain(wait time.Duration, copies ...*pipeCopy) {
	all := make(chan struct{})
	go func() {
		for _, c := range copies {
			<-c.done
		}
		close(all)
	}()
	tick := time.NewTicker(wait)
	defer tick.Stop()
	last := make([]int64, len(copies))
	for i, c := range copies {
		last[i] = c.moves.Load()
	}
	for moving := 0; moving < drainLimit; {
		select {
		case <-all:
			closeAll(copies)
			return
		case <-tick.C:
		}
		idle, moved := true, false
		for i, c := range copies {
			m := c.moves.Load()
			if m != last[i] {
				moved = true
			}
			if m != last[i] || m%2 == 1 || unread(c.r) > 0 {
				idle = false
			}
			last[i] = m
		}
		if idle {
			break
		}
		if moved {
			moving++
		}
	}
	closeAll(copies) // a blocked read ends
	<-all
}

// closeAll closes the pipes of copies.
func closeAll(copies []*pipeCopy) {
	for _, c := range copies {
		_ = c.r.Close()
	}
}
