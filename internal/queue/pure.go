package queue

import (
	"context"
	"errors"
	"os"
	"slices"
	"unicode/utf8"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store/postgres"
)

// Pure nodes in the transaction.
//
// A node of a pure kind (set, template, if, switch, loop, foreach, merge,
// fail) reads the run's values and nothing else, and may run twice. When a
// worker's transaction releases one onto a queue the worker works, the
// worker runs it there, under the run's lock, and feeds its outcome to the
// same transaction — the node's began and finished, as a pure node taken
// as a job records them — instead of inserting its job: a chain of pure
// nodes costs one transaction, not one each. What that releases runs so in
// turn, up to maxPure nodes a transaction (the run's row stays locked
// while they run); the rest are jobs as before. A worker lost before the
// COMMIT recorded none of them: it is as if it died before recording the
// node whose outcome began the transaction, which is handled as any node
// of a lost worker (rescue.go: a node that began counts as lost and its
// retries decide), and the pure nodes after it run once that node's
// outcome is recorded.
//
// A pure node whose outcome holds a value for the blob store (one over
// blob.InlineLimit, or an error message over engine.MaxMessage) is not
// run so: the blob store writes on a connection of its own, which a
// transaction never waits for. It stays a job, and runs the usual way.
// Neither is one once the run stops, the worker stops, or the driver runs
// nodes through Config.Exec.

// maxPure bounds the pure nodes one transaction runs.
const maxPure = 64

// errInTransaction: a pure node run in a transaction has a value to keep
// in the blob store.
var errInTransaction = errors.New("a value for the blob store, which a transaction does not write")

// refuseWrites is a blob backend that keeps nothing new: a spill through
// it fails with errInTransaction.
type refuseWrites struct{ blob.Backend }

func (refuseWrites) Stage() (*os.File, error) { return nil, errInTransaction }

func (refuseWrites) Keep(context.Context, string, *blob.Blob) error { return errInTransaction }

// Inlined is how many pure nodes this worker ran in the transaction that
// released them.
func (d *Driver) Inlined() int64 { return d.inlined.Load() }

// runPure runs, in tx, the pure nodes w's events released onto this
// worker's queues, and feeds their outcomes to w.
func (d *Driver) runPure(ctx context.Context, tx *postgres.Pipe, w *write) error {
	st := w.st
	env := st.env
	for range maxPure {
		if status, _ := st.run.Status(); status != engine.RunCompleted || st.cancelled {
			return nil
		}
		i, t := d.pureJob(w)
		if t == nil {
			return nil
		}
		started := d.now()
		var emitted []engine.TimedEvent
		tenv := env.task
		tenv.Scope = st.scope
		tenv.Blobs = env.inTx
		tenv.Emit = func(t *engine.Task, kind string, data map[string]any) {
			data, _ = env.red.Map(data)
			emitted = append(emitted, engine.TimedEvent{Time: d.cfg.Clock.Now().UTC(),
				Event: engine.Event{Type: kind, Node: t.Node.ID, Visit: t.Visit, Iteration: t.Iteration, Data: data}})
		}
		params, hash, perr := engine.Prepare(st.scope, t, engine.NodeDef(t.Node), engine.UpstreamHashes(env.plan, t.Node, st.hashes), engine.TaskClock(tenv.Services, tenv.Now, t))
		var oc engine.Outcome
		if perr != nil {
			oc.Err = perr
		} else {
			oc = tenv.Call(ctx, t, params)
			oc, params = engine.Keep(env.inTx, nil, t.Node, oc, params)
		}
		if oc.Err != nil && (errors.Is(oc.Err, errInTransaction) || utf8.RuneCountInString(oc.Err.Message) > engine.MaxMessage) {
			w.skipPure = append(w.skipPure, t.ID)
			continue
		}
		w.drop(i)
		if err := d.feed(ctx, tx, w, &event{Kind: kindBegan, Task: t.ID, At: started, Started: started, RanOn: env.place}); err != nil {
			return err
		}
		w.events = append(w.events, emitted...)
		if err := d.feed(ctx, tx, w, &event{Kind: kindFinished, Task: t.ID, Output: oc.Output, Directives: oc.Directives,
			Err: oc.Err, Params: params, Started: started, Hash: hash}); err != nil {
			return err
		}
		d.inlined.Add(1)
	}
	return nil
}

// pureJob returns the first task job of w that runPure may run, with its
// index in w.jobs.
func (d *Driver) pureJob(w *write) (int, *engine.Task) {
	for i, j := range w.jobs {
		args, ok := j.Args.(TaskArgs)
		if !ok {
			continue
		}
		if _, served := d.cfg.Queues[j.InsertOpts.Queue]; !served {
			continue
		}
		t := w.st.run.Task(args.Task)
		if t == nil || !engine.Inlines(t.Node) || w.st.begun[t.ID] || slices.Contains(w.skipPure, t.ID) {
			continue
		}
		return i, t
	}
	return -1, nil
}

// drop removes job i of w, which runPure ran: the timer wakes that name
// later jobs by index follow it.
func (w *write) drop(i int) {
	w.jobs = append(w.jobs[:i], w.jobs[i+1:]...)
	for k := range w.pending {
		if w.pending[k].job > i {
			w.pending[k].job--
		}
	}
}
