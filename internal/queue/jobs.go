package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/skeinhq/skein/internal/store/sqlstore"
)

// The jobs a transaction releases are River's rows, inserted by one
// statement of the transaction's own: available (or scheduled, for a
// timer due later), attempt 0, River's defaults for the rest — the rows
// River's InsertManyTx makes for jobs with no unique options, without its
// batch of a dozen arrays and the whole rows it reads back (a third of the
// server's CPU a webhook on Postgres, by profile). The queues of the
// available ones are announced on River's insert topic after the COMMIT
// (announce).

// insertJobsHead and insertJobsTail wrap the rows of queueJobs: the
// values come in as text, cast here, and a job due now is scheduled by
// the database's clock, as River's own insert does.
const (
	insertJobsHead = `INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at)
	SELECT a::jsonb, k, m::smallint, q, s::river_job_state, COALESCE(t::timestamptz, now())
	FROM (VALUES `
	insertJobsTail = `) AS v (a, k, m, q, s, t) RETURNING id`
)

// notifySQL announces the queues $1 on River's insert topic, in the
// schema River's tables are in: River's producers fetch when told.
const notifySQL = `SELECT pg_notify(current_schema() || '.river_insert', json_build_object('queue', q)::text)
	FROM unnest($1::text[]) AS q`

// queueJobs returns the insert of jobs as a batch; ids holds their ids,
// in order, once its results were read.
func queueJobs(jobs []river.InsertManyParams) (b *pgx.Batch, ids *[]int64, queues []string, err error) {
	args := make([]any, 0, 6*len(jobs))
	now := time.Now()
	for _, j := range jobs {
		raw, err := json.Marshal(j.Args)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("encoding the job %s: %w", j.Args.Kind(), err)
		}
		opts := j.InsertOpts
		if opts == nil {
			opts = &river.InsertOpts{}
		}
		q := opts.Queue
		if q == "" {
			q = river.QueueDefault
		}
		attempts := opts.MaxAttempts
		if attempts <= 0 {
			attempts = maxJobAttempts
		}
		state, at := "available", (*string)(nil)
		if !opts.ScheduledAt.IsZero() {
			s := opts.ScheduledAt.UTC().Format(time.RFC3339Nano)
			at = &s
			if opts.ScheduledAt.After(now) {
				state = "scheduled"
			}
		}
		if state == "available" && !slices.Contains(queues, q) {
			queues = append(queues, q)
		}
		args = append(args, string(raw), j.Args.Kind(), strconv.Itoa(attempts), q, state, at)
	}
	b = &pgx.Batch{}
	got := make([]int64, 0, len(jobs))
	b.Queue(sqlstore.RowsSQL(insertJobsHead, insertJobsTail, 6, len(jobs)), args...).Query(func(rows pgx.Rows) error {
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		got = append(got, ids...)
		return err
	})
	return b, &got, queues, nil
}

// announcer tells the workers of the queues that got jobs, and whoever
// follows a run of the runs that ended (EndedChannel), from one goroutine
// at a time, after the transactions that recorded them committed. A NOTIFY
// inside those transactions would serialize their commits (Postgres
// commits the transactions that notified one at a time): 50 concurrent
// intakes ran up to 30% slower so, and webhook runs on two workers drained
// seconds later. What comes while a notification is out is sent together
// by the next.
type announcer struct {
	mu      sync.Mutex
	queues  []string
	ended   []string
	running bool
}

// endedSQL notifies the end of the runs $2 on the channel $1.
const endedSQL = `SELECT pg_notify($1, id) FROM unnest($2::text[]) AS id`

// announce tells the workers of queues that they have jobs: call it once
// the transaction that inserted them committed.
// The runs ended are told of too.
func (d *Driver) announce(queues, ended []string) {
	if len(queues) == 0 && len(ended) == 0 {
		return
	}
	a := &d.announcer
	a.mu.Lock()
	for _, q := range queues {
		if !slices.Contains(a.queues, q) {
			a.queues = append(a.queues, q)
		}
	}
	a.ended = append(a.ended, ended...)
	if a.running {
		a.mu.Unlock()
		return
	}
	a.running = true
	a.mu.Unlock()
	go d.announceAll()
}

// announceAll sends the announcements waiting until there are none.
func (d *Driver) announceAll() {
	a := &d.announcer
	for {
		a.mu.Lock()
		qs, ended := a.queues, a.ended
		a.queues, a.ended = nil, nil
		if len(qs) == 0 && len(ended) == 0 {
			a.running = false
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if len(qs) > 0 {
			if _, err := d.cfg.Store.Pool().Exec(ctx, notifySQL, qs); err != nil {
				// The workers find the jobs at their next poll (FetchPoll).
				d.cfg.Logger.Warn("telling the workers of new jobs", "queues", qs, "error", err)
			}
		}
		if len(ended) > 0 {
			if _, err := d.cfg.Store.Pool().Exec(ctx, endedSQL, EndedChannel, ended); err != nil {
				// Who follows them sees their end at the next look.
				d.cfg.Logger.Warn("telling of runs that ended", "runs", len(ended), "error", err)
			}
		}
		cancel()
	}
}
