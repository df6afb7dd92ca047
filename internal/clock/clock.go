// Package clock gives the engine its time, so tests can control it.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and runs functions later.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d. The returned function
	// stops the timer and reports whether it stopped it before it fired.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// Fake is a clock that moves only when told to. Timers fire, in order of
// their deadline, when Advance passes them.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	seq     int
	waiters []chan struct{}
}

type fakeTimer struct {
	at  time.Time
	seq int
	f   func()
	off bool
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc registers f to run when the clock passes now+d.
func (c *Fake) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	c.seq++
	t := &fakeTimer{at: c.now.Add(d), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	ws := c.waiters
	c.waiters = nil
	c.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.off {
			return false
		}
		t.off = true
		return true
	}
}

// Advance moves the clock forward by d, firing the timers it passes.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	for {
		sort.Slice(c.timers, func(i, j int) bool {
			if c.timers[i].at.Equal(c.timers[j].at) {
				return c.timers[i].seq < c.timers[j].seq
			}
			return c.timers[i].at.Before(c.timers[j].at)
		})
		var next *fakeTimer
		for len(c.timers) > 0 {
			t := c.timers[0]
			if t.off {
				c.timers = c.timers[1:]
				continue
			}
			if t.at.After(target) {
				break
			}
			next = t
			c.timers = c.timers[1:]
			break
		}
		if next == nil {
			break
		}
		next.off = true
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
		c.mu.Lock()
	}
	c.now = target
	c.mu.Unlock()
}

// Pending returns how many timers are set and not fired.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.off {
			n++
		}
	}
	return n
}

// Next returns when the earliest timer set and not fired is due; false
// when none is.
func (c *Fake) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next time.Time
	found := false
	for _, t := range c.timers {
		if !t.off && (!found || t.at.Before(next)) {
			next, found = t.at, true
		}
	}
	return next, found
}

// WaitForTimer returns a channel closed when the next timer is set.
func (c *Fake) WaitForTimer() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	c.waiters = append(c.waiters, ch)
	return ch
}
