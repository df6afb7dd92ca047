package durable

import (
	"context"
	"sync"

	"github.com/skeinhq/skein/internal/store"
)

// Committer writes the records of every run of a process through one
// goroutine, one transaction at a time: whatever was submitted while the
// last transaction ran goes into the next one (group commit). Runs do not
// wait for the disk until maxPending records wait for it; Sync waits for
// what they submitted. The outcomes go to the submissions' after functions
// from a second goroutine, in the order of the commits, while the next
// transaction runs: what waits for a commit (a progress line, the run
// folder) does not hold up the next, until the outcomes of 64
// transactions wait for it.
//
// A failure belongs to the run whose batch failed: when a group
// transaction fails, each run's share is tried alone, so one run's
// problem (a lost lease, a deleted run) never fails another's records.
// Once a batch of a run (and owner token) failed, its later batches fail
// with the same error: a run's records are never committed with a gap.
type Committer struct {
	st   store.Store
	mu   sync.Mutex
	cond *sync.Cond
	// queue holds what waits for the next transaction; spare is the
	// queue of an earlier one, emptied once answered, for the next.
	queue, spare []submission
	// submitted and committed count submissions, to make Sync cheap.
	submitted, committed uint64
	// pending counts the records (steps, planned steps and events)
	// submitted whose outcome is not answered yet.
	pending int
	closed  bool
	// answers carries each transaction's outcomes to the goroutine that
	// calls the after functions (answer); done closes when it returns.
	answers chan answer
	done    chan struct{}
	// failed holds the first error of each run (and owner token) whose
	// records could not be written.
	failed map[runKey]error
}

type runKey struct{ run, token string }

type submission struct {
	batch store.Batch
	after func(error)
}

// answer is the outcome of one transaction: its submissions and their
// errors.
type answer struct {
	subs []submission
	errs []error
}

// NewCommitter starts a committer on st. Close stops it.
func NewCommitter(st store.Store) *Committer {
	c := &Committer{st: st, answers: make(chan answer, 64), done: make(chan struct{}), failed: map[runKey]error{}}
	c.cond = sync.NewCond(&c.mu)
	go c.loop()
	go c.answer()
	return c
}

// maxPending is how many records may wait for their commit before Submit
// waits for the disk: a run whose nodes go faster than its records are
// written (a loop of `set` nodes on a slow disk) would otherwise hold
// them all, and those its displays wait to show, in memory (a loop of
// 300,000 passes held ~500 MB). About 10–20 MB of records.
const maxPending = 16 << 10

// Submit queues a batch; after, if not nil, is called with the outcome once
// the batch is committed (or failed), from the committer's goroutine.
// While maxPending records or more wait for their commit, it waits first.
func (c *Committer) Submit(b store.Batch, after func(error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.pending >= maxPending && !c.closed {
		c.cond.Wait()
	}
	if c.closed {
		if after != nil {
			go after(errClosed)
		}
		return
	}
	c.queue = append(c.queue, submission{b, after})
	c.pending += records(b)
	c.submitted++
	c.cond.Broadcast()
}

// Sync waits until everything submitted before it was committed or has
// failed, and its outcome went to its after function.
func (c *Committer) Sync() {
	c.mu.Lock()
	defer c.mu.Unlock()
	target := c.submitted
	for c.committed < target {
		c.cond.Wait()
	}
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
	return nil
}

func (c *Committer) loop() {
	defer close(c.answers)
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
		c.queue, c.spare = c.spare, nil
		c.mu.Unlock()
		c.answers <- answer{subs, c.commit(subs)}
	}
}

// answer calls the after functions of each transaction's submissions, in
// the order of the transactions, then counts them committed.
func (c *Committer) answer() {
	defer close(c.done)
	for a := range c.answers {
		for i, s := range a.subs {
			if s.after != nil {
				s.after(a.errs[i])
			}
		}
		n := 0
		for _, s := range a.subs {
			n += records(s.batch)
		}
		clear(a.subs) // keeps no batch alive
		c.mu.Lock()
		c.pending -= n
		c.committed += uint64(len(a.subs))
		if c.spare == nil {
			c.spare = a.subs[:0]
		}
		c.cond.Broadcast()
		c.mu.Unlock()
	}
}

// commit writes subs in one transaction, or run by run when that fails,
// and returns each submission's error.
func (c *Committer) commit(subs []submission) []error {
	errs := make([]error, len(subs))
	keyOf := func(s submission) runKey { return runKey{s.batch.RunID, s.batch.Token} }
	// Runs that failed before fail again, without a write.
	var live []int
	for i, s := range subs {
		if err := c.failed[keyOf(s)]; err != nil {
			errs[i] = err
			continue
		}
		live = append(live, i)
	}
	if len(live) == 0 {
		return errs
	}
	pick := func(idx []int) []submission {
		if len(idx) == len(subs) {
			return subs // every one: as they are
		}
		out := make([]submission, len(idx))
		for j, i := range idx {
			out[j] = subs[i]
		}
		return out
	}
	err := c.st.SaveBatch(context.Background(), merge(pick(live)))
	if err == nil {
		return errs
	}
	byRun := map[runKey][]int{}
	var order []runKey
	for _, i := range live {
		k := keyOf(subs[i])
		if _, ok := byRun[k]; !ok {
			order = append(order, k)
		}
		byRun[k] = append(byRun[k], i)
	}
	for _, k := range order {
		idx := byRun[k]
		rerr := err
		if len(order) > 1 {
			rerr = c.st.SaveBatch(context.Background(), merge(pick(idx)))
		}
		if rerr == nil {
			continue
		}
		c.failed[k] = rerr
		for _, i := range idx {
			errs[i] = rerr
		}
	}
	return errs
}

// merge folds the submissions of one transaction into one batch per run:
// a step written twice (running, then success) is written once, as its
// latest state, and a step planned and saved only as saved; events keep
// their order.
func merge(subs []submission) []store.Batch {
	byRun := map[string]int{}
	var out []store.Batch
	// Each run's batch is made as large as its submissions' records.
	type size struct{ subs, steps, events int }
	var sizes []size
	for _, s := range subs {
		i, ok := byRun[s.batch.RunID]
		if !ok {
			i = len(out)
			byRun[s.batch.RunID] = i
			out = append(out, store.Batch{RunID: s.batch.RunID})
			sizes = append(sizes, size{})
		}
		sizes[i].subs++
		sizes[i].steps += len(s.batch.Steps)
		sizes[i].events += len(s.batch.Events)
	}
	index := make([]map[stepKey]int, len(out))
	for i, n := range sizes {
		if n.subs == 1 {
			continue // its one batch is taken as it is (below)
		}
		if n.steps > 0 {
			out[i].Steps = make([]*store.Step, 0, n.steps)
		}
		if n.events > 0 {
			out[i].Events = make([]store.Event, 0, n.events)
		}
		index[i] = make(map[stepKey]int, n.steps)
	}
	for _, s := range subs {
		i := byRun[s.batch.RunID]
		if sizes[i].subs == 1 {
			// A run's only submission: a Recorder's batch has each step
			// once, planned or saved.
			out[i] = s.batch
			continue
		}
		b := &out[i]
		if s.batch.Token != "" {
			b.Token = s.batch.Token
		}
		if s.batch.Finish != nil {
			b.Finish = s.batch.Finish
		}
		idx := index[i]
		for _, st := range s.batch.Steps {
			k := stepKey{st.Node, st.Visit}
			if j, seen := idx[k]; seen {
				b.Steps[j] = st
				continue
			}
			idx[k] = len(b.Steps)
			b.Steps = append(b.Steps, st)
		}
		b.Plan = append(b.Plan, s.batch.Plan...)
		b.Events = append(b.Events, s.batch.Events...)
	}
	// A step planned and saved in one transaction is written as saved
	// only.
	for i := range out {
		b := &out[i]
		if sizes[i].subs == 1 || len(b.Plan) == 0 || len(b.Steps) == 0 {
			continue
		}
		idx := index[i]
		plan := b.Plan[:0:0]
		for _, p := range b.Plan {
			if _, saved := idx[stepKey{p.Node, p.Visit}]; !saved {
				plan = append(plan, p)
			}
		}
		b.Plan = plan
	}
	return out
}

// records counts what a batch writes: its steps, planned steps and events.
func records(b store.Batch) int { return len(b.Steps) + len(b.Plan) + len(b.Events) }
