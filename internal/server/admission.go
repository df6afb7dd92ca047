package server

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// DefaultMaxRunning is how many executions a server carries out at once
// unless Config.MaxRunning says otherwise.
const DefaultMaxRunning = 512

// busyWait is how long a request that would start an execution waits for
// a free slot before it is answered 503 busy.
const busyWait = time.Second

// errBusy: every execution slot is taken; the request may be sent again.
var errBusy = errors.New("the server runs as many executions as it may")

// slots bounds the executions in progress, so a flood of requests (a
// webhook storm) makes the answers slower, then 503 busy, instead of piling
// up executions that slow each other down and fill the memory.
type slots chan struct{}

// acquire takes a slot, waiting at most busyWait (and not after ctx ends).
func (sl slots) acquire(ctx context.Context) error {
	select {
	case sl <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(busyWait)
	defer t.Stop()
	select {
	case sl <- struct{}{}:
		return nil
	case <-t.C:
		return errBusy
	case <-ctx.Done():
		return errBusy
	}
}

func (sl slots) release() { <-sl }

// busyProblem answers a request that found no free slot.
func busyProblem() *Problem {
	return problemf(http.StatusServiceUnavailable, CodeBusy,
		"the server runs as many executions as it may (--max-runs); send the request again in a moment")
}
