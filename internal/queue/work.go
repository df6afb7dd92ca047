package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
)

// ErrNoQueues: Work was called on a driver that works no queue.
var ErrNoQueues = errors.New("queue: this driver works no queue (Config.Queues)")

// Work runs the workers until ctx ends, then drains: it stops fetching
// jobs, lets the running ones finish within grace (0: as long as they
// take), cancels those still running after it (River runs them again
// elsewhere), and returns.
func (d *Driver) Work(ctx context.Context, grace time.Duration) error {
	if len(d.cfg.Queues) == 0 {
		return ErrNoQueues
	}
	// The big values other workers kept are read through it.
	defer blob.Mount(d.cfg.Blobs)()
	defer d.artifacts.remove()
	// The worker's lease exists before it takes a job, and is renewed
	// until it took its last (rescue.go).
	if err := d.beat(ctx, true); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started: nothing to drain
		}
		return fmt.Errorf("starting the workers: %w", err)
	}
	defer d.unregister(ctx)
	watchDone := make(chan struct{})
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer close(watchDone)
		d.watch(watchCtx)
	}()
	defer func() {
		stopWatch()
		<-watchDone
	}()
	// River's client runs until stopped, not until ctx ends: its jobs'
	// contexts must outlive the drain.
	if err := d.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("starting the workers: %w", err)
	}
	pollDone := make(chan struct{})
	pollCtx, stopPoll := context.WithCancel(ctx)
	go func() {
		defer close(pollDone)
		d.poll(pollCtx)
	}()
	<-ctx.Done()
	d.stopping.Store(true)
	stopPoll()
	<-pollDone
	stopCtx := context.WithoutCancel(ctx)
	var cancel context.CancelFunc = func() {}
	if grace > 0 {
		stopCtx, cancel = context.WithTimeout(stopCtx, grace)
	}
	defer cancel()
	err := d.client.Stop(stopCtx)
	if errors.Is(err, context.DeadlineExceeded) {
		d.drained.Store(true)
		err = d.client.StopAndCancel(context.WithoutCancel(ctx))
	}
	d.inflight.Wait()
	d.stopWakes()
	d.releaseAll()
	return err
}

func (d *Driver) releaseAll() {
	d.mu.Lock()
	envs := d.envs
	d.envs = map[string]*runEnv{}
	clear(d.states)
	d.mu.Unlock()
	for _, env := range envs {
		env.release()
	}
}

// poll stops, every Config.Poll, the running nodes of runs asked to stop
// them (cancel.go), and applies the cancel requests and the signals of
// queue runs that no event applied yet.
func (d *Driver) poll(ctx context.Context) {
	t := time.NewTicker(d.cfg.Poll)
	defer t.Stop()
	for {
		if err := d.stopCancelled(ctx); err != nil && ctx.Err() == nil {
			d.cfg.Logger.Warn("looking for cancels that stop running nodes", "error", err)
		}
		if err := d.pollOnce(ctx); err != nil && ctx.Err() == nil {
			d.cfg.Logger.Warn("looking for cancel requests and signals", "error", err)
		}
		if err := d.evict(ctx); err != nil && ctx.Err() == nil {
			d.cfg.Logger.Warn("looking for runs that ended", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pendingSQL finds the queue runs with a cancel request or a signal that
// their history does not hold yet. It runs on every worker each second, so
// neither half reads the runs that merely wait in the queue: the cancel
// requests come from a partial index of the running runs that have one
// (skein_runs_cancel_asked, migrate.go), and the signals half starts from
// the signals, looking up each one's run (a subquery a row, which the
// planner cannot turn into a scan of every running run).
const pendingSQL = `SELECT r.id, '' AS node, 0 AS visit FROM runs r
	WHERE r.status = 'running' AND r.cancel_requested_at IS NOT NULL AND r.owner_token LIKE 'queue:%'
	  AND NOT EXISTS (SELECT 1 FROM ` + logTable + ` l WHERE l.run_id = r.id AND l.kind = 'cancel')
	UNION ALL
	SELECT s.run_id, s.node, s.visit FROM signals s
	WHERE (SELECT r.status FROM runs r WHERE r.id = s.run_id AND r.owner_token LIKE 'queue:%') = 'running'
	  AND NOT EXISTS (SELECT 1 FROM ` + logTable + ` l WHERE l.run_id = s.run_id AND l.kind = 'signal'
	                  AND l.node = s.node AND l.visit = s.visit)
	LIMIT 100`

func (d *Driver) pollOnce(ctx context.Context) error {
	rows, err := d.cfg.Store.Pool().Query(ctx, pendingSQL)
	if err != nil {
		return err
	}
	type pending struct {
		run, node string
		visit     int
	}
	var ps []pending
	for rows.Next() {
		var p pending
		if err := rows.Scan(&p.run, &p.node, &p.visit); err != nil {
			rows.Close()
			return err
		}
		ps = append(ps, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, p := range ps {
		var mk func(*state) *event
		if p.node != "" {
			// Read before the transaction: it must not wait for a second
			// connection while it holds one.
			sig, ok, err := storedSignalPool(ctx, d, p.run, p.node, p.visit)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			mk = func(st *state) *event {
				if !st.awaiting(p.node, p.visit) || st.late(p.node, p.visit, sig.Sent) {
					return nil // applied when its step waits, or too late
				}
				return sig
			}
		}
		if err := d.apply(ctx, p.run, mk, nil); err != nil {
			return err
		}
	}
	return nil
}

// evict releases what the worker holds (MCP sessions, the rebuilt state)
// for the runs that ended, whichever worker ended them.
func (d *Driver) evict(ctx context.Context) error {
	d.mu.Lock()
	ids := make([]string, 0, len(d.envs))
	for id := range d.envs {
		ids = append(ids, id)
	}
	d.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	rows, err := d.cfg.Store.Pool().Query(ctx, `SELECT id FROM runs WHERE id = ANY($1) AND status IN ('completed', 'failed', 'cancelled')`, ids)
	if err != nil {
		return err
	}
	var done []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		done = append(done, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range done {
		d.forget(id)
	}
	return nil
}

func storedSignalPool(ctx context.Context, d *Driver, runID, nodeID string, visit int) (*event, bool, error) {
	sigs, err := d.cfg.Store.Signals(ctx, runID, 0)
	if err != nil {
		return nil, false, err
	}
	for _, s := range sigs {
		if s.Node == nodeID && s.Visit == visit {
			return &event{Kind: kindSignal, Node: nodeID, Visit: visit, Data: s.Data, Sent: s.CreatedAt.UTC()}, true, nil
		}
	}
	return nil, false, nil
}

// Wait polls the run every interval until it ended, and returns it.
func (d *Driver) Wait(ctx context.Context, runID string, interval time.Duration) (*store.Run, error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		run, err := d.cfg.Store.Run(ctx, runID)
		if err != nil {
			return nil, err
		}
		if run.Status.Final() {
			return run, nil
		}
		select {
		case <-ctx.Done():
			return run, ctx.Err()
		case <-t.C:
		}
	}
}

// Waiting reports whether a run status is one a queue run can still
// leave (it runs, or waits).
func Waiting(status string) bool {
	return engine.RunStatus(status) == engine.RunRunning || engine.RunStatus(status) == engine.RunWaiting
}
