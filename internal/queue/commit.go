package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
)

// applyTx runs one transaction on a run: it locks the run's row, catches
// the state up, applies the run's cancel request if it has not been, then
// the event of each apply, and records what they changed.
func (d *Driver) applyTx(ctx context.Context, runID string, reqs []*applyReq) error {
	p := &part{runID: runID, reqs: reqs}
	if err := d.commit(ctx, []*part{p}, false); err != nil {
		return err
	}
	return p.err
}

// part is one run's share of a transaction (commit): the applies it
// records, and what recording them left to do once the transaction ends.
type part struct {
	runID string
	reqs  []*applyReq
	env   *runEnv
	st    *state
	w     *write
	wants []*applyReq
	// run, last and evs are what the transaction read of the run under
	// its lock (nil run: gone, or held elsewhere when shared).
	run  *store.Run
	last int64
	evs  []*event
	// over: the run has nothing to record (it ended, or is gone: err
	// answers its applies). busy: another transaction holds the run's
	// row, which a shared transaction does not wait for.
	over bool
	busy bool
	err  error
	kept bool
	// complete: the jobs whose nodes the part records (completeIn).
	complete []int64
	done     chan partResult
}

// ended has the part over because its run ended: its applies are told
// so (applyReq.ended).
func (p *part) ended(status record.RunStatus) {
	p.over = true
	for _, r := range p.reqs {
		r.ended = status
	}
}

// commit records parts, each a different run, in one transaction: one
// COMMIT and one WAL flush for all. An error fails every part: nothing of
// any is recorded.
//
// The transaction never waits for a second connection of the pool while
// it holds one (what it reads elsewhere is read before it begins), and
// it takes the runs' states before its connection: workers whose jobs
// outnumber the pool's connections wait for a connection, never for each
// other. The runs' rows are locked in the order of parts, which callers
// sort by run id, so that two transactions of several runs never wait for
// each other.
//
// A shared transaction (record's) does not wait for a run's row another
// transaction holds: that run's part is left out, busy, to be recorded
// by a transaction of its own, so one run's wait holds up no other run.
//
// When this worker's last transaction of each run left the state it
// keeps, the transaction expects the runs as that left them: it computes
// its writes from the states at once and sends them behind statements
// that hold the rows and fail it unless nothing was written since (a
// cancel request, another worker's event): the BEGIN, the locks, the
// writes and the COMMIT in one round trip. Failed so, it is tried again
// the other way, each state rebuilt from the history, and the runs are
// not expected for their next transactions (expectAfter), nor are those
// whose history a transaction that read it found written by another.
func (d *Driver) commit(ctx context.Context, parts []*part, shared bool) error {
	defer func() {
		for _, p := range parts {
			if p.st != nil && !p.kept {
				d.drop(p.env.id)
			}
		}
	}()
	var live []*part
	for _, p := range parts {
		if err := d.prepare(ctx, p); err != nil {
			return err
		}
		if !p.over {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		return nil
	}
	if !d.expects(live) {
		return d.commitTx(ctx, live, shared, false)
	}
	d.expected.Add(1)
	err := d.commitTx(ctx, live, shared, true)
	if !postgres.Unexpected(err) {
		return err
	}
	d.unexpectedTx.Add(1)
	d.readFirst(live)
	for _, p := range live {
		// The state is still this goroutine's (held), staged past what
		// was committed: rebuilt from the history.
		*p = part{runID: p.runID, reqs: p.reqs, env: p.env, st: newState(p.env), done: p.done}
	}
	return d.commitTx(ctx, live, shared, false)
}

// expectAfter is how many of a run's next transactions on this worker
// read it under its lock after one that expected it failed, or that read
// it found events another wrote since this worker's last: its nodes are
// recorded by other workers too, whose events this worker's state lacks
// each time, and every failed try costs a round trip and a state rebuilt
// from the whole history.
const expectAfter = 256

// readFirst has the runs of parts read under their locks for their next
// expectAfter transactions on this worker.
func (d *Driver) readFirst(parts []*part) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.unexpected) >= 1024 {
		clear(d.unexpected)
	}
	for _, p := range parts {
		d.unexpected[p.runID] = expectAfter
	}
}

// expects reports whether a transaction of parts may expect their runs
// (commit): this worker's state of each is what its last transaction of
// the run left.
func (d *Driver) expects(parts []*part) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range parts {
		if !p.st.eventsKnown {
			return false
		}
		if n := d.unexpected[p.runID]; n > 0 {
			if n == 1 {
				delete(d.unexpected, p.runID)
			} else {
				d.unexpected[p.runID] = n - 1
			}
			return false
		}
	}
	return true
}

// commitTx is commit's transaction of its live parts; expect: from the
// states kept, in one round trip.
func (d *Driver) commitTx(ctx context.Context, live []*part, shared, expect bool) error {
	// Read under the locks: the BEGIN, each run's row with the seq of its
	// last event, and what its history gained since this worker's state,
	// one round trip; the writes and the inserts of the jobs the runs
	// release then ride with the COMMIT (flushAll), one more. Expected, the
	// first round trip rides with the COMMIT too.
	tx, err := d.cfg.Store.BeginPipe(ctx)
	if err != nil {
		return fmt.Errorf("run %s: %w", live[0].runID, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	b := &pgx.Batch{}
	for _, p := range live {
		if expect {
			postgres.QueueExpectRun(b, p.runID, shared, p.st.events, p.st.cancelled)
			queueExpectLog(b, p.runID, p.st.seq)
			p.run, p.last = &store.Run{ID: p.runID, Status: record.RunRunning}, p.st.events
			continue
		}
		// The history is read after the lock: it holds every event
		// committed before it (a skipped run's is not used).
		postgres.QueueLockRun(b, p.runID, shared, &p.run, &p.last)
		queueReadLog(b, p.runID, p.env.seal, p.st.seq, &p.evs)
	}
	if expect {
		tx.Defer(b)
	} else {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("%s: %w", partRuns(live), err)
		}
		var written []*part
		for _, p := range live {
			if p.st.eventsKnown && len(p.evs) > 0 {
				written = append(written, p) // by another since this worker's last
			}
		}
		if len(written) > 0 {
			d.readFirst(written)
		}
	}
	for _, p := range live {
		switch {
		case p.run == nil && shared:
			// Held elsewhere, or gone: its own transaction tells.
			d.put(p.st)
			p.busy, p.kept = true, true
		case p.run == nil:
			p.over, p.err = true, river.JobCancel(fmt.Errorf("run %s: %w", p.runID, store.ErrNotFound))
		default:
			if err := d.stage(ctx, tx, p); err != nil {
				return err
			}
		}
	}
	// The rows of the runs staged go in the same statements, and so do
	// the jobs they complete.
	var (
		ws       []*write
		complete []int64
	)
	for _, p := range live {
		if p.w != nil && !p.busy && !p.over {
			ws = append(ws, p.w)
			complete = append(complete, p.complete...)
		}
	}
	if len(ws) > 0 {
		if err := d.flushAll(ctx, tx, ws, false); err != nil {
			return err
		}
	}
	if err := d.completeIn(ctx, tx, complete); err != nil {
		return fmt.Errorf("%s: %w", partRuns(live), err)
	}
	if err := tx.Commit(ctx); err != nil {
		err = fmt.Errorf("%s: %w", partRuns(live), err)
		if !postgres.MayHaveCommitted(err) || !d.wentThrough(ctx, live, err) {
			return err
		}
	}
	for _, p := range live {
		if p.w != nil && !p.busy && !p.over {
			d.committed(p)
		}
	}
	return nil
}

// partRuns names the runs of parts for an error.
func partRuns(parts []*part) string {
	if len(parts) == 1 {
		return "run " + parts[0].runID
	}
	ids := make([]string, len(parts))
	for i, p := range parts {
		ids[i] = p.runID
	}
	return "runs " + strings.Join(ids, ", ")
}

// prepare reads, before the transaction, what a part needs of its run
// (its environment), and takes the run's state. A run that is gone or
// ended has the part over.
func (d *Driver) prepare(ctx context.Context, p *part) error {
	d.mu.Lock()
	env := d.envs[p.runID]
	d.mu.Unlock()
	if env == nil {
		pre, err := d.readRun(ctx, p.runID)
		if errors.Is(err, store.ErrNotFound) {
			p.over, p.err = true, river.JobCancel(err)
			return nil
		}
		if err != nil {
			return err
		}
		if pre.Status.Final() {
			d.forget(p.runID)
			p.ended(pre.Status)
			return nil
		}
		if env, err = d.env(ctx, pre); err != nil {
			return err
		}
	}
	st := d.take(env.id)
	if st == nil || st.env != env {
		st = newState(env)
	}
	p.env, p.st = env, st
	return nil
}

// stage records a part in tx, its run's row held: it catches the state
// up, applies the run's cancel request if it has not been, then the event
// of each apply, and queues the writes of what they changed.
func (d *Driver) stage(ctx context.Context, tx *postgres.Pipe, p *part) error {
	runID, st, run := p.runID, p.st, p.run
	if run.Status.Final() {
		d.forget(runID)
		p.ended(run.Status)
		return nil
	}
	for _, e := range p.evs {
		if _, _, err := st.feed(e); err != nil {
			return err
		}
	}
	w := d.newWrite(st)
	w.last = p.last
	withdraw := false
	if run.CancelRequested != nil && !st.cancelled {
		if err := d.feed(ctx, tx, w, &event{Kind: kindCancel}); err != nil {
			return err
		}
		withdraw = true
	}
	// Each apply in its order: its first event, what its node reported,
	// its event.
	for _, r := range p.reqs {
		if err := d.feedMk(ctx, tx, w, r.first); err != nil {
			return err
		}
		w.events = append(w.events, r.extra...)
		if err := d.feedMk(ctx, tx, w, r.mk); err != nil {
			return err
		}
		withdraw = withdraw || r.withdraw
	}
	if withdraw && st.cancelled && !st.run.Ended() {
		evs, err := d.withdraw(ctx, tx, st)
		if err != nil {
			return err
		}
		if err := d.feed(ctx, tx, w, evs...); err != nil {
			return err
		}
	}
	var complete []int64
	for _, r := range p.reqs {
		if r.cont {
			p.wants = append(p.wants, r)
		}
		if r.complete != 0 {
			complete = append(complete, r.complete)
		}
	}
	if len(p.wants) > 0 && d.cfg.Exec == nil {
		if err := d.runPure(ctx, tx, w); err != nil {
			return err
		}
	}
	d.pick(w, len(p.wants))
	if err := d.beginTaken(ctx, tx, w); err != nil {
		return err
	}
	// Its rows and the jobs it completes are written by commitTx, with
	// the other parts' (flushAll, completeIn).
	p.w, p.complete = w, complete
	return nil
}

// committed does what a part's transaction left for after its COMMIT:
// tell the workers of the jobs inserted and who follows of the run's end,
// hand the applies that continue their taken jobs, keep the state.
func (d *Driver) committed(p *part) {
	w, st := p.w, p.st
	d.announce(w.announce, w.ended)
	for i, j := range w.taken {
		p.wants[i].next = j
	}
	for _, r := range p.reqs {
		r.completed = r.complete != 0
	}
	w.committed()
	d.wakeLater(w.wakes)
	st.events, st.eventsKnown = w.next, true
	if st.run.Ended() && st.run.Running() == 0 {
		d.forget(p.runID)
	} else {
		d.put(st)
		p.kept = true
	}
}

// maxParts bounds the runs one transaction of a worker records.
const maxParts = 64

// contendedFor is how many of a run's next transactions on this worker
// are its own after its row was found held by another transaction: the
// run's nodes finish on several workers at once, whose transactions take
// its row in turn, and its part of a shared transaction would be left out
// each time.
const contendedFor = 256

// partResult answers a part: the error of each of its applies, or that
// it leads the worker's next transaction.
type partResult struct {
	errs []error
	lead bool
	// alone: the part is to be recorded in a transaction of its own (it
	// was busy, or the shared transaction failed: with err when it was
	// the part's alone).
	alone bool
	err   error
}

// record records the applies of a run in the worker's next transaction
// and returns the error of each.
//
// A worker has one such transaction under way at a time: the runs whose
// applies arrive meanwhile wait, and the next records them all (up to
// maxParts runs), with one COMMIT and one WAL flush however many runs'
// nodes finished, as the SQLite store's committer does for the runs of a
// process. A transaction of several runs that fails is tried again for
// each run alone, and one of several applies of a run for each apply
// alone, so one bad event fails only its own apply.
func (d *Driver) record(ctx context.Context, runID string, reqs []*applyReq) []error {
	p := &part{runID: runID, reqs: reqs, done: make(chan partResult, 1)}
	d.mu.Lock()
	if n := d.contended[runID]; n > 0 {
		if n == 1 {
			delete(d.contended, runID)
		} else {
			d.contended[runID] = n - 1
		}
		d.mu.Unlock()
		return d.answer(ctx, p, partResult{alone: true})
	}
	d.parts = append(d.parts, p)
	lead := !d.committing
	d.committing = true
	d.mu.Unlock()
	if !lead {
		if r := <-p.done; !r.lead {
			return d.answer(ctx, p, r)
		}
	}
	// p is the first part waiting: it leads the next transaction, which
	// records it.
	d.mu.Lock()
	n := min(len(d.parts), maxParts)
	parts := slices.Clone(d.parts[:n])
	d.parts = slices.Delete(d.parts, 0, n)
	d.mu.Unlock()
	d.commitGroup(ctx, parts)
	d.mu.Lock()
	if len(d.parts) > 0 {
		d.parts[0].done <- partResult{lead: true}
	} else {
		d.committing = false
	}
	d.mu.Unlock()
	return d.answer(ctx, p, <-p.done)
}

// answer returns the errors of a part's applies from its result,
// recording it alone first when the result says so.
func (d *Driver) answer(ctx context.Context, p *part, r partResult) []error {
	if !r.alone {
		return r.errs
	}
	err := r.err
	if err == nil {
		err = d.applyTx(ctx, p.runID, p.reqs)
	}
	errs := make([]error, len(p.reqs))
	switch {
	case err == nil:
	case len(p.reqs) == 1:
		errs[0] = err
	default:
		for i, r := range p.reqs {
			errs[i] = d.applyTx(ctx, p.runID, []*applyReq{r})
		}
	}
	return errs
}

// commitGroup records parts in one transaction and answers each. A part
// that was busy, or whose transaction failed, is answered to be recorded
// alone, by its own goroutine: the lead goes on meanwhile.
func (d *Driver) commitGroup(ctx context.Context, parts []*part) {
	slices.SortFunc(parts, func(a, b *part) int { return strings.Compare(a.runID, b.runID) })
	err := d.commit(ctx, parts, true)
	for _, p := range parts {
		switch {
		case err != nil && len(parts) == 1:
			p.done <- partResult{alone: true, err: err}
		case err != nil || p.busy:
			if p.busy {
				d.mu.Lock()
				if len(d.contended) >= 1024 {
					clear(d.contended)
				}
				d.contended[p.runID] = contendedFor
				d.mu.Unlock()
			}
			p.done <- partResult{alone: true}
		default:
			errs := make([]error, len(p.reqs))
			for i := range errs {
				errs[i] = p.err
			}
			p.done <- partResult{errs: errs}
		}
	}
}
