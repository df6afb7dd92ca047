package durable

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Host is where the executions of one process keep their runs: the store,
// with the group committer they share, and the run folders (Dir). An
// execution opens its run's folder, records child runs, and ends its run
// — parked, left, or released — through it.
type Host struct {
	Store    store.Store
	Commit   *Committer
	Clock    clock.Clock
	Registry *node.Registry
	// Dir holds the run folders; with OnDemandFolders a run's folder is
	// made only when it has something to hold.
	Dir             string
	OnDemandFolders bool
	// LeaseTTL is how long an owner's lease lasts without renewal.
	LeaseTTL time.Duration
	// Blobs is the shared blob store of runs on Postgres; nil: the big
	// values of a run are kept in its folder.
	Blobs blob.Backend
	// Doc is the document of a run that ended or parked, for its folder's
	// run.json, its secrets masked with red.
	Doc func(ctx context.Context, run *store.Run, res *engine.Result, red *redact.Redactor) any
	// Trace, when set, is the trace level of every run executed here
	// (skein run --trace), over their workflows' own.
	Trace workflow.Trace
	// SyncEnds records the child runs as Recorder.SyncEnds says (the
	// children of a child run on a worker).
	SyncEnds bool
}

// TraceFolder has rl, the folder of run runID of w, write each node's
// run.json and events.jsonl when it gets the run's document (the run ends
// or waits), when the run is traced with nodes (w.Traces(h.Trace)): the
// document's steps, and the events the store has committed for the run,
// read then. Nothing changes for a run traced with run.
func (h *Host) TraceFolder(ctx context.Context, rl *runlog.Writer, w *workflow.Workflow, runID string) {
	if w.Traces(h.Trace) != workflow.TraceNodes {
		return
	}
	bg := context.WithoutCancel(ctx) // read after the run's own context ended
	rl.TraceNodes(func() ([]record.EventRow, error) { return h.Store.Events(bg, runID, 0, 0) })
}

// BlobStore is where a run executed here keeps its big values: the shared
// store when the runs are in Postgres (so that any machine on the database
// reads them), else the folder of rl, the run's folder, made through rl
// when the first is kept (a served run's folder is made on demand). red
// is the run's Redactor, whose secrets are never kept; nil for a store of
// records masked already.
func (h *Host) BlobStore(rl *runlog.Writer, red *redact.Redactor) (*blob.Store, error) {
	if h.Blobs != nil {
		return blob.New(h.Blobs, holdsSecret(red)), nil
	}
	return blob.NewRunStore(rl, holdsSecret(red))
}

// OpenFolder opens the folder of a new run: at once, or on demand
// (OnDemandFolders).
func (h *Host) OpenFolder(workflow, runID string, started time.Time, meta map[string]any, red *redact.Redactor) (*runlog.Writer, error) {
	if h.OnDemandFolders {
		return runlog.OpenOnDemand(h.Dir, workflow, runID, started, meta, red)
	}
	return runlog.Open(h.Dir, workflow, runID, started, meta, red)
}

// ReopenFolder opens the folder of a run that goes on, as OpenFolder.
func (h *Host) ReopenFolder(dir, workflow, runID string, started time.Time, meta map[string]any, red *redact.Redactor) (*runlog.Writer, error) {
	if h.OnDemandFolders {
		return runlog.ReopenOnDemand(dir, workflow, runID, started, meta, red)
	}
	return runlog.Reopen(dir, workflow, runID, started, meta, red)
}

// Leave ends an execution stopped without ending its run (a process that
// shuts down): its records are committed with the run still running and
// no owner, so it is interrupted, and a resume continues it (reusing what
// succeeded). The run folder keeps saying running, as after a crash.
func (h *Host) Leave(run *store.Run, res *engine.Result, rec *Recorder, recs Tee, rl *runlog.Writer, l *Lease) error {
	_ = recs.Event(engine.TimedEvent{Time: h.Clock.Now(), Event: engine.Event{Type: EventExecutionLeft,
		Data: map[string]any{"reason": "the process running it stopped; resume continues the run"}}})
	_ = rl.Flush()
	l.Stop()
	run.Status, run.Outputs, run.Error, run.FinishedAt = engine.RunRunning, nil, nil, nil
	run.Tokens, run.CostUSD = res.Tokens, res.CostUSD
	err := rec.Finish(run)
	if err == nil {
		run.Owner, run.LeaseUntil, run.LeaseExpired = store.Owner{}, time.Time{}, true
	}
	return err
}

// Park ends an execution whose run only waits (engine.Options.Park): its records
// are committed with the run waiting, its earliest wake-up time and no
// owner, and the process holds nothing for it. A signal (Runner.Signal)
// or its wake-up time (Runner.Due) resumes it.
//
// flush, when set, flushes what else shows the run (an observer). It
// returns whether a signal was saved for a waiting step meanwhile, so the
// run must be resumed at once, and the error of recording it.
func (h *Host) Park(ctx context.Context, run *store.Run, res *engine.Result, rec *Recorder, recs Tee, flush func(),
	rl *runlog.Writer, l *Lease, red *redact.Redactor) (signalled bool, err error) {
	data := map[string]any{"reason": "every live branch waits; a signal or the wake-up time resumes the run"}
	var awaiting []any
	for _, a := range res.Awaiting {
		awaiting = append(awaiting, map[string]any{"node": a.Node, "visit": a.Visit})
	}
	if len(awaiting) > 0 {
		data["awaiting"] = awaiting
	}
	if res.WakeAt != nil {
		data["wake_at"] = res.WakeAt.UTC().Format(time.RFC3339Nano)
	}
	_ = recs.Event(engine.TimedEvent{Time: h.Clock.Now(), Event: engine.Event{Type: EventExecutionParked, Data: data}})
	_ = rl.Flush()
	if flush != nil {
		flush()
	}
	l.Stop()
	run.Status, run.Outputs, run.Error, run.FinishedAt = engine.RunWaiting, nil, nil, nil
	run.WakeAt = nil
	if res.WakeAt != nil {
		wake := res.WakeAt.UTC().Truncate(time.Microsecond) // as the store keeps it
		run.WakeAt = &wake
	}
	run.Tokens, run.CostUSD = res.Tokens, res.CostUSD
	if err := rec.Finish(run); err != nil {
		// The run stays owned until its lease runs out: then it is
		// interrupted, and a resume continues it.
		return false, err
	}
	run.Owner, run.LeaseUntil, run.LeaseExpired = store.Owner{}, time.Time{}, true
	err = rl.Finish(h.Doc(ctx, run, res, red))
	// A signal saved while this execution parked found the run owned and
	// left it to its owner, which no longer looks: it is resumed for it.
	return Signalled(context.WithoutCancel(ctx), h.Store, run.ID, res.Awaiting), err
}

// Release gives up a claimed run that could not start: it is left as it
// was, failed or interrupted, for the next resume.
func (h *Host) Release(ctx context.Context, run *store.Run) {
	if run.Owner.Token == "" {
		return
	}
	now := h.Clock.Now()
	fin := *run
	fin.Status, fin.FinishedAt = engine.RunFailed, &now
	if fin.Error == nil {
		fin.Error = &node.Error{Code: "not_started", Category: node.CategoryInternal, Message: "the run could not start"}
	}
	_ = h.Store.SaveBatch(context.WithoutCancel(ctx), []store.Batch{{RunID: run.ID, Token: run.Owner.Token, Finish: &fin}})
}

// ChildFactory records each subworkflow's child run as a run of its own,
// owned with the parent's token, with its own folder. A child run that
// exists already (the parent was resumed) is claimed again and reuses what
// it completed.
func (h *Host) ChildFactory(ctx context.Context, parent *store.Run, l *Lease, red *redact.Redactor) engine.ChildFactory {
	return func(cw *workflow.Workflow, id string, inputs map[string]any) (*engine.ChildRun, error) {
		bg := context.WithoutCancel(ctx)
		started := h.Clock.Now()
		abs, _ := filepath.Abs(cw.File)
		var crl *runlog.Writer
		var reuse *Reuser
		var spent engine.Spent
		child, err := h.Store.Run(bg, id)
		switch {
		case err == nil:
			hist, herr := h.Store.StepHistory(bg, id)
			if herr != nil {
				return nil, herr
			}
			waiting := engine.RunStatus(child.Status) == engine.RunWaiting
			if child, err = h.Store.ClaimRun(bg, id, parent.Owner, h.LeaseTTL, child.Owner.Token); err != nil {
				return nil, err
			}
			KillOrphans(hist)
			reuse = ForResume(hist)
			reuse.Continue = waiting
			spent = Spent(bg, h.Store, child, hist)
			if crl, err = h.ReopenFolder(child.Dir, cw.Name, id, started, map[string]any{"file": abs, "parent": parent.ID}, red); err != nil {
				return nil, err
			}
		case errors.Is(err, store.ErrNotFound):
			if crl, err = h.OpenFolder(cw.Name, id, started, map[string]any{"file": abs, "parent": parent.ID}, red); err != nil {
				return nil, err
			}
			// Its inputs as a queued child's are kept, and a top-level
			// run's: what it was given (GET /api/runs/{id} shows them).
			child = &store.Run{ID: id, Workflow: cw.Name, File: abs, Dir: crl.Dir(), ParentID: parent.ID, Inputs: inputs,
				Status: engine.RunRunning, StartedAt: started, Owner: parent.Owner, LeaseTTL: h.LeaseTTL}
			if err := h.Store.CreateRun(bg, child); err != nil {
				crl.Close()
				return nil, err
			}
		default:
			return nil, err
		}
		h.TraceFolder(ctx, crl, cw, id)
		l.AddChild(id, true)
		blobs, err := h.BlobStore(crl, red)
		if err == nil && reuse != nil {
			err = blobs.RemoveStale()
		}
		var recBlobs *blob.Store
		if err == nil {
			recBlobs, err = h.BlobStore(crl, nil) // its records are masked already
		}
		if err != nil {
			l.AddChild(id, false)
			crl.Close()
			return nil, err
		}
		rec := NewRecorder(h.Commit, id, recBlobs, red)
		rec.Generation, rec.Token, rec.SyncEnds = child.Generation, parent.Owner.Token, h.SyncEnds
		crl.Later = rec.AfterCommit
		cr := &engine.ChildRun{
			Blobs:       blobs,
			Recorder:    Tee{crl, rec},
			ArtifactDir: crl.AbsArtifactDir(),
			Files:       runlog.Files(cw, crl.Dir()),
			Spent:       spent,
		}
		if AwaitsSignals(cw, h.Registry) {
			// A child waits in its parent's process: the parent's lease
			// polls the child's signals.
			sigs, err := h.Store.Signals(bg, id, 0)
			if err != nil {
				l.AddChild(id, false)
				crl.Close()
				return nil, err
			}
			ch := make(chan engine.Signal, SignalBuffer)
			cr.Signals, cr.SignalCh = Signals(sigs), ch
			l.WatchSignals(id, LastSeq(sigs), ch)
		}
		cr.Finish = func(res *engine.Result) error {
			defer l.AddChild(id, false)
			defer crl.Close()
			fin := res.FinishedAt
			child.Status, child.Outputs, child.Error, child.FinishedAt = res.Status, res.Outputs, res.Error, &fin
			child.Tokens, child.CostUSD = res.Tokens, res.CostUSD
			_ = crl.Flush()
			if err := rec.Finish(child); err != nil {
				return err
			}
			return crl.Finish(h.Doc(bg, child, res, red))
		}
		if reuse != nil {
			cr.Reuse = reuse.Reuse
		}
		return cr, nil
	}
}

// holdsSecret is how a run's blobs tell a value that holds a secret: none
// without secrets.
func holdsSecret(red *redact.Redactor) func(string) bool {
	if red == nil {
		return nil
	}
	return red.Contains
}

// EventExecutionParked is the event recorded when an execution ends with
// its run waiting (Options.Park).
const EventExecutionParked = "execution_parked"

// EventExecutionLeft is the event recorded when an execution stops
// without ending its run (Options.Leave): the run is interrupted.
const EventExecutionLeft = "execution_left"
