package durable

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Lease keeps the lease of a run that executes here, and watches for a
// cancel request and for signals (Keep).
type Lease struct {
	stopOnce sync.Once
	done     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	isLost   bool
	// children are child runs that share the lease.
	children map[string]bool
	// watches are the runs whose signals the lease polls for.
	watches map[string]*signalWatch
}

// signalWatch hands the signals of one run to its execution.
type signalWatch struct {
	seq int64 // the last signal handed over; only the keeper changes it
	ch  chan<- engine.Signal
}

// SignalBuffer is how many signals wait for an execution to take them.
const SignalBuffer = 16

// WatchSignals makes the lease poll the signals of run id after seq and
// hand them to ch.
func (l *Lease) WatchSignals(id string, seq int64, ch chan<- engine.Signal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watches[id] = &signalWatch{seq: seq, ch: ch}
}

// Stop stops keeping the lease; it returns once the keeper is done.
func (l *Lease) Stop() {
	l.stopOnce.Do(func() { close(l.done) })
	l.wg.Wait()
}

// Lost reports whether another owner took the run.
func (l *Lease) Lost() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.isLost
}

// AddChild makes the lease renew child run id with the run (on), or
// stop (not on).
func (l *Lease) AddChild(id string, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if on {
		l.children[id] = true
	} else {
		delete(l.children, id)
		delete(l.watches, id)
	}
}

// Keep renews run's lease every ttl/3 and polls st for a cancel request
// and for signals (WatchSignals) every poll; on a cancel request it calls
// stop with the request's mode (letFinish), and when the lease is lost to
// another owner, stop(false). Stop it when the execution ends.
func Keep(ctx context.Context, st store.Store, run *store.Run, ttl, poll time.Duration, stop func(letFinish bool)) *Lease {
	l := &Lease{done: make(chan struct{}), children: map[string]bool{}, watches: map[string]*signalWatch{}}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		poll := time.NewTicker(poll)
		defer poll.Stop()
		renewEvery := ttl / 3
		next := time.Now().Add(renewEvery)
		bg := context.WithoutCancel(ctx)
		for {
			select {
			case <-l.done:
				return
			case <-poll.C:
			}
			pollSignals(bg, st, l)
			if time.Now().Before(next) {
				cur, err := st.Run(bg, run.ID)
				if err != nil {
					continue
				}
				if cur.Owner.Token != run.Owner.Token {
					l.mu.Lock()
					l.isLost = true
					l.mu.Unlock()
					stop(false)
					return
				}
				if cur.CancelRequested != nil {
					stop(cur.CancelLetFinish)
				}
				continue
			}
			next = time.Now().Add(renewEvery)
			cancelled, err := st.RenewLease(bg, run.ID, run.Owner.Token, ttl)
			if errors.Is(err, store.ErrLeaseLost) {
				l.mu.Lock()
				l.isLost = true
				l.mu.Unlock()
				stop(false)
				return
			}
			if cancelled {
				// Its mode is read with the run (a request that lets
				// nodes finish may be made hard later).
				letFinish := false
				if cur, err := st.Run(bg, run.ID); err == nil {
					letFinish = cur.CancelLetFinish
				}
				stop(letFinish)
			}
			l.mu.Lock()
			kids := make([]string, 0, len(l.children))
			for id := range l.children {
				kids = append(kids, id)
			}
			l.mu.Unlock()
			for _, id := range kids {
				_, _ = st.RenewLease(bg, id, run.Owner.Token, ttl)
			}
		}
	}()
	return l
}

// pollSignals hands each watched run's new signals to its execution. A
// signal that does not fit in the buffer waits for the next poll.
func pollSignals(ctx context.Context, st store.Store, l *Lease) {
	l.mu.Lock()
	ws := make(map[string]*signalWatch, len(l.watches))
	for id, w := range l.watches {
		ws[id] = w
	}
	l.mu.Unlock()
	for id, w := range ws {
		sigs, err := st.Signals(ctx, id, w.seq)
		if err != nil {
			continue
		}
	handing:
		for _, sg := range sigs {
			select {
			case w.ch <- Signal(sg):
				w.seq = sg.Seq
			default:
				break handing
			}
		}
	}
}

// Signal is a stored signal as the engine takes it.
func Signal(s store.Signal) engine.Signal {
	return engine.Signal{Node: s.Node, Visit: s.Visit, Data: s.Data, At: s.CreatedAt}
}

// Signals are stored signals as the engine takes them.
func Signals(sigs []store.Signal) []engine.Signal {
	out := make([]engine.Signal, len(sigs))
	for i, s := range sigs {
		out[i] = Signal(s)
	}
	return out
}

// LastSeq is the sequence number of the last of sigs (0: none).
func LastSeq(sigs []store.Signal) int64 {
	if len(sigs) == 0 {
		return 0
	}
	return sigs[len(sigs)-1].Seq
}

// WatchRunSignals gives the signals of run for an execution of w: none
// when w awaits none; else those recorded while no process ran the run,
// applied as soon as their steps wait, and a channel the lease's poll
// sends later ones to.
func (l *Lease) WatchRunSignals(ctx context.Context, st store.Store, w *workflow.Workflow, reg *node.Registry, runID string) ([]engine.Signal, chan engine.Signal, error) {
	if !AwaitsSignals(w, reg) {
		return nil, nil, nil
	}
	sigs, err := st.Signals(ctx, runID, 0)
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan engine.Signal, SignalBuffer)
	l.WatchSignals(runID, LastSeq(sigs), ch)
	return Signals(sigs), ch, nil
}

// StopOn calls stop when hard closes, until the returned func is called
// (nil hard: never).
func StopOn(hard <-chan struct{}, stop func()) (done func()) {
	if hard == nil {
		return func() {}
	}
	ended := make(chan struct{})
	go func() {
		select {
		case <-hard:
			stop()
		case <-ended:
		}
	}()
	return func() { close(ended) }
}

// Closed reports whether ch is closed (nil: never), as an execution asks
// whether it was told to leave its run.
func Closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
