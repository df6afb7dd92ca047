package durable

import (
	"context"
	"sync"

	"github.com/skeinhq/skein/internal/store"
)

// Committer writes the records of every run of a process through one
// goroutine, one transaction at a time: whatever was submitted while the
// last transaction ran goes into the next one (group commit). Runs never
// wait for the disk; Sync waits for what they submitted.
type Committer struct {
	st   store.Store
	mu   sync.Mutex
	cond *sync.Cond
	// queue holds what waits for the next transaction.
	queue []submission
	// submitted and committed count submissions, to make Sync cheap.
	submitted, committed uint64
	closed               bool
	done                 chan struct{}
	err                  error // the first failure; later submissions fail with it
}

type submission struct {
	batch store.Batch
	after func(error)
}

// NewCommitter starts a committer on st. Close stops it.
func NewCommitter(st store.Store) *Committer {
	c := &Committer{st: st, done: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	go c.loop()
	return c
}

// Submit queues a batch; after, if not nil, is called with the outcome once
// the batch is committed (or failed), from the committer's goroutine.
func (c *Committer) Submit(b store.Batch, after func(error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		if after != nil {
			go after(errClosed)
		}
		return
	}
	c.queue = append(c.queue, submission{b, after})
	c.submitted++
	c.cond.Broadcast()
}

// Sync waits until everything submitted before it was committed, and
// returns the first commit error seen.
func (c *Committer) Sync() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	target := c.submitted
	for c.committed < target && c.err == nil {
		c.cond.Wait()
	}
	return c.err
}

// Close commits what is queued and stops the committer.
func (c *Committer) Close() error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		c.cond.Broadcast()
	}
	c.mu.Unlock()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *Committer) loop() {
	defer close(c.done)
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && !c.closed {
			c.cond.Wait()
		}
		if len(c.queue) == 0 && c.closed {
			c.mu.Unlock()
			return
		}
		subs := c.queue
		c.queue = nil
		failed := c.err
		c.mu.Unlock()

		err := failed
		if err == nil {
			err = c.st.SaveBatch(context.Background(), merge(subs))
		}
		for _, s := range subs {
			if s.after != nil {
				s.after(err)
			}
		}
		c.mu.Lock()
		c.committed += uint64(len(subs))
		if err != nil && c.err == nil {
			c.err = err
		}
		c.cond.Broadcast()
		c.mu.Unlock()
	}
}

// merge folds the submissions of one transaction into one batch per run:
// a step written twice (running, then success) is written once, as its
// latest state; events keep their order.
func merge(subs []submission) []store.Batch {
	byRun := map[string]int{}
	var out []store.Batch
	type stepKey struct {
		node  string
		visit int
	}
	index := map[string]map[stepKey]int{}
	for _, s := range subs {
		i, ok := byRun[s.batch.RunID]
		if !ok {
			i = len(out)
			byRun[s.batch.RunID] = i
			out = append(out, store.Batch{RunID: s.batch.RunID})
			index[s.batch.RunID] = map[stepKey]int{}
		}
		b := &out[i]
		if s.batch.Token != "" {
			b.Token = s.batch.Token
		}
		if s.batch.Finish != nil {
			b.Finish = s.batch.Finish
		}
		idx := index[s.batch.RunID]
		for _, st := range s.batch.Steps {
			k := stepKey{st.Node, st.Visit}
			if j, seen := idx[k]; seen {
				b.Steps[j] = st
				continue
			}
			idx[k] = len(b.Steps)
			b.Steps = append(b.Steps, st)
		}
		b.Events = append(b.Events, s.batch.Events...)
	}
	return out
}
