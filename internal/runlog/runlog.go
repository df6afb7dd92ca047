package runlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/skeinhq/skein/internal/engine"
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

// Writer writes one run's folder. It is the engine's Recorder for that run.
type Writer struct {
	dir      string
	runID    string
	workflow string
	meta     map[string]any

	mu         sync.Mutex
	root       *os.Root // the run folder; every file operation goes through it
	events     *lineFile
	nodeEvents map[string]*lineFile
	steps      map[string]map[int]*engine.StepRecord // node → visit → latest record
	closed     bool
	finished   bool
	finishErr  error
}

// Open creates the run folder
// <root>/runs/<workflow>/<YYYY-MM-DD_HH-MM-SS>_<runID>/, the time being
// started in UTC, and writes its run.json with status "running" and meta
// (the workflow file, inputs, trigger: whatever the caller wants kept) at
// once, so a run that crashes still leaves a readable folder. The folder
// must not exist yet.
func Open(root, workflow, runID string, started time.Time, meta map[string]any) (*Writer, error) {
	if err := checkName("workflow name", workflow); err != nil {
		return nil, err
	}
	if err := checkName("run id", runID); err != nil {
		return nil, err
	}
	parent := filepath.Join(root, "runs", workflow)
	dir := filepath.Join(parent, started.UTC().Format(folderTime)+"_"+runID)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, pathError("cannot create run folder", dir, err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("cannot create run folder %s: %w; give each run its own id", dir, fs.ErrExist)
		}
		return nil, pathError("cannot create run folder", dir, err)
	}
	w, err := open(dir, workflow, runID, started, meta)
	if err != nil {
		// The folder is ours, made just now; don't leave half of it.
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return w, nil
}

// Reopen opens the existing folder of a run that goes on (skein resume):
// events are appended after the ones already there, and run.json says
// "running" again until Finish.
func Reopen(dir, workflow, runID string, started time.Time, meta map[string]any) (*Writer, error) {
	if err := checkName("workflow name", workflow); err != nil {
		return nil, err
	}
	if err := checkName("run id", runID); err != nil {
		return nil, err
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, pathError("cannot open run folder", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("cannot open run folder %s: %w", dir, ErrUnsafePath)
	}
	return open(dir, workflow, runID, started, meta)
}

func open(dir, workflow, runID string, started time.Time, meta map[string]any) (*Writer, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, pathError("cannot open run folder", dir, err)
	}
	w := &Writer{
		dir: dir, runID: runID, workflow: workflow, meta: maps.Clone(meta),
		root:       r,
		nodeEvents: map[string]*lineFile{},
		steps:      map[string]map[int]*engine.StepRecord{},
	}
	w.events, err = w.openLineFileLocked(eventsFile)
	if err == nil {
		err = w.writeRunningLocked(started)
	}
	if err != nil {
		_ = w.closeLocked(false)
		return nil, err
	}
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

func (w *Writer) writeRunningLocked(started time.Time) error {
	data, err := encodeJSON(runningFile{
		RunID: w.runID, Workflow: w.workflow, Status: engine.RunRunning,
		Steps: []*engine.StepRecord{}, StartedAt: started, Meta: w.meta,
	}, true)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Join(w.dir, runFile), err)
	}
	return w.writeAtomicLocked(runFile, data, false)
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
	if err := w.nodeDirLocked(nodeID); err != nil {
		return "", err
	}
	return filepath.Join(w.dir, nodeID), nil
}

// ArtifactDir returns the artifacts folder of a node, <dir>/<node>/artifacts/,
// creating it if need be, with the checks of NodeDir.
func (w *Writer) ArtifactDir(nodeID string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return "", err
	}
	if err := w.nodeDirLocked(nodeID); err != nil {
		return "", err
	}
	name := filepath.Join(nodeID, artifactsDir)
	if err := w.mkdirLocked(name); err != nil {
		return "", err
	}
	return filepath.Join(w.dir, name), nil
}

// nodeFile is <node>/run.json.
type nodeFile struct {
	Node  string               `json:"node"`
	Steps []*engine.StepRecord `json:"steps"`
}

// Step records the latest state of one step: it replaces the earlier record
// of the same (node, visit) and rewrites <node>/run.json, the node's records
// in step_order, atomically. The Writer keeps a copy of rec, so the caller
// may go on changing it.
func (w *Writer) Step(rec *engine.StepRecord) error {
	if rec == nil {
		return errors.New("recording a step: nil step record")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return err
	}
	if err := w.nodeDirLocked(rec.Node); err != nil {
		return err
	}
	visits := w.steps[rec.Node]
	if visits == nil {
		visits = map[int]*engine.StepRecord{}
		w.steps[rec.Node] = visits
	}
	prev, had := visits[rec.Visit]
	cp := *rec
	visits[rec.Visit] = &cp
	recs := slices.SortedFunc(maps.Values(visits), func(a, b *engine.StepRecord) int {
		if a.StepOrder != b.StepOrder {
			return a.StepOrder - b.StepOrder
		}
		return a.Visit - b.Visit
	})
	name := filepath.Join(rec.Node, runFile)
	data, err := encodeJSON(nodeFile{Node: rec.Node, Steps: recs}, true)
	if err != nil {
		// Keep what was written last, so the next step can still be.
		if had {
			visits[rec.Visit] = prev
		} else {
			delete(visits, rec.Visit)
		}
		return fmt.Errorf("encoding step %s visit %d for %s: %w", rec.Node, rec.Visit, filepath.Join(w.dir, name), err)
	}
	return w.writeAtomicLocked(name, data, false)
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

// Event appends one JSON line to <dir>/events.jsonl and, when the event
// belongs to a node, to <dir>/<node>/events.jsonl. Each file is flushed
// after the line, so `tail -f` sees it at once; it is synced only by
// Finish.
func (w *Writer) Event(ev engine.TimedEvent) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return err
	}
	line, err := encodeJSON(eventLine{
		Time: ev.Time.UTC(), Type: ev.Type, Node: ev.Node,
		Visit: ev.Visit, Iteration: ev.Iteration, Data: ev.Data,
	}, false)
	if err != nil {
		return fmt.Errorf("encoding %s event for %s: %w", ev.Type, w.events.path, err)
	}
	var nf *lineFile
	if ev.Node != "" {
		if nf, err = w.nodeEventsLocked(ev.Node); err != nil {
			return err
		}
	}
	if err := w.events.write(line); err != nil {
		return err
	}
	if nf != nil {
		return nf.write(line)
	}
	return nil
}

func (w *Writer) nodeEventsLocked(nodeID string) (*lineFile, error) {
	if lf, ok := w.nodeEvents[nodeID]; ok {
		return lf, nil
	}
	if err := w.nodeDirLocked(nodeID); err != nil {
		return nil, err
	}
	lf, err := w.openLineFileLocked(filepath.Join(nodeID, eventsFile))
	if err != nil {
		return nil, err
	}
	w.nodeEvents[nodeID] = lf
	return lf, nil
}

// finalFile is run.json once the run has ended.
type finalFile struct {
	engine.Result
	Meta map[string]any `json:"meta,omitempty"`
}

// Finish writes run.json as the run's result (with the meta given to
// Open), syncs it and the events files, and closes the files. Calling it
// again returns what the first call returned. After Close it returns
// ErrClosed.
func (w *Writer) Finish(res *engine.Result) error {
	if res == nil {
		return errors.New("finishing run folder: nil result")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return w.finishErr
	}
	if err := w.usableLocked(); err != nil {
		return err
	}
	ff := finalFile{Result: *res, Meta: w.meta}
	if ff.Steps == nil {
		ff.Steps = []*engine.StepRecord{}
	}
	data, err := encodeJSON(ff, true)
	if err != nil {
		err = fmt.Errorf("encoding the result for %s: %w", filepath.Join(w.dir, runFile), err)
	} else {
		err = w.writeAtomicLocked(runFile, data, true)
	}
	err = errors.Join(err, w.closeLocked(true))
	w.finished, w.finishErr = true, err
	return err
}

// Close flushes and closes the files without writing a result, for a run
// that could not finish: run.json keeps status "running". It does nothing
// after Finish or an earlier Close.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	return w.closeLocked(false)
}

func (w *Writer) closeLocked(sync bool) error {
	w.closed = true
	var errs []error
	if w.events != nil {
		errs = append(errs, w.events.close(sync))
	}
	for _, id := range slices.Sorted(maps.Keys(w.nodeEvents)) {
		errs = append(errs, w.nodeEvents[id].close(sync))
	}
	if sync {
		// Make the renames durable too. Best effort: not every system can
		// sync a folder, and the files themselves are synced above.
		if d, err := w.root.Open("."); err == nil {
			_ = d.Sync()
			_ = d.Close()
		}
	}
	errs = append(errs, w.root.Close())
	return errors.Join(errs...)
}

func (w *Writer) usableLocked() error {
	if w.closed {
		return fmt.Errorf("%s: %w", w.dir, ErrClosed)
	}
	return nil
}

// nodeDirLocked checks a node id and creates its folder.
func (w *Writer) nodeDirLocked(id string) error {
	if !workflow.ValidID(id) {
		return fmt.Errorf("%w: node id %q in run folder %s: a node id is [a-z_][a-z0-9_]*, at most %d characters",
			ErrInvalidName, id, w.dir, workflow.MaxIDLen)
	}
	// A valid id is one plain name; check anyway that it stays a direct
	// child of the run folder, should the rules for ids ever loosen.
	rel, err := filepath.Rel(w.dir, filepath.Clean(filepath.Join(w.dir, id)))
	if err != nil || rel != id {
		return fmt.Errorf("%w: node id %q resolves outside the run folder %s", ErrInvalidName, id, w.dir)
	}
	return w.mkdirLocked(id)
}

// mkdirLocked creates the folder name (relative to the run folder) unless
// it is there already, refusing a symlink or a file in its place.
func (w *Writer) mkdirLocked(name string) error {
	path := filepath.Join(w.dir, name)
	fi, err := w.root.Lstat(name)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("%w: %s is %s, not a folder; remove it and run again", ErrUnsafePath, path, describe(fi))
	case !errors.Is(err, fs.ErrNotExist):
		return pathError("cannot read", path, err)
	}
	if err := w.root.Mkdir(name, 0o755); err != nil {
		return pathError("cannot create folder", path, err)
	}
	return nil
}

// writeAtomicLocked replaces the file name (relative to the run folder)
// with data: it writes a temporary file beside it and renames it over, so
// readers see the old file or the new one, never a part. With sync, the
// data reaches the disk before the rename.
func (w *Writer) writeAtomicLocked(name string, data []byte, sync bool) error {
	path := filepath.Join(w.dir, name)
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".tmp")
	// A stale temporary file (from a crash) is removed, never opened: it
	// could be a symlink.
	if err := w.root.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return pathError("cannot write", path, err)
	}
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return pathError("cannot write", path, err)
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.root.Rename(tmp, name)
	}
	if err != nil {
		_ = w.root.Remove(tmp)
		return pathError("cannot write", path, err)
	}
	return nil
}

// lineFile is an append-only file of JSON lines, flushed after each line.
type lineFile struct {
	path string
	f    *os.File
	buf  *bufio.Writer
}

func (w *Writer) openLineFileLocked(name string) (*lineFile, error) {
	path := filepath.Join(w.dir, name)
	if fi, err := w.root.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is %s, not a file; remove it and run again", ErrUnsafePath, path, describe(fi))
	}
	f, err := w.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, pathError("cannot open", path, err)
	}
	return &lineFile{path: path, f: f, buf: bufio.NewWriter(f)}, nil
}

// write appends line, which ends in a newline, and flushes.
func (l *lineFile) write(line []byte) error {
	_, _ = l.buf.Write(line) // a failed write makes Flush fail too
	if err := l.buf.Flush(); err != nil {
		return pathError("cannot write", l.path, err)
	}
	return nil
}

func (l *lineFile) close(sync bool) error {
	err := l.buf.Flush()
	if err == nil && sync {
		err = l.f.Sync()
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return pathError("cannot write", l.path, err)
	}
	return nil
}

// encodeJSON encodes v without escaping <, > and &, which keeps text such
// as HTML or shell commands readable in the files. Lines end in a newline.
func encodeJSON(v any, indent bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
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
