package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
)

// maxStarts is the most runs one transaction starts.
const maxStarts = 64

// startWriters is how many transactions of starts may be under way at
// once. One is under way while starts come one at a time or a few at a
// time: the runs that arrive while it is wait and go together in the
// next, which costs the server and the database less a run than more
// transactions of fewer runs each. Another starts beside it when
// startsAbreast runs wait, so that a burst keeps more of the database's
// cores busy (BENCHMARKS.md, 2026-12-05 12:49–13:20: at 2,000 webhooks a
// second through 50 connections, one transaction at a time fell behind,
// four at a time cost 1.4× the CPU a request, a second one when 16 wait
// kept up).
const startWriters = 4

// startsAbreast is how many starts waiting open another transaction
// beside the ones under way (up to startWriters).
const startsAbreast = 16

// startTimeout bounds the transaction of a group of starts, which no one
// caller's context governs.
const startTimeout = time.Minute

// start is a run waiting for the transaction that records its start.
type start struct {
	run     *store.Run
	env     *runEnv
	payload map[string]any
	w       *write
	err     error
	// exists is set when the run's id was found taken (a delivery taken
	// twice) by the last transaction that tried it.
	exists bool
	// wake is closed when the start was recorded (done), or when its
	// caller is to record the next group, group.
	wake  chan struct{}
	done  bool
	group []*start
}

// starts groups the runs started at the same time (the webhooks a server
// takes) into one transaction: its statements — each run's row, its
// trigger's step and history, the jobs of its first nodes — and its COMMIT
// go out in one round trip, one WAL flush for all. A group is written by
// one of its callers; the runs that arrive while one is under way wait and
// go in the next group, written by the first of them, unless
// startsAbreast wait: up to startWriters groups are then written at a
// time. A group that fails
// (a run that exists: a delivery taken twice) is tried again run by run,
// so that each caller gets its own answer.
type starts struct {
	mu      sync.Mutex
	queue   []*start
	writing int
}

// do records s, in a group with the starts waiting with it.
func (g *starts) do(ctx context.Context, d *Driver, s *start) error {
	s.wake = make(chan struct{})
	g.mu.Lock()
	g.queue = append(g.queue, s)
	var group []*start
	if g.writing > 0 && (g.writing == startWriters || len(g.queue) < startsAbreast) {
		g.mu.Unlock()
		<-s.wake
		if s.done {
			return s.err
		}
		group = s.group // handed over, s first, in the place of the last writer
	} else {
		// The queue holds s alone (none under way) or startsAbreast
		// starts ending with s: a writer that ends hands the next group
		// over while as many wait, so no more can.
		g.writing++
		group = g.take()
		g.mu.Unlock()
	}

	d.startGroup(ctx, group)

	g.mu.Lock()
	for _, m := range group {
		m.done = true
		if m != s {
			close(m.wake)
		}
	}
	// The next group's writer: the first start that waits, unless
	// another group is under way and fewer than startsAbreast wait —
	// they go together when that one ends.
	if len(g.queue) > 0 && (g.writing == 1 || len(g.queue) >= startsAbreast) {
		next := g.queue[0]
		next.group = g.take()
		close(next.wake) // the next group's writer
	} else {
		g.writing--
	}
	g.mu.Unlock()
	return s.err
}

// take removes the next group from the queue; g.mu is held.
func (g *starts) take() []*start {
	group := g.queue[:min(len(g.queue), maxStarts)]
	g.queue = append([]*start(nil), g.queue[len(group):]...)
	return group
}

// startGroup records the starts of group, in one transaction if it can,
// else each in its own.
func (d *Driver) startGroup(ctx context.Context, group []*start) {
	if len(group) == 1 {
		group[0].err = d.startTx(ctx, group)
		return
	}
	// The transaction is the group's, not its writer's: a writer whose
	// request was given up must not fail the others'.
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	for len(group) > 1 {
		err := d.startTx(gctx, group)
		if err == nil {
			return
		}
		rest := group[:0:0]
		for _, m := range group {
			if m.exists {
				m.err = fmt.Errorf("starting run %s: %w", m.run.ID, store.ErrExists)
			} else {
				rest = append(rest, m)
			}
		}
		if len(rest) == len(group) {
			for _, m := range group {
				m.err = d.startTx(gctx, []*start{m})
			}
			return
		}
		group = rest
	}
	if len(group) == 1 {
		group[0].err = d.startTx(gctx, group)
	}
}

// startTx records the starts of group in one transaction: each run's
// row, its first history event and what it released. The transaction's
// statements and its COMMIT go out in one round trip.
func (d *Driver) startTx(ctx context.Context, group []*start) error {
	what := "starting run " + group[0].run.ID
	if len(group) > 1 {
		what = fmt.Sprintf("starting %d runs", len(group))
	}
	tx, err := d.cfg.Store.BeginPipe(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	ws := make([]*write, len(group))
	for i, s := range group {
		w := d.newWrite(newState(s.env))
		if err := d.feed(ctx, tx, w, &event{Kind: kindStart, Payload: s.payload}); err != nil {
			return err
		}
		// The run's row goes first, with the count of the events the
		// transaction writes: a run id that exists (a delivery taken
		// already) fails it, and nothing is kept.
		created := &pgx.Batch{}
		if err := postgres.QueueStartRun(created, s.run, int64(len(w.events))); err != nil {
			return err
		}
		s.exists = false
		q := created.QueuedQueries[0]
		fn := q.Fn
		q.Fn = func(br pgx.BatchResults) error {
			err := fn(br)
			s.exists = errors.Is(err, store.ErrExists)
			return err
		}
		tx.Defer(created)
		s.w, ws[i] = w, w
	}
	// The rows of all the runs then go in the same statements.
	if err := d.flushAll(ctx, tx, ws, true); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		err = fmt.Errorf("%s: %w", what, err)
		if !postgres.MayHaveCommitted(err) || !d.startedAnyway(ctx, group, err) {
			return err
		}
	}
	for _, s := range group {
		s.w.committed()
		d.announce(s.w.announce, s.w.ended)
		d.wakeLater(s.w.wakes)
	}
	return nil
}

// startedAnyway learns whether the transaction of a group of starts,
// whose COMMIT failed with err and may have committed all the same (its
// answer was lost), did (answered): then each run is in the database as
// the start made it, with its id and its start time. Told that the start
// failed, its caller would start the run a second time.
func (d *Driver) startedAnyway(ctx context.Context, group []*start, err error) bool {
	ids := make([]string, len(group))
	ats := make([]time.Time, len(group))
	for i, s := range group {
		ids[i], ats[i] = s.run.ID, s.run.StartedAt
	}
	return d.answered(ctx, err, len(group), func() (found int, err error) {
		err = d.cfg.Store.Pool().QueryRow(ctx, `SELECT count(*) FROM runs
			JOIN unnest($1::text[], $2::timestamptz[]) AS s(id, at) ON runs.id = s.id AND runs.started_at = s.at`,
			ids, ats).Scan(&found)
		return found, err
	})
}
