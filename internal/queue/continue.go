package queue

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store/postgres"
)

// Local continuation.
//
// A node a worker finishes often releases the next node of its run onto a
// queue this worker works. Handed to River, that job would reach a worker
// through a notification and a fetch (River fetches at most once per
// cooldown); instead the worker takes it itself, in the transaction that
// records the finished node, and runs it next on the same slot. The job
// is inserted running, attempt 1, attempted by this worker (no fetch takes
// it, nobody is notified), as River's own fetch leaves the jobs it hands
// out, and its node (unless of a pure kind) is marked running in that
// transaction too (beginTaken), so the worker runs it right after the
// COMMIT with no transaction of its own to begin it.
// From there it is a job like any other this worker took: a worker that
// dies running it is lost, and its attempt is recorded lost by the others
// (rescue.go); the node began under the run's lock and the attempt token,
// so it runs at most once. The job is deleted (completed)
// in the transaction that records its node; one whose node ends otherwise
// (it did not start: the run stopped) is settled after, as River settles
// a job its worker returned.
//
// A worker takes at most one job per node it finished (a fan-out's other
// branches go to River, for any worker), none once it is stopping, and
// only for the queues it works.

// continuedKey is the job metadata key naming the worker that took a job
// by local continuation.
const continuedKey = "continued_by"

// localJob is a job this worker took in a transaction, to run next.
type localJob struct {
	row  *rivertype.JobRow
	args TaskArgs
	// begun is what the transaction that took the job knew of its task
	// when it marked the node running; nil when it did not (a pure
	// kind's node, which is marked with its outcome).
	begun *begun
}

// begun is a task a transaction marked running for the node this worker
// runs next, and the run's state it is to run in.
type begun struct {
	task     *engine.Task
	started  time.Time
	spent    engine.Spent
	scope    expr.Scope
	upstream []string
}

// hop is what work is given and gives back about local continuation:
// complete is the id of the job to end with the node's record (River's
// own completion of a job it handed out then finds it gone: see
// completeSQL), begun its task as the transaction that took it
// marked it running (nil: work marks it), next the job taken to run next,
// completed whether the job was marked completed.
type hop struct {
	complete  int64
	begun     *begun
	next      *localJob
	completed bool
}

// continues reports whether a node finishing now may take its successor.
func (d *Driver) continues(ctx context.Context) bool {
	return ctx.Err() == nil && !d.stopping.Load()
}

// Continued is how many nodes this worker ran by local continuation:
// taken in the transaction that recorded the node before them, not
// fetched from the queue.
func (d *Driver) Continued() int64 { return d.continued.Load() }

// chain runs a job River handed out, then the jobs its nodes took by
// local continuation, one after another on the job's slot. The error is
// the first job's, for River; a later job's is settled on its own row.
func (d *Driver) chain(ctx context.Context, job *rivertype.JobRow, args TaskArgs) error {
	h := &hop{complete: job.ID}
	err := d.work(ctx, job, args, h)
	for next := h.next; next != nil; {
		d.continued.Add(1)
		h = &hop{complete: next.row.ID, begun: next.begun}
		lerr := d.work(ctx, next.row, next.args, h)
		if lerr != nil {
			d.cfg.Logger.Warn("a node taken by local continuation did not end; its job goes back to the queue",
				"run", next.args.Run, "node", next.args.Node, "error", lerr)
		}
		if !h.completed {
			d.settle(ctx, next.row.ID, lerr, time.Minute)
		}
		next = h.next
	}
	return err
}

// pick marks, for each of n applies that may continue, a task job of w
// that this worker's queues serve to be taken in the transaction (at most
// one each, in order).
func (d *Driver) pick(w *write, n int) {
	for i := range w.jobs {
		if len(w.claims) == n {
			return
		}
		args, ok := w.jobs[i].Args.(TaskArgs)
		if !ok {
			continue
		}
		opts := w.jobs[i].InsertOpts
		if _, served := d.cfg.Queues[opts.Queue]; !served {
			continue
		}
		meta, _ := json.Marshal(map[string]string{continuedKey: d.id})
		w.claims = append(w.claims, i)
		w.taken = append(w.taken, &localJob{args: args, row: &rivertype.JobRow{
			Attempt: 1, AttemptedBy: []string{d.id}, Kind: args.Kind(), Queue: opts.Queue,
			State: rivertype.JobStateRunning, Metadata: meta, MaxAttempts: opts.MaxAttempts,
		}})
	}
}

// beginTaken marks running, in the transaction that took them, the nodes
// of the jobs pick chose that are not of a pure kind, as work would in a
// transaction of its own before it runs one: the node runs right after the
// COMMIT, and a worker lost from then on has begun it (rescue.go: the
// attempt counts as lost and the node's retries decide). Nothing is marked
// once the run stops: work then records that the node did not start.
func (d *Driver) beginTaken(ctx context.Context, tx *postgres.Pipe, w *write) error {
	st := w.st
	env := st.env
	for _, j := range w.taken {
		if status, _ := st.run.Status(); status != engine.RunCompleted || st.cancelled {
			return nil
		}
		t := st.run.Task(j.args.Task)
		if t == nil || st.begun[t.ID] || env.nodes[t.Node.ID] == nil || env.nodes[t.Node.ID].Spec.Pure {
			continue
		}
		started := d.now()
		if err := d.feed(ctx, tx, w, &event{Kind: kindBegan, Task: t.ID, At: started, Started: started, RanOn: env.place}); err != nil {
			return err
		}
		j.begun = &begun{task: t, started: started, spent: engine.Spent{Tokens: st.tokens, CostUSD: st.cost},
			scope: st.scope, upstream: engine.UpstreamHashes(env.plan, t.Node, st.hashes)}
	}
	return nil
}

// takeSQL inserts a job this worker takes: running, attempt 1, attempted
// by this worker, as River's fetch leaves the jobs it hands out. Inserted
// so at once, the row is written once: a job inserted pending and then
// marked running was written twice, with every index of River's table
// (two of them GIN) each time.
const takeSQL = `INSERT INTO river_job (args, kind, max_attempts, metadata, queue, state, attempt, attempted_at, attempted_by, scheduled_at)
	VALUES ($1, $2, $3, $4, $5, 'running', 1, now(), ARRAY[$6::text], now()) RETURNING id`

// queueTaken returns a batch of the inserts of the jobs pick chose (nil
// for none); once it is sent, each taken job has its id.
func (d *Driver) queueTaken(w *write) *pgx.Batch {
	if len(w.claims) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for k := range w.claims {
		j := w.taken[k]
		args, _ := json.Marshal(j.args) // a TaskArgs always encodes
		j.row.EncodedArgs = args
		b.Queue(takeSQL, args, j.row.Kind, j.row.MaxAttempts, j.row.Metadata, j.row.Queue, d.id).QueryRow(func(row pgx.Row) error {
			return row.Scan(&j.row.ID)
		})
	}
	return b
}

// untaken appends to jobs those of w River inserts (the jobs w does not
// take), and returns the index in w.jobs of each.
func (w *write) untaken(jobs []river.InsertManyParams) ([]river.InsertManyParams, []int) {
	var at []int
	for i, j := range w.jobs {
		if !slices.Contains(w.claims, i) {
			jobs = append(jobs, j)
			at = append(at, i)
		}
	}
	return jobs, at
}

// tookAll checks that every job w takes was inserted.
func (w *write) tookAll() error {
	for _, j := range w.taken {
		if j.row.ID == 0 {
			return errors.New("the insert of a node taken by local continuation returned no job")
		}
	}
	return nil
}

// completeSQL ends the jobs whose nodes are recorded, those this worker
// took and the one River handed it, unless another worker has them since
// (this one was counted lost), by deleting them: what they did is the
// run's history, and nothing reads a completed job. Marked completed, as
// River leaves the jobs it ran until its cleaner deletes them a day later,
// each would be written again with every index of River's table (two of
// them GIN); a deleted row is only marked dead. River's completer, once
// the job's Work returns, then finds no running job of that id and writes
// nothing.
const completeSQL = `DELETE FROM river_job
	WHERE id = ANY($1) AND state = 'running' AND attempted_by[cardinality(attempted_by)] = $2::text`

// completeIn queues, to ride with the COMMIT, the completion of the jobs
// whose nodes the transaction records. River's
// JobCompleteTx would wait for its answer: a round trip of its own.
func (d *Driver) completeIn(ctx context.Context, tx *postgres.Pipe, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	tx.DeferExec(true)
	defer tx.DeferExec(false)
	_, err := tx.Exec(ctx, completeSQL, ids, d.id)
	return err
}

// wentThrough learns whether the transaction of live parts, whose COMMIT
// failed with err and may have committed all the same (its answer was
// lost), did, from the jobs it took by local continuation: they are in
// the queue, running on this worker, only if it did. If it did, it is
// done as if the COMMIT had answered (committed): this worker runs their
// nodes next, which the transaction marked running on it, and which no
// other worker would run before counting this one lost and the attempt
// with it. A transaction that took no job is not asked after: it is tried
// again, and finds what it recorded (work drops the result as stale).
// While the database is out of reach it asks again, for as long as ctx
// lives; a worker stopping meanwhile leaves the jobs to the others, which
// count it lost.
func (d *Driver) wentThrough(ctx context.Context, live []*part, err error) bool {
	var taken []*localJob
	for _, p := range live {
		if p.w != nil && !p.busy && !p.over {
			taken = append(taken, p.w.taken...)
		}
	}
	if len(taken) == 0 {
		return false
	}
	return d.answered(ctx, err, len(taken), func() (int, error) { return d.findTaken(ctx, taken) })
}

// answered learns whether a transaction whose COMMIT failed with err, and
// may have committed all the same, did: find counts the rows it wrote
// that are to be found (want) if it did, none if it did not. While the
// database is out of reach it asks again, for as long as ctx lives; when
// it cannot tell, the transaction counts as failed.
func (d *Driver) answered(ctx context.Context, err error, want int, find func() (int, error)) bool {
	var found int
	ferr := d.persist(ctx, "learning whether a COMMIT that did not answer went through", func() (err error) {
		found, err = find()
		return err
	})
	switch {
	case ferr != nil:
		d.cfg.Logger.Warn("could not learn whether a COMMIT that did not answer went through", "error", ferr)
		return false
	case found == 0:
		return false
	case found < want:
		// One transaction wrote them all, or none.
		d.cfg.Logger.Error("a transaction that did not answer its COMMIT left some of its rows, not all", "found", found, "written", want, "error", err)
		return false
	}
	d.cfg.Logger.Info("a COMMIT that did not answer went through", "error", err)
	return true
}

// findTaken reads the ids of jobs this worker took by local
// continuation, as the transaction that took them left them (running on
// this worker), and returns how many it found; the others' ids are 0.
func (d *Driver) findTaken(ctx context.Context, taken []*localJob) (int, error) {
	found := 0
	b := &pgx.Batch{}
	for _, j := range taken {
		j.row.ID = 0
		b.Queue(findTakenSQL, j.row.Kind, j.row.EncodedArgs, d.id).QueryRow(func(row pgx.Row) error {
			err := row.Scan(&j.row.ID)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err == nil {
				found++
			}
			return err
		})
	}
	err := d.cfg.Store.Pool().SendBatch(ctx, b).Close()
	return found, err
}

// findTakenSQL finds a job this worker took, by its args: they name its
// run and the attempt token of its task, which no other job has.
const findTakenSQL = `SELECT id FROM river_job
	WHERE kind = $1 AND args = $2::jsonb AND state = 'running' AND attempted_by[cardinality(attempted_by)] = $3::text
	ORDER BY id DESC LIMIT 1`

// settle ends the row of a job taken by local continuation whose node was
// not recorded with its completion, as River ends a job by what its
// worker returned: nil completes it, a cancel (the run is gone) cancels
// it, another error gives it to a worker again (the node did not run, or
// was put back to pending: unbegin). It retries for up to within while
// the database is out of reach.
func (d *Driver) settle(ctx context.Context, id int64, err error, within time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), within)
	defer cancel()
	var cancelled *river.JobCancelError
	sql := completeSQL
	switch {
	case err == nil:
	case errors.As(err, &cancelled):
		sql = `UPDATE river_job SET state = 'cancelled', finalized_at = now()
			WHERE id = ANY($1) AND state = 'running' AND attempted_by[cardinality(attempted_by)] = $2::text`
	default:
		sql = `UPDATE river_job SET state = 'available', scheduled_at = now()
			WHERE id = ANY($1) AND state = 'running' AND attempted_by[cardinality(attempted_by)] = $2::text`
	}
	serr := d.persist(ctx, "settling a job", func() error {
		_, err := d.cfg.Store.Pool().Exec(ctx, sql, []int64{id}, d.id)
		return err
	})
	if serr != nil {
		d.cfg.Logger.Warn("a job taken by local continuation stays running; it is handed out again when this worker is counted lost",
			"job", id, "error", serr)
	}
}
