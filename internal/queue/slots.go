package queue

import (
	"context"
	"errors"
	"fmt"
)

// Slots.
//
// A queue's concurrency (Config.Queues) bounds the nodes of that queue
// running at once on this worker, not the jobs it holds: a node takes one
// of its queue's slots only while its kind runs. The transactions around
// it (the step marked running before, the outcome after, with the next
// node taken by local continuation) run off the slot, so a slot's time is
// the node's own and the node after it starts while the one before is
// being recorded.
//
// River holds twice as many jobs as the queue has slots: the ones being
// recorded, and a few waiting for a slot. A job waits for a slot only
// after River gave it to this worker; the extra bounds how many jobs a
// busy worker holds that an idle one could have run. With half as many
// again, two workers whose nodes finish in the same run left slots idle
// (their records wait for each other, the run's row, each holding its
// job meanwhile): 1 → 2 workers measured 1.51–1.71× so, 1.69–1.86× with
// twice (BENCHMARKS.md).

// jobsPerQueue is how many jobs River hands a worker whose queue runs n
// nodes at once.
func jobsPerQueue(n int) int {
	n = max(1, n)
	return 2 * n
}

// slots are a queue's node slots: a buffered channel, one token a running
// node.
type slots chan struct{}

func newSlots(queues map[string]int) map[string]slots {
	out := make(map[string]slots, len(queues))
	for q, n := range queues {
		out[q] = make(slots, max(1, n))
	}
	return out
}

// acquire takes a slot of the queue for a node, waiting for one until ctx
// ends, and returns its release. A queue this worker does not work (a job
// of a queue it stopped working) takes no slot.
func (d *Driver) acquire(ctx context.Context, queue string) (release func(), err error) {
	s, ok := d.slots[queue]
	if !ok {
		return func() {}, nil
	}
	select {
	case s <- struct{}{}:
		if d.drained.Load() {
			// The slot was freed by a node the end of the drain stopped,
			// and this node is to stop too: River cancels the jobs' one
			// after the other.
			<-s
			return nil, errDrained
		}
		return func() { <-s }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a slot of queue %s: %w", queue, context.Cause(ctx))
	}
}

// errDrained: a node got a slot after its worker's drain ran out.
var errDrained = errors.New("the worker's drain ran out before the node started")
