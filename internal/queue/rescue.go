package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/node"
)

// Lost workers.
//
// River gives a job whose worker went silent to another worker after
// RescueStuckJobsAfter, which its elected leader checks every 30 s, and
// it cannot tell a dead worker from a slow node: the setting must exceed
// the longest node. Skein keeps a lease per worker instead. Every worker
// renews its row of skein_queue_workers (a heartbeat, timed by the
// database's clock, on its own goroutine so no other work delays it) and,
// as often, looks for node jobs still running on a worker whose lease ran
// out; it records their attempt as failed (error worker_lost) in the
// run's history, under the run's lock and the attempt token, and the
// node's retry policy decides: attempt + 1, same idempotency key, or the
// node fails. A job whose node had not begun on the lost worker is no
// attempt: it is made available again, and runs the same attempt. A job taken again by River (its
// rescuer, or a retry after an error) whose node had begun records the
// same loss instead of running the node a second time under the same
// attempt. So each job runs its node at most once, and a node that
// crashes every worker it runs on fails after its retries.
//
// River's own rescuer stays, after riverRescueAfter, to clear the rows of
// jobs whose worker died (their work is then a no-op).

const workersTable = `skein_queue_workers`

// DefaultRescueAfter is how long a worker may go silent — killed, out of
// memory, paused, cut off from the database — before the nodes it runs are
// recorded as lost and run again elsewhere.
const DefaultRescueAfter = 30 * time.Second

// CodeWorkerLost is the error code of an attempt whose worker was lost.
const CodeWorkerLost = "worker_lost"

// newWorkerID names a worker in River (river_job.attempted_by) and in its
// lease row: host, process id and a random suffix.
func newWorkerID() (id, host string) {
	host, _ = os.Hostname()
	if len(host) > 60 {
		host = host[:60]
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s_%d_%s", host, os.Getpid(), hex.EncodeToString(b)), host
}

// beatEvery is how often a worker renews its lease and looks for lost
// ones: a quarter of the lease, between 50 ms and Config.Poll.
func (d *Driver) beatEvery() time.Duration {
	return min(max(d.cfg.RescueAfter/4, 50*time.Millisecond), d.cfg.Poll)
}

// beat renews the worker's lease (making its row when there is none).
// After a failed renewal (reconnected), or a renewal more than half a
// lease after the last one by the database's clock (one that hung on a
// cut connection and went through once the network was back), the worker
// counts as connected from now: it judges no other worker lost before it
// has seen a whole lease of theirs (after a cut or a restart of the
// database, every worker's last renewal is old).
func (d *Driver) beat(ctx context.Context, reconnected bool) error {
	_, err := d.cfg.Store.Pool().Exec(ctx, `INSERT INTO `+workersTable+` AS w (id, host, pid, lease_ms)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET seen_at = now(), lease_ms = EXCLUDED.lease_ms,
		  connected_since = CASE WHEN $5 OR w.seen_at < now() - w.lease_ms::float8 / 2 * interval '1 millisecond'
		                         THEN now() ELSE w.connected_since END`,
		d.id, d.host, os.Getpid(), d.cfg.RescueAfter.Milliseconds(), reconnected)
	return err
}

// unregister removes the worker's row: it stopped and runs nothing.
func (d *Driver) unregister(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, _ = d.cfg.Store.Pool().Exec(ctx, `DELETE FROM `+workersTable+` WHERE id = $1`, d.id)
}

// watch renews the worker's lease and records the attempts of lost
// workers until ctx ends. The two run apart: recording a loss waits for
// the run's lock (and for the transactions of the run before it), and a
// renewal that waited for it would make this worker look lost to the
// others, and its own running attempts with it.
func (d *Driver) watch(ctx context.Context) {
	var connected atomic.Bool
	connected.Store(true)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		d.renew(ctx, &connected)
	}()
	defer func() { <-renewed }()
	t := time.NewTicker(d.beatEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !connected.Load() {
			continue // the lease is renewed first (rescue.go: beat)
		}
		if err := d.rescue(ctx); err != nil && ctx.Err() == nil {
			d.cfg.Logger.Warn("looking for nodes of lost workers", "error", err)
		}
	}
}

// renew renews the worker's lease every beatEvery until ctx ends, and
// says whether the database answered the last time.
func (d *Driver) renew(ctx context.Context, connected *atomic.Bool) {
	t := time.NewTicker(d.beatEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		was := connected.Load()
		if err := d.beat(ctx, !was); err != nil {
			if ctx.Err() == nil && was {
				d.cfg.Logger.Warn("lost the database; reconnecting", "error", err)
			}
			connected.Store(false)
			continue
		}
		if !was {
			d.cfg.Logger.Info("reconnected to the database")
			connected.Store(true)
		}
	}
}

// lostSQL finds the node jobs running on a worker whose lease ran out (or
// that has no lease row: it stopped, or is of an older version), once
// this worker has been connected for that lease and renewed its own
// lease within the last half of one, and whose attempt is not recorded
// yet. The last condition keeps a worker whose renewal hangs on a cut
// connection — it has not noticed the cut yet, so its connected_since is
// old — from judging the others by a clock it was not part of: after a
// network cut, every worker's last renewal is old.
const lostSQL = `SELECT j.id, j.args->>'run', (j.args->>'task')::bigint, COALESCE(w.host, ''), COALESCE(w.pid, 0),
	  COALESCE(w.lease_ms, $2)
	FROM river_job j
	JOIN runs r ON r.id = j.args->>'run' AND r.status IN ('running', 'waiting')
	LEFT JOIN ` + workersTable + ` w ON w.id = j.attempted_by[cardinality(j.attempted_by)]
	WHERE j.kind = 'skein_task' AND j.state = 'running'
	  AND j.attempted_at < now() - COALESCE(w.lease_ms, $2)::float8 * interval '1 millisecond'
	  AND (w.id IS NULL OR w.seen_at < now() - w.lease_ms::float8 * interval '1 millisecond')
	  AND (SELECT me.connected_since FROM ` + workersTable + ` me WHERE me.id = $1)
	      < now() - COALESCE(w.lease_ms, $2)::float8 * interval '1 millisecond'
	  AND (SELECT me.seen_at FROM ` + workersTable + ` me WHERE me.id = $1)
	      > now() - $2::float8 / 2 * interval '1 millisecond'
	  AND NOT EXISTS (SELECT 1 FROM ` + logTable + ` l WHERE l.run_id = r.id AND l.kind = 'finished'
	                  AND (l.body->>'task')::bigint = (j.args->>'task')::bigint)
	LIMIT 100`

// rescue records the attempts of lost workers as failed, and gives
// their jobs whose node had not begun to another worker.
func (d *Driver) rescue(ctx context.Context) error {
	rows, err := d.cfg.Store.Pool().Query(ctx, lostSQL, d.id, d.cfg.RescueAfter.Milliseconds())
	if err != nil {
		return err
	}
	var lost []lostJob
	for rows.Next() {
		var l lostJob
		if err := rows.Scan(&l.job, &l.run, &l.task, &l.who.host, &l.who.pid, &l.lease); err != nil {
			rows.Close()
			return err
		}
		l.who.lease = time.Duration(l.lease) * time.Millisecond
		lost = append(lost, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, l := range lost {
		if err := d.rescueJob(ctx, l); err != nil {
			return err
		}
	}
	// Rows of workers long gone.
	_, err = d.cfg.Store.Pool().Exec(ctx, `DELETE FROM `+workersTable+` WHERE seen_at < now() - interval '1 day'`)
	return err
}

// lostJob is a node job running on a lost worker.
type lostJob struct {
	job   int64
	run   string
	task  int64
	who   lostWorker
	lease int64
}

// rescueJob handles a job of a lost worker. An attempt whose node began
// there ran on the lost worker: it is recorded as failed (lose), and the
// node's retries decide. A job the worker took but whose node had not
// begun (the worker died between the two) is no attempt of the node: it
// goes to another worker as if never taken, and runs the same attempt, as
// the job of a node a stopping worker stopped does (unbegin).
func (d *Driver) rescueJob(ctx context.Context, l lostJob) error {
	begun := false
	err := d.apply(ctx, l.run, func(st *state) *event {
		t := st.run.Task(l.task)
		if t == nil {
			return nil
		}
		if begun = st.begun[l.task]; !begun {
			return nil
		}
		return lostEvent(t, l.who)
	}, nil)
	if err != nil {
		return err
	}
	if begun {
		d.cfg.Logger.Warn("a worker was lost with a node; its attempt counts as failed", "run", l.run, "worker", l.who.String())
		return nil
	}
	// What River's rescuer would do, without waiting for it. The job is
	// running on a worker that is gone: none but this changes its row.
	tag, err := d.cfg.Store.Pool().Exec(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now()
		WHERE id = $1 AND state = 'running'`, l.job)
	if err == nil && tag.RowsAffected() > 0 {
		d.cfg.Logger.Warn("a worker was lost before it began a node; its job goes to another worker", "run", l.run, "worker", l.who.String())
	}
	return err
}

// lostWorker says which worker was lost, for the step's error.
type lostWorker struct {
	host  string
	pid   int
	lease time.Duration
}

func (w lostWorker) String() string {
	if w.host == "" {
		return "a worker that stopped"
	}
	return fmt.Sprintf("the worker on %s (pid %d)", w.host, w.pid)
}

// lose records a task's attempt as failed because its worker was lost,
// unless it is recorded already.
func (d *Driver) lose(ctx context.Context, runID string, task int64, who lostWorker) error {
	return d.apply(ctx, runID, func(st *state) *event {
		t := st.run.Task(task)
		if t == nil {
			return nil
		}
		return lostEvent(t, who)
	}, nil)
}

// lostEvent records a task's attempt as failed because its worker was
// lost: an error like any other, which takes one of the node's retries.
func lostEvent(t *engine.Task, who lostWorker) *event {
	msg := fmt.Sprintf("%s stopped answering while it ran attempt %d of node %s", who, t.Attempt, t.Node.ID)
	if who.lease > 0 {
		msg += fmt.Sprintf(" (for longer than its --rescue-after %s)", who.lease)
	}
	msg += ": it was killed, ran out of memory, was paused or lost the database"
	return &event{Kind: kindFinished, Task: t.ID, Err: &node.Error{Code: CodeWorkerLost, Category: node.CategoryInternal,
		Message: msg, Details: map[string]any{"attempt": t.Attempt}}}
}

// retaken handles a job River gave a worker again after its node began
// (its rescuer, after riverRescueAfter, or a retry after an error): the
// worker that began it is lost or stopped without recording, so the
// attempt is recorded as lost rather than the node run again under it.
func (d *Driver) retaken(ctx context.Context, job *rivertype.JobRow, runID string, t *engine.Task) error {
	var who lostWorker
	if n := len(job.AttemptedBy); n >= 2 {
		var lease int64
		err := d.cfg.Store.Pool().QueryRow(ctx, `SELECT host, pid, lease_ms FROM `+workersTable+` WHERE id = $1`,
			job.AttemptedBy[n-2]).Scan(&who.host, &who.pid, &lease)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		who.lease = time.Duration(lease) * time.Millisecond
	}
	return d.lose(context.WithoutCancel(ctx), runID, t.ID, who)
}

// riverRescueAfter is River's own RescueStuckJobsAfter: it clears the rows
// of jobs whose worker was lost (their attempt is recorded already, so
// running them again changes nothing). A node running longer than this on
// a live worker is counted lost, and its result dropped.
const riverRescueAfter = 24 * time.Hour

// unbegin puts the step of a node that a stopping worker stopped back to
// pending (a history event, so every worker's state has it): its job goes
// to a worker again as if never taken, and runs the same attempt.
func (d *Driver) unbegin(ctx context.Context, runID string, t *engine.Task) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := d.apply(ctx, runID, func(st *state) *event {
		if st.run.Task(t.ID) == nil || !st.begun[t.ID] {
			return nil
		}
		return &event{Kind: kindUnbegan, Task: t.ID}
	}, nil)
	if err != nil {
		d.cfg.Logger.Warn("a stopped node stays running; it counts as lost when its job is taken again", "run", runID, "node", t.Node.ID, "error", err)
	}
}

// persist runs op (a transaction that records a node's outcome) until it
// succeeds, retrying while the database is unreachable, with exponential
// backoff, for as long as ctx lives: the outcome is in memory only, and a
// database that restarts must not cost the node another run.
func (d *Driver) persist(ctx context.Context, what string, op func() error) error {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 100 * time.Millisecond
	b.MaxInterval = 5 * time.Second
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		err := op()
		if err != nil && !postgres.Transient(err) {
			return struct{}{}, backoff.Permanent(err)
		}
		return struct{}{}, err
	}, backoff.WithBackOff(b), backoff.WithMaxElapsedTime(0), backoff.WithNotify(func(err error, next time.Duration) {
		d.cfg.Logger.Warn("the database is unreachable; retrying", "what", what, "in", next.Round(time.Millisecond), "error", err)
	}))
	return err
}

var _ river.Worker[TaskArgs] = (*taskWorker)(nil)
