package runlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/workflow"
)

var (
	// ErrClosed is returned by a Writer used after Finish or Close.
	ErrClosed = errors.New("run folder is closed")
	// ErrInvalidName is returned for a workflow name, run id or node id
	// that cannot name a folder.
	ErrInvalidName = errors.New("invalid name")
	// ErrUnsafePath is returned when a symlink or a file stands where the
	// Writer needs to create a folder or open a file.
	ErrUnsafePath = errors.New("unsafe path in run folder")
)

// Interface guard.
var _ engine.Recorder = (*Writer)(nil)

const (
	runFile      = "run.json"
	eventsFile   = "events.jsonl"
	artifactsDir = "artifacts"
	// folderTime is the layout of the start time in a run folder's name.
	folderTime = "2006-01-02_15-04-05"
	// maxNameLen bounds a workflow name or run id, well under the 255
	// bytes most file systems allow in one name.
	maxNameLen = 128
)

// Writer writes one run's folder. It is the engine's Recorder for that
// run: Step and Event only buffer, Flush hands the buffer to the Writer's
// goroutine (at once, or through Later once the records are committed),
// and that goroutine writes the files. Finish and Close stop it.
type Writer struct {
	dir      string
	runID    string
	workflow string
	meta     map[string]any
	root     *os.Root // the run folder; every file operation goes through it
	// redact masks the run's secrets in everything written.
	redact *redact.Redactor
	// fresh is set when Open made the folder: no stale file can be in it.
	fresh bool
	// onDemand is set by OpenOnDemand: the folder is made when a node
	// needs it (made), and events go to the database only.
	onDemand, made bool
	// parent is the folder of the workflow's runs, made with the run's.
	parent string

	// Later, when set before the run starts, receives what each Flush
	// hands over and must call it once the records are committed (the
	// durable recorder's AfterCommit), so the folder holds committed
	// records only. Without it Flush queues the batch at once.
	Later func(func())

	mu      sync.Mutex
	cond    *sync.Cond
	pending batch   // recorded since the last Flush
	queue   []batch // handed over, not written yet
	// queued and written count batches, for Wait.
	queued, written int
	stopping        bool // Finish or Close asked the goroutine to stop
	closed          bool
	finished        bool
	// finishErr is what Finish returned.
	finishErr error
	// err is the first error of the goroutine; Flush and Finish return it.
	err  error
	done chan struct{}

	// nodeEvents, set by TraceNodes, reads the run's events for the node
	// files Finish writes; nil: no node files.
	nodeEvents func() ([]record.EventRow, error)

	// Owned by the goroutine until done is closed, then by Finish or Close.
	events  *os.File
	checked map[string]bool // node ids whose artifact folder was checked; under mu
	// madeAbove are the folders above the run's that Open made, whose
	// names the run's end syncs into their parents.
	madeAbove []string
	// syncedFS is set when the run's end synced the whole file system
	// (sync): the folder held files others wrote.
	syncedFS bool
}

// batch is what one Flush hands over.
type batch struct {
	events []engine.TimedEvent
}

// Open creates the run folder
// <root>/runs/<workflow>/<YYYY-MM-DD_HH-MM-SS>_<runID>/, the time being
// started in UTC, and writes its run.json with status "running" and meta
// (the workflow file, inputs, trigger: whatever the caller wants kept) at
// once, so a run that crashes still leaves a readable folder. The folder
// must not exist yet. Every file the Writer writes goes through red, the
// run's Redactor (nil when it has no secrets): what holds a secret is
// masked before it is written.
func Open(root, workflow, runID string, started time.Time, meta map[string]any, red *redact.Redactor) (*Writer, error) {
	if err := checkName("workflow name", workflow); err != nil {
		return nil, err
	}
	if err := checkName("run id", runID); err != nil {
		return nil, err
	}
	parent := filepath.Join(root, "runs", workflow)
	dir := filepath.Join(parent, started.UTC().Format(folderTime)+"_"+runID)
	// The names of the folders made here reach the disk when the run ends
	// (sync), not one fsync each before it starts.
	made, err := mkdirAll(parent)
	if err != nil {
		return nil, pathError("cannot create run folder", dir, err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("cannot create run folder %s: %w; give each run its own id", dir, fs.ErrExist)
		}
		return nil, pathError("cannot create run folder", dir, err)
	}
	w, err := open(dir, workflow, runID, started, meta, true, red)
	if err != nil {
		// The folder is ours, made just now; don't leave half of it.
		_ = os.RemoveAll(dir)
		return nil, err
	}
	w.madeAbove = made
	return w, nil
}

// OpenOnDemand is Open for a run that may never need a folder: nothing is
// written until a node asks for its folder (NodeDir), something writes
// into Dir (a kind saving artifacts in ArtifactDir, a blob store) or
// Materialize is called. Events are not written at all (the database holds
// them: skein runs events). Finish writes run.json only into a folder that
// exists by then. Dir is known at once.
func OpenOnDemand(root, workflow, runID string, started time.Time, meta map[string]any, red *redact.Redactor) (*Writer, error) {
	if err := checkName("workflow name", workflow); err != nil {
		return nil, err
	}
	if err := checkName("run id", runID); err != nil {
		return nil, err
	}
	parent := filepath.Join(root, "runs", workflow)
	w := &Writer{
		dir: filepath.Join(parent, started.UTC().Format(folderTime)+"_"+runID), parent: parent,
		runID: runID, workflow: workflow, meta: maps.Clone(meta),
		fresh: true, onDemand: true, redact: red,
		checked: map[string]bool{},
		done:    make(chan struct{}),
	}
	w.cond = sync.NewCond(&w.mu)
	close(w.done) // no goroutine: nothing is queued
	return w, nil
}

// ReopenOnDemand is Reopen for a run whose folder may not exist (an
// on-demand run that never needed one): when dir exists it is Reopen, else
// OpenOnDemand of that folder.
func ReopenOnDemand(dir, workflow, runID string, started time.Time, meta map[string]any, red *redact.Redactor) (*Writer, error) {
	if _, err := os.Lstat(dir); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return Reopen(dir, workflow, runID, started, meta, red)
	}
	w, err := OpenOnDemand(filepath.Dir(filepath.Dir(filepath.Dir(dir))), workflow, runID, started, meta, red)
	if err != nil {
		return nil, err
	}
	w.dir, w.parent = dir, filepath.Dir(dir)
	return w, nil
}

// Materialize makes the folder of an on-demand Writer now, its name
// durable (the folders it made synced into their parents), so that what
// is written into it — a blob store's files — is found after a crash; for
// any other Writer, and once the folder is made, it does nothing.
func (w *Writer) Materialize() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.onDemand || w.made {
		return nil
	}
	if err := w.usableLocked(); err != nil {
		return err
	}
	return w.materializeLocked()
}

// materializeLocked makes an on-demand Writer's folder and opens it as
// Open does; a folder someone made meanwhile is taken as it is, but never
// a symlink or a file.
func (w *Writer) materializeLocked() error {
	if !w.onDemand || w.made {
		return nil
	}
	if err := mkdirAllSynced(w.dir); err != nil {
		return pathError("cannot create run folder", w.dir, err)
	}
	if fi, err := os.Lstat(w.dir); err != nil {
		return pathError("cannot create run folder", w.dir, err)
	} else if !fi.IsDir() {
		return fmt.Errorf("%w: %s is %s, not a folder; remove it and run again", ErrUnsafePath, w.dir, describe(fi))
	}
	r, err := os.OpenRoot(w.dir)
	if err != nil {
		return pathError("cannot open run folder", w.dir, err)
	}
	w.root, w.made = r, true
	return nil
}

// mkdirAllSynced makes dir and the folders above it that are missing, as
// os.MkdirAll does, and syncs the parent of each it made, so that their
// names are on disk; a folder made meanwhile by someone else is fine.
func mkdirAllSynced(dir string) error {
	made, err := mkdirAll(dir)
	for _, d := range made {
		if err == nil {
			err = syncDir(filepath.Dir(d))
		}
	}
	return err
}

// mkdirAll makes dir and the folders above it that are missing, as
// os.MkdirAll does, and returns those it made, the highest first; a folder
// made meanwhile by someone else is fine.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	var made []string
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		if err := os.Mkdir(d, 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			return made, err
		}
		made = append(made, d)
	}
	return made, nil
}

// syncDir makes the names in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// Reopen opens the existing folder of a run that goes on (skein resume):
// events are appended after the ones already there, and run.json says
// "running" again until Finish. A run started without a folder
// (OpenOnDemand) that never made one gets it now. red is as for Open.
func Reopen(dir, workflow, runID string, started time.Time, meta map[string]any, red *redact.Redactor) (*Writer, error) {
	if err := checkName("workflow name", workflow); err != nil {
		return nil, err
	}
	if err := checkName("run id", runID); err != nil {
		return nil, err
	}
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		// A run that never needed a folder (OpenOnDemand) gets one now.
		if err := mkdirAllSynced(dir); err != nil {
			return nil, pathError("cannot create run folder", dir, err)
		}
		return open(dir, workflow, runID, started, meta, true, red)
	}
	if err != nil {
		return nil, pathError("cannot open run folder", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("cannot open run folder %s: %w", dir, ErrUnsafePath)
	}
	return open(dir, workflow, runID, started, meta, false, red)
}

func open(dir, workflow, runID string, started time.Time, meta map[string]any, fresh bool, red *redact.Redactor) (*Writer, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, pathError("cannot open run folder", dir, err)
	}
	w := &Writer{
		dir: dir, runID: runID, workflow: workflow, meta: maps.Clone(meta),
		root: r, fresh: fresh, redact: red,
		checked: map[string]bool{},
		done:    make(chan struct{}),
	}
	w.cond = sync.NewCond(&w.mu)
	w.events, err = w.openAppend(eventsFile)
	if err == nil {
		err = w.writeRunning(started)
	}
	if err != nil {
		if w.events != nil {
			_ = w.events.Close()
		}
		_ = r.Close()
		return nil, err
	}
	go w.loop()
	return w, nil
}

// runningFile is run.json while the run goes on.
type runningFile struct {
	RunID     string               `json:"execution_id"`
	Workflow  string               `json:"workflow"`
	Status    engine.RunStatus     `json:"status"`
	Steps     []*engine.StepRecord `json:"steps"`
	StartedAt time.Time            `json:"started_at"`
	Meta      map[string]any       `json:"meta,omitempty"`
}

func (w *Writer) writeRunning(started time.Time) error {
	data, err := w.encode(runningFile{
		RunID: w.runID, Workflow: w.workflow, Status: engine.RunRunning,
		Steps: []*engine.StepRecord{}, StartedAt: started, Meta: w.meta,
	})
	if err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Join(w.dir, runFile), err)
	}
	return w.writeAtomic(runFile, data, !w.fresh)
}

// Dir returns the run folder.
func (w *Writer) Dir() string { return w.dir }

// NodeDir returns the folder of a node, <dir>/<node>/, creating it if need
// be. It refuses an id that is not a valid node id, one that would resolve
// outside the run folder, and a symlink or file already in the node's
// place.
func (w *Writer) NodeDir(nodeID string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return "", err
	}
	if err := w.checkID(nodeID); err != nil {
		return "", err
	}
	if err := w.materializeLocked(); err != nil {
		return "", err
	}
	if err := w.mkdir(nodeID); err != nil {
		return "", err
	}
	return filepath.Join(w.dir, nodeID), nil
}

// ArtifactDir returns the artifacts folder of a node,
// <dir>/<node>/artifacts/, without creating it: a node kind that saves
// files creates it (os.MkdirAll), so the folder exists only for nodes that
// have artifacts. It refuses what NodeDir refuses, and a symlink or file in
// the place of the node's folder or of its artifacts folder of a reopened
// run.
func (w *Writer) ArtifactDir(nodeID string) (string, error) {
	name, err := w.artifactName(nodeID)
	if err != nil {
		return "", err
	}
	return filepath.Join(w.dir, name), nil
}

// artifactName checks what ArtifactDir checks and returns the artifacts
// folder's path within the run folder.
func (w *Writer) artifactName(nodeID string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return "", err
	}
	if err := w.checkID(nodeID); err != nil {
		return "", err
	}
	// An on-demand folder is not made here: the kind that saves files
	// makes the path, and Finish finds the folder.
	name := filepath.Join(nodeID, artifactsDir)
	// A folder Open made has nothing in it the Writer did not put there
	// (only its owner can write in it); a reopened one is checked, once
	// per node: the engine asks for every visit.
	if !w.fresh && !w.checked[nodeID] {
		for _, n := range []string{nodeID, name} {
			if err := w.checkDir(n); err != nil {
				return "", err
			}
		}
		w.checked[nodeID] = true
	}
	return name, nil
}

// Step checks the step's node id. Steps are not written one by one: the
// database holds them, and run.json holds every step once the run ends.
func (w *Writer) Step(rec *engine.StepRecord) error {
	if rec == nil {
		return errors.New("recording a step: nil step record")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return err
	}
	if w.onDemand {
		return nil // nothing is written: NodeDir checks the ids it makes
	}
	return w.checkID(rec.Node)
}

// eventLine is one line of events.jsonl.
type eventLine struct {
	Time      time.Time      `json:"time"`
	Type      string         `json:"type"`
	Node      string         `json:"node,omitempty"`
	Visit     int            `json:"visit"`
	Iteration int            `json:"iteration"`
	Data      map[string]any `json:"data,omitempty"`
}

// Event buffers one event; Flush hands it over, and the events of one
// Flush are appended to <dir>/events.jsonl in one write. The event's Data
// must not change after the call.
func (w *Writer) Event(ev engine.TimedEvent) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return err
	}
	if w.onDemand {
		return nil // the database holds the run's events
	}
	if ev.Node != "" {
		if err := w.checkID(ev.Node); err != nil {
			return err
		}
	}
	w.pending.events = append(w.pending.events, ev)
	return nil
}

// Flush hands what was recorded since the last Flush to the Writer's
// goroutine: through Later when it is set, else at once. It returns the
// first error met writing an earlier batch, so the engine stops a run whose
// folder cannot be written.
func (w *Writer) Flush() error {
	w.mu.Lock()
	if err := w.usableLocked(); err != nil {
		w.mu.Unlock()
		return err
	}
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	b := w.pending
	// The next batch is made as large as this one: a run's flushes tend
	// to hold as many events each.
	w.pending = batch{events: make([]engine.TimedEvent, 0, len(b.events))}
	later := w.Later
	if len(b.events) == 0 {
		w.mu.Unlock()
		return nil
	}
	if later == nil {
		w.enqueueLocked(b)
		w.mu.Unlock()
		return nil
	}
	w.mu.Unlock()
	later(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.stopping {
			w.enqueueLocked(b)
		}
	})
	return nil
}

func (w *Writer) enqueueLocked(b batch) {
	w.queue = append(w.queue, b)
	w.queued++
	w.cond.Broadcast()
}

// Wait waits until every batch queued so far is written (what Flush
// handed through Later is queued once Later calls back) and returns the
// first error met writing.
func (w *Writer) Wait() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	target := w.queued
	for w.written < target && w.err == nil && !w.stopping {
		w.cond.Wait()
	}
	return w.err
}

// loop writes the batches handed over until Finish or Close stops it.
func (w *Writer) loop() {
	defer close(w.done)
	enc := eventEncoder{redact: w.redact}
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.stopping {
			w.cond.Wait()
		}
		q := w.queue
		w.queue = nil
		stop := w.stopping && len(q) == 0
		failed := w.err != nil
		w.mu.Unlock()
		if stop {
			return
		}
		var err error
		if !failed { // else drop: the first error is reported
			err = w.write(q, &enc)
		}
		w.mu.Lock()
		if err != nil && w.err == nil {
			w.err = err
		}
		w.written += len(q)
		w.cond.Broadcast()
		w.mu.Unlock()
	}
}

// write writes batches: their events in one append.
func (w *Writer) write(q []batch, enc *eventEncoder) error {
	enc.buf.Reset()
	for _, b := range q {
		for _, ev := range b.events {
			if err := enc.add(ev); err != nil {
				return fmt.Errorf("encoding %s event for %s: %w", ev.Type, filepath.Join(w.dir, eventsFile), err)
			}
		}
	}
	if enc.buf.Len() > 0 {
		if _, err := w.events.Write(enc.buf.Bytes()); err != nil {
			return pathError("cannot write", filepath.Join(w.dir, eventsFile), err)
		}
	}
	return nil
}

// eventEncoder encodes events as JSON lines into one buffer, masking the
// run's secrets in each.
type eventEncoder struct {
	buf    bytes.Buffer
	enc    *json.Encoder
	redact *redact.Redactor
}

func (e *eventEncoder) add(ev engine.TimedEvent) error {
	if e.enc == nil {
		e.enc = json.NewEncoder(&e.buf)
		e.enc.SetEscapeHTML(false)
	}
	n := e.buf.Len()
	line, ok := appendEventLine(e.buf.AvailableBuffer(), ev)
	if ok {
		e.buf.Write(line)
	} else {
		err := e.enc.Encode(eventLine{
			Time: ev.Time.UTC(), Type: ev.Type, Node: ev.Node,
			Visit: ev.Visit, Iteration: ev.Iteration, Data: ev.Data,
		})
		if err != nil {
			e.buf.Truncate(n)
			return err
		}
	}
	if line := e.buf.Bytes()[n:]; e.redact.ContainsBytes(line) {
		masked, err := e.redact.JSON(line, "")
		e.buf.Truncate(n)
		if err != nil {
			return err
		}
		e.buf.Write(masked)
	}
	return nil
}

// Finish writes what is still queued (what Flush handed over through Later
// is queued once committed; what was recorded since the last Flush is
// queued now) and run.json as result, the run's document; then it syncs the
// folder once and closes it. When it returns, the folder is complete.
// Calling it again returns what the first call returned. After Close it
// returns ErrClosed.
func (w *Writer) Finish(result any) error {
	if result == nil {
		return errNilResult
	}
	return w.finish(func() any { return result }, nil)
}

// errNilResult: Finish needs the run's document.
var errNilResult = errors.New("finishing run folder: nil result")

// secretChecked writes the document jw as it writes itself, and fails with
// errHoldsSecret when it held a secret of the run's.
func (w *Writer) secretChecked(jw JSONWriter) func(io.Writer) error {
	return func(out io.Writer) error {
		c := &secretCheck{w: out, redact: w.redact}
		if err := jw.WriteJSON(c); err != nil {
			return err
		}
		if c.found {
			return errHoldsSecret
		}
		return nil
	}
}

// Finishing is a Finish begun (Begin): run.json's content is written to
// its temporary file while the caller commits the run's final record.
type Finishing struct {
	w *Writer
	// result is the document made on Begin's goroutine; makeDoc, when
	// set, makes it when Finish needs it (Begin wrote nothing ahead).
	result  any
	makeDoc func() any
	done    chan struct{}
	// tmp is the temporary file written, "" when none was; err is what
	// writing it met (errHoldsSecret: the document held a secret).
	tmp string
	err error
}

// Begin begins Finish with the result that result makes: in a folder that
// exists, for a result that writes itself (JSONWriter), it writes run.json's
// content to its temporary file on a goroutine of its own while the caller
// goes on. Finish on what it returns waits for it and does the rest of
// Finish, the temporary file renamed into place as run.json; Abandon
// removes it and leaves the Writer as it was. Otherwise (an on-demand
// folder not made yet) Finish calls result, and only if the folder then
// gets a run.json.
func (w *Writer) Begin(result func() any) *Finishing {
	f := &Finishing{w: w, done: make(chan struct{})}
	w.mu.Lock()
	early := !w.finished && w.usableLocked() == nil && (!w.onDemand || w.made)
	w.mu.Unlock()
	if !early {
		// Made by Finish, if at all: an on-demand folder never made
		// keeps no run.json, and its document is not made for nothing.
		f.makeDoc = result
		close(f.done)
		return f
	}
	go func() {
		defer close(f.done)
		f.result = result()
		if jw, ok := f.result.(JSONWriter); ok {
			f.tmp, f.err = w.writeTemp(runFile, true, w.secretChecked(jw))
		}
	}()
	return f
}

// Finish finishes the folder as Writer.Finish does, with run.json as
// written already.
func (f *Finishing) Finish() error {
	<-f.done
	doc := f.makeDoc
	if doc == nil {
		doc = func() any { return f.result }
	}
	return f.w.finish(doc, f)
}

// Abandon removes the temporary file Begin wrote.
func (f *Finishing) Abandon() {
	<-f.done
	if f.tmp != "" {
		_ = f.w.root.Remove(f.tmp)
	}
}

// finish is Finish, with run.json's content in pre's temporary file when
// pre wrote it.
func (w *Writer) finish(makeResult func() any, pre *Finishing) error {
	w.mu.Lock()
	if w.finished {
		defer w.mu.Unlock()
		return w.finishErr
	}
	if err := w.usableLocked(); err != nil {
		w.mu.Unlock()
		return err
	}
	traced := w.nodeEvents != nil
	if w.onDemand && !w.made {
		// Only a folder someone wrote into, or a traced run's, gets a
		// run.json.
		if _, err := os.Lstat(w.dir); errors.Is(err, fs.ErrNotExist) && !traced {
			w.closed, w.finished = true, true
			w.mu.Unlock()
			return nil
		}
		if err := w.materializeLocked(); err != nil {
			w.closed, w.finished, w.finishErr = true, true, err
			w.mu.Unlock()
			return err
		}
	}
	w.mu.Unlock()
	result := makeResult()
	if result == nil {
		return errNilResult
	}
	// nodesErr is the error of writing the node files of a traced run:
	// run.json is written all the same.
	var err, nodesErr error
	if jw, ok := result.(JSONWriter); ok {
		// Written as it is encoded: a run of many steps is never whole in
		// memory.
		if err = w.stop(); err == nil && traced {
			nodesErr = w.writeNodes(result)
		}
		switch {
		case err != nil:
			if pre != nil && pre.tmp != "" {
				_ = w.root.Remove(pre.tmp)
			}
		case pre != nil && (pre.tmp != "" || pre.err != nil):
			if err = pre.err; err == nil {
				err = w.publish(pre.tmp, runFile)
			}
		default:
			err = w.writeAtomicFunc(runFile, true, w.secretChecked(jw))
		}
		if errors.Is(err, errHoldsSecret) {
			// The document was not masked: mask it whole.
			var data []byte
			if data, err = w.encode(result); err == nil {
				err = w.writeAtomic(runFile, data, true)
			}
		}
	} else {
		// Encode the document while the goroutine writes what is queued.
		type encoded struct {
			data []byte
			err  error
		}
		ch := make(chan encoded, 1)
		go func() {
			data, err := w.encode(result)
			ch <- encoded{data, err}
		}()
		err = w.stop()
		if err == nil && traced {
			nodesErr = w.writeNodes(result)
		}
		enc := <-ch
		if err == nil {
			if enc.err != nil {
				err = fmt.Errorf("encoding the result for %s: %w", filepath.Join(w.dir, runFile), enc.err)
			} else {
				err = w.writeAtomic(runFile, enc.data, true)
			}
		}
	}
	if err == nil {
		err = w.sync()
	}
	err = errors.Join(err, nodesErr, w.closeFiles())
	w.mu.Lock()
	w.finished, w.finishErr = true, err
	w.mu.Unlock()
	return err
}

// Close writes what is queued and the run.json of the nodes not written
// yet, without a result, for a run that could not finish: run.json keeps
// status "running". What Later calls after Close is dropped. It does
// nothing after Finish or an earlier Close.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.mu.Unlock()
	return errors.Join(w.stop(), w.closeFiles())
}

// stop takes no more records, lets the goroutine write what is queued, and
// writes the nodes still behind. It returns the first write error.
func (w *Writer) stop() error {
	w.mu.Lock()
	w.closed = true
	if len(w.pending.events) > 0 {
		w.queue = append(w.queue, w.pending)
		w.pending = batch{}
	}
	w.stopping = true
	w.cond.Broadcast()
	w.mu.Unlock()
	<-w.done

	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *Writer) closeFiles() error {
	var errs []error
	if w.events != nil {
		errs = append(errs, w.events.Close())
	}
	if w.root != nil {
		errs = append(errs, w.root.Close())
	}
	return errors.Join(errs...)
}

func (w *Writer) usableLocked() error {
	if w.closed {
		return fmt.Errorf("%s: %w", w.dir, ErrClosed)
	}
	return nil
}

// checkID checks a node id, which names a folder.
func (w *Writer) checkID(id string) error {
	if !workflow.ValidID(id) {
		return fmt.Errorf("%w: node id %q in run folder %s: a node id is [a-z_][a-z0-9_]*, at most %d characters",
			ErrInvalidName, id, w.dir, workflow.MaxIDLen)
	}
	// A valid id is one plain name; check anyway that it stays a direct
	// child of the run folder, should the rules for ids ever loosen (a
	// check that costs no allocation: it runs for every step).
	if !filepath.IsLocal(id) || filepath.Base(id) != id {
		return fmt.Errorf("%w: node id %q resolves outside the run folder %s", ErrInvalidName, id, w.dir)
	}
	return nil
}

// checkDir refuses a symlink or a file at name (relative to the run
// folder); nothing there is fine.
func (w *Writer) checkDir(name string) error {
	fi, err := w.root.Lstat(name)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("%w: %s is %s, not a folder; remove it and run again", ErrUnsafePath, filepath.Join(w.dir, name), describe(fi))
	case errors.Is(err, fs.ErrNotExist):
		return nil
	default:
		return pathError("cannot read", filepath.Join(w.dir, name), err)
	}
}

// mkdir creates the folder name (relative to the run folder) unless it is
// there already, refusing a symlink or a file in its place.
func (w *Writer) mkdir(name string) error {
	path := filepath.Join(w.dir, name)
	err := w.root.Mkdir(name, 0o755)
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return pathError("cannot create folder", path, err)
	}
	fi, err := w.root.Lstat(name)
	switch {
	case err != nil:
		return pathError("cannot read", path, err)
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is %s, not a folder; remove it and run again", ErrUnsafePath, path, describe(fi))
	}
	return nil
}

// writeAtomic replaces the file name (relative to the run folder) with
// data: it writes a temporary file beside it and renames it over, so
// readers see the old file or the new one, never a part. With stale, a
// temporary file a crash may have left is removed first.
func (w *Writer) writeAtomic(name string, data []byte, stale bool) error {
	return writeFileAtomic(w.root, w.dir, name, data, stale)
}

// writeFileAtomic is writeAtomic into the folder r, whose path is dir, in
// one write.
func writeFileAtomic(r *os.Root, dir, name string, data []byte, stale bool) error {
	path := filepath.Join(dir, name)
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".tmp")
	if stale {
		if err := r.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return pathError("cannot write", path, err)
		}
	}
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return pathError("cannot write", path, err)
	}
	if len(data) > 0 {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Rename(tmp, name)
	}
	if err != nil {
		_ = r.Remove(tmp)
		return pathError("cannot write", path, err)
	}
	return nil
}

// JSONWriter is a result that writes itself as JSON, a piece at
// a time (runner.RunDoc), each Write a whole number of JSON tokens.
type JSONWriter interface {
	WriteJSON(w io.Writer) error
}

// writeAtomicFunc is writeAtomic of what fill writes.
func (w *Writer) writeAtomicFunc(name string, stale bool, fill func(io.Writer) error) error {
	tmp, err := w.writeTemp(name, stale, fill)
	if err != nil {
		return err
	}
	return w.publish(tmp, name)
}

// publish renames the temporary file tmp (writeTemp) to name.
func (w *Writer) publish(tmp, name string) error {
	if err := w.root.Rename(tmp, name); err != nil {
		_ = w.root.Remove(tmp)
		return pathError("cannot write", filepath.Join(w.dir, name), err)
	}
	return nil
}

// writeTemp writes what fill writes to the temporary file of name, and
// returns the temporary file's name (for publish); it removes the file
// when it fails.
func (w *Writer) writeTemp(name string, stale bool, fill func(io.Writer) error) (string, error) {
	path := filepath.Join(w.dir, name)
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".tmp")
	// A stale temporary file (from a crash) is removed, never opened: it
	// could be a symlink.
	if stale {
		if err := w.root.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", pathError("cannot write", path, err)
		}
	}
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", pathError("cannot write", path, err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = w.root.Remove(tmp)
		return "", pathError("cannot write", path, err)
	}
	return tmp, nil
}

// openAppend opens the file name (relative to the run folder) for
// appending, refusing anything but a regular file in its place.
func (w *Writer) openAppend(name string) (*os.File, error) {
	path := filepath.Join(w.dir, name)
	if fi, err := w.root.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is %s, not a file; remove it and run again", ErrUnsafePath, path, describe(fi))
	}
	f, err := w.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, pathError("cannot open", path, err)
	}
	return f, nil
}

// encode encodes v as encodeJSON does, with the run's secrets masked: when
// the encoding holds one, it is masked as a JSON value.
func (w *Writer) encode(v any) ([]byte, error) {
	data, err := encodeJSON(v)
	if err != nil {
		return nil, err
	}
	return w.redact.JSON(data, "")
}

// encodeJSON encodes v compact, without escaping <, > and &, which keeps
// text such as HTML or shell commands readable in the files. Lines end in
// a newline.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// checkName checks a workflow name or run id, which each name one folder.
func checkName(what, s string) error {
	ok := s != "" && len(s) <= maxNameLen
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '_' || c == '-' || c == '.'):
		default:
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("%w: %s %q cannot name a folder: use 1 to %d letters, digits, '_', '-' or '.', starting with a letter or digit",
			ErrInvalidName, what, s, maxNameLen)
	}
	return nil
}

// pathError says what could not be done to path, why, and what to do. It
// names path once (the *fs.PathError text would repeat it) and keeps the
// cause for errors.Is.
func pathError(action, path string, err error) error {
	cause := err
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		cause = pe.Err
	case errors.As(err, &le):
		cause = le.Err
	}
	return fmt.Errorf("%s %s: %w; %s", action, path, cause, hint(err))
}

func hint(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return "free some disk space and run again"
	case errors.Is(err, syscall.ENOTDIR):
		return "a file stands where a folder is needed; move it, run from another folder or set --dir"
	case errors.Is(err, syscall.EROFS), errors.Is(err, fs.ErrPermission):
		return "run from a writable folder or set --dir"
	default:
		return "check the folder, or run from another one or set --dir"
	}
}

func describe(fi fs.FileInfo) string {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return "a symlink"
	case fi.IsDir():
		return "a folder"
	case fi.Mode().IsRegular():
		return "a file"
	default:
		return "a special file"
	}
}

// errHoldsSecret: a document written piece by piece held a secret.
var errHoldsSecret = errors.New("the document holds a secret value")

// secretCheck passes writes on and notes whether one held a secret. A
// JSONWriter's writes split its text between tokens, so a secret in a
// string is within one write.
type secretCheck struct {
	w      io.Writer
	redact *redact.Redactor
	found  bool
}

func (c *secretCheck) Write(p []byte) (int, error) {
	if !c.found && c.redact.ContainsBytes(p) {
		c.found = true
	}
	return c.w.Write(p)
}
