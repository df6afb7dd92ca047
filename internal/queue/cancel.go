package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/skeinhq/skein/node"
)

// Cancel on the queue.
//
// A cancel request is a row in the store (store.RequestCancel), with its
// mode: stop the running nodes, or let them finish. Cancel applies it at
// once, in the process that asks: in one transaction the run's history
// gets the cancel (nothing new starts), the River jobs of its tasks and
// timers that no worker has taken are cancelled and those tasks recorded
// as never started (their steps skipped). A run with no node running on
// a worker ends cancelled in that transaction; one whose nodes run ends
// when their workers record them. Each worker looks, every Config.Poll,
// for the runs of the nodes it runs that were asked to stop them
// (stopCancelled), and cancels those nodes' contexts: a shell node's
// process group is killed, its step recorded cancelled.

// errRunCancelled is the cause of a node stopped by its run's cancel.
var errRunCancelled = errors.New("the run was cancelled")

// Cancel applies the cancel request of a queued run at once (see above).
// A run that ended, or has no cancel request, is left as it is.
func (d *Driver) Cancel(ctx context.Context, runID string) error {
	return d.persist(ctx, "cancelling run "+runID, func() error {
		return d.submit(ctx, runID, &applyReq{withdraw: true, done: make(chan applyResult, 1)})
	})
}

// withdraw cancels the jobs of a cancelled run that no worker has taken,
// in tx, and returns the history events of their tasks: never started.
// The jobs are locked as River locks the jobs it hands out (FOR UPDATE
// SKIP LOCKED): a job a worker is taking at this moment is its worker's,
// which finds the run cancelled and does not start its node.
func (d *Driver) withdraw(ctx context.Context, tx pgx.Tx, st *state) ([]*event, error) {
	rows, err := tx.Query(ctx, `SELECT id, kind, args FROM river_job
		WHERE args @> jsonb_build_object('run', $1::text) AND kind IN ('skein_task', 'skein_timer')
		  AND state IN ('available', 'scheduled', 'retryable', 'pending')
		FOR UPDATE SKIP LOCKED`, st.env.id)
	if err != nil {
		return nil, fmt.Errorf("run %s: finding the jobs to cancel: %w", st.env.id, err)
	}
	type job struct {
		id   int64
		kind string
		args []byte
	}
	var jobs []job
	for rows.Next() {
		var j job
		if err := rows.Scan(&j.id, &j.kind, &j.args); err != nil {
			rows.Close()
			return nil, fmt.Errorf("run %s: finding the jobs to cancel: %w", st.env.id, err)
		}
		jobs = append(jobs, j)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("run %s: finding the jobs to cancel: %w", st.env.id, err)
	}
	var evs []*event
	for _, j := range jobs {
		if _, err := d.client.JobCancelTx(ctx, tx, j.id); err != nil {
			return nil, fmt.Errorf("run %s: cancelling job %d: %w", st.env.id, j.id, err)
		}
		if j.kind != (TaskArgs{}).Kind() {
			continue // a timer: the cancel dropped it
		}
		var args TaskArgs
		if err := json.Unmarshal(j.args, &args); err != nil {
			return nil, fmt.Errorf("run %s: reading job %d: %w", st.env.id, j.id, err)
		}
		if st.run.Task(args.Task) == nil || st.begun[args.Task] {
			continue
		}
		evs = append(evs, &event{Kind: kindFinished, Task: args.Task, NotStarted: true,
			Err: &node.Error{Code: "cancelled", Category: node.CategoryCancelled, Message: "the run was cancelled before the node started"}})
	}
	return evs, nil
}

// runningTask names a node this worker runs: its run and its task.
type runningTask struct {
	run  string
	task int64
}

// track records a node this worker runs until untrack, so a cancel that
// stops running nodes reaches it.
func (d *Driver) track(runID string, task int64, stop context.CancelCauseFunc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running == nil {
		d.running = map[runningTask]context.CancelCauseFunc{}
	}
	d.running[runningTask{runID, task}] = stop
}

func (d *Driver) untrack(runID string, task int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.running, runningTask{runID, task})
}

// stopCancelled stops the nodes this worker runs whose run was asked to
// cancel them (a cancel request that does not let them finish).
func (d *Driver) stopCancelled(ctx context.Context) error {
	d.mu.Lock()
	seen := map[string]bool{}
	var ids []string
	for rt := range d.running {
		if !seen[rt.run] {
			seen[rt.run] = true
			ids = append(ids, rt.run)
		}
	}
	d.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	rows, err := d.cfg.Store.Pool().Query(ctx, `SELECT id FROM runs WHERE id = ANY($1)
		AND cancel_requested_at IS NOT NULL AND NOT cancel_let_finish`, ids)
	if err != nil {
		return err
	}
	stop := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		stop[id] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for rt, cancel := range d.running {
		if stop[rt.run] {
			cancel(errRunCancelled)
		}
	}
	return nil
}
