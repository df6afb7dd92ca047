package runlog_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/node"
)

// TestMain checks that every Writer's goroutine stops with Finish or Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var started = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)

type bundle struct {
	root string // the .skein folder
	w    *runlog.Writer
}

func setup(t *testing.T) *bundle {
	t.Helper()
	root := filepath.Join(t.TempDir(), ".skein")
	w, err := runlog.Open(root, "hello", "run1", started, map[string]any{"file": "hello.yaml"}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, w.Close()) })
	return &bundle{root: root, w: w}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v), "%s should hold JSON:\n%s", path, data)
}

// readLines parses every line of a JSON lines file.
func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "line %d of %s: %s", len(lines)+1, path, sc.Text())
		lines = append(lines, m)
	}
	require.NoError(t, sc.Err())
	return lines
}

// tree lists every path under dir with its kind, to show that nothing
// changed.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, fmt.Sprintf("%s %v", rel, d.Type()))
		return nil
	}))
	return out
}

func TestOpenFolderName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		workflow string
		runID    string
		started  time.Time
		want     string
	}{
		{"utc", "hello", "run1", started, "runs/hello/2025-03-14_09-26-53_run1"},
		{"other zone is shown in utc", "nightly-report", "01J9ZQ",
			time.Date(2025, 12, 31, 23, 30, 0, 0, time.FixedZone("UTC-2", -2*3600)),
			"runs/nightly-report/2026-01-01_01-30-00_01J9ZQ"},
		{"fractions of a second dropped", "a_b", "r.7",
			time.Date(2025, 1, 2, 3, 4, 5, 999_999_999, time.UTC), "runs/a_b/2025-01-02_03-04-05_r.7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := filepath.Join(t.TempDir(), ".skein")
			w, err := runlog.Open(root, tt.workflow, tt.runID, tt.started, nil, nil)
			require.NoError(t, err)
			defer func() { require.NoError(t, w.Close()) }()
			require.Equal(t, filepath.Join(root, filepath.FromSlash(tt.want)), w.Dir())
			fi, err := os.Stat(w.Dir())
			require.NoError(t, err)
			require.True(t, fi.IsDir(), "the run folder should be a folder")
		})
	}
}

func TestOpenWritesRunningRunJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// Read before anything else happens: a crash now must leave this.
	var run map[string]any
	readJSON(t, filepath.Join(b.w.Dir(), "run.json"), &run)
	require.Equal(t, map[string]any{
		"execution_id": "run1",
		"workflow":     "hello",
		"status":       "running",
		"steps":        []any{},
		"started_at":   "2025-03-14T09:26:53Z",
		"meta":         map[string]any{"file": "hello.yaml"},
	}, run)

	data, err := os.ReadFile(filepath.Join(b.w.Dir(), "events.jsonl"))
	require.NoError(t, err, "events.jsonl should exist from the start, for tail -f")
	require.Empty(t, data)

	entries, err := os.ReadDir(b.w.Dir())
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{"run.json", "events.jsonl"}, names, "no temporary file should be left")
}

func TestOpenRefusesBadNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		workflow string
		runID    string
	}{
		{"empty workflow", "", "run1"},
		{"workflow climbs up", "..", "run1"},
		{"workflow with parent", "../x", "run1"},
		{"workflow with slash", "a/b", "run1"},
		{"workflow with backslash", `a\b`, "run1"},
		{"workflow starts with dot", ".hidden", "run1"},
		{"empty run id", "hello", ""},
		{"run id with slash", "hello", "a/../../b"},
		{"run id with NUL", "hello", "a\x00b"},
		{"run id too long", "hello", strings.Repeat("r", 129)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			w, err := runlog.Open(filepath.Join(tmp, ".skein"), tt.workflow, tt.runID, started, nil, nil)
			require.ErrorIs(t, err, runlog.ErrInvalidName)
			require.Nil(t, w)
			require.Equal(t, []string{". d---------"}, tree(t, tmp), "nothing should be created")
		})
	}
}

func TestOpenRefusesExistingFolder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, os.WriteFile(filepath.Join(b.w.Dir(), "keep"), []byte("x"), 0o644))

	w, err := runlog.Open(b.root, "hello", "run1", started, nil, nil)
	require.ErrorIs(t, err, fs.ErrExist)
	require.ErrorContains(t, err, b.w.Dir())
	require.ErrorContains(t, err, "give each run its own id")
	require.Nil(t, w)
	require.FileExists(t, filepath.Join(b.w.Dir(), "keep"), "the existing folder should be left alone")
}

func TestOpenUnwritableRoot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		root  func(t *testing.T) string
		cause error
		hint  string
	}{
		{
			name: "read-only folder",
			root: func(t *testing.T) string {
				dir := filepath.Join(t.TempDir(), "ro")
				require.NoError(t, os.Mkdir(dir, 0o755))
				require.NoError(t, os.Chmod(dir, 0o555))
				t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
				if f, err := os.Create(filepath.Join(dir, "probe")); err == nil {
					_ = f.Close()
					t.Skip("chmod does not stop this user (root) from writing; the file-in-the-way case covers the error")
				}
				return dir
			},
			cause: fs.ErrPermission,
			hint:  "run from a writable folder or set --dir",
		},
		{
			name: "file in the way",
			root: func(t *testing.T) string {
				file := filepath.Join(t.TempDir(), "file")
				require.NoError(t, os.WriteFile(file, []byte("not a folder"), 0o644))
				return file // the run folder would be <tmp>/file/runs/...
			},
			cause: syscall.ENOTDIR,
			hint:  "a file stands where a folder is needed; move it, run from another folder or set --dir",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := tt.root(t)
			w, err := runlog.Open(root, "hello", "run1", started, nil, nil)
			require.Error(t, err)
			require.Nil(t, w)
			require.ErrorIs(t, err, tt.cause)
			want := filepath.Join(root, "runs", "hello", "2025-03-14_09-26-53_run1")
			require.True(t, strings.HasPrefix(err.Error(), "cannot create run folder "+want+": "),
				"the error should name the run folder first: %v", err)
			require.ErrorContains(t, err, tt.hint)
		})
	}
}

func TestEventsAppendedPerFlush(t *testing.T) {
	t.Parallel()
	b := setup(t)
	at := time.Date(2025, 3, 14, 10, 26, 53, 123456789, time.FixedZone("CET", 3600))
	events := []engine.Event{
		{Type: engine.EventExecutionStarted},
		{Type: engine.EventNodeStarted, Node: "fetch", Visit: 1},
		{Type: "tool_call", Node: "fetch", Visit: 1, Iteration: 2, Data: map[string]any{"tool": "get", "html": "<b>&</b>"}},
		{Type: engine.EventNodeStarted, Node: "greet", Visit: 1},
		{Type: engine.EventNodeFinished, Node: "fetch", Visit: 1, Data: map[string]any{}},
	}
	for _, ev := range events {
		require.NoError(t, b.w.Event(engine.TimedEvent{Time: at, Event: ev}))
	}
	require.Empty(t, readLines(t, filepath.Join(b.w.Dir(), "events.jsonl")), "nothing is written before Flush")
	require.NoError(t, b.w.Flush())
	require.NoError(t, b.w.Wait())

	// Read while the writer is open: every flushed line is there.
	wantAll := []map[string]any{
		{"time": "2025-03-14T09:26:53.123456789Z", "type": "execution_started", "visit": 0.0, "iteration": 0.0},
		{"time": "2025-03-14T09:26:53.123456789Z", "type": "node_started", "node": "fetch", "visit": 1.0, "iteration": 0.0},
		{"time": "2025-03-14T09:26:53.123456789Z", "type": "tool_call", "node": "fetch", "visit": 1.0, "iteration": 2.0,
			"data": map[string]any{"tool": "get", "html": "<b>&</b>"}},
		{"time": "2025-03-14T09:26:53.123456789Z", "type": "node_started", "node": "greet", "visit": 1.0, "iteration": 0.0},
		{"time": "2025-03-14T09:26:53.123456789Z", "type": "node_finished", "node": "fetch", "visit": 1.0, "iteration": 0.0},
	}
	tests := []struct {
		name string
		path string
		want []map[string]any
	}{
		{"run", "events.jsonl", wantAll},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, readLines(t, filepath.Join(b.w.Dir(), tt.path)))
		})
	}

	for _, node := range []string{"fetch", "greet"} {
		require.NoFileExists(t, filepath.Join(b.w.Dir(), node, "events.jsonl"), "no per-node events file")
	}
	raw, err := os.ReadFile(filepath.Join(b.w.Dir(), "events.jsonl"))
	require.NoError(t, err)
	require.Contains(t, string(raw), `"<b>&</b>"`, "text should not be HTML-escaped")
}

// TestStepsMakeNoNodeFiles: steps are not written one by one (the
// database holds them, run.json holds them all at the end), so a node with
// nothing to keep gets no folder.
func TestStepsMakeNoNodeFiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i, st := range []engine.Status{engine.StatusRunning, engine.StatusSuccess} {
		require.NoError(t, b.w.Step(&engine.StepRecord{StepOrder: 1, Node: "a", Type: "set", Status: st, Visit: 1}))
		require.NoError(t, b.w.Step(&engine.StepRecord{StepOrder: 2, Node: "b", Type: "set", Status: st, Visit: i + 1}))
	}
	require.NoError(t, b.w.Flush())
	require.NoError(t, b.w.Finish(map[string]any{"status": "completed"}))
	entries, err := os.ReadDir(b.w.Dir())
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{"run.json", "events.jsonl"}, names)
	require.ErrorIs(t, b.w.Step(&engine.StepRecord{Node: "../x"}), runlog.ErrClosed)
}

func TestFinishWritesResult(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0, t1 := started, started.Add(2*time.Second)
	step := &engine.StepRecord{StepOrder: 1, Node: "a", Type: "http", Status: engine.StatusFailed, Visit: 1, Attempts: 2,
		Error: &node.Error{Code: "http_500", Category: node.CategoryHTTPStatus, Message: "server error"}, StartedAt: &t0, FinishedAt: &t1, DurationMS: 2000}
	require.NoError(t, b.w.Step(step))
	require.NoError(t, b.w.Event(engine.TimedEvent{Time: t1, Event: engine.Event{Type: engine.EventNodeFinished, Node: "a", Visit: 1}}))
	res := &engine.Result{
		RunID: "run1", Workflow: "hello", Status: engine.RunFailed,
		Outputs: map[string]any{"greeting": "hi"},
		Error:   &node.Error{Code: "http_500", Category: node.CategoryHTTPStatus, Message: "server error"},
		Steps:   []*engine.StepRecord{step}, StartedAt: t0, FinishedAt: t1, DurationMS: 2000,
	}

	require.NoError(t, b.w.Finish(res))

	var got engine.Result
	readJSON(t, filepath.Join(b.w.Dir(), "run.json"), &got)
	require.Equal(t, *res, got, "run.json is the document Finish was given")
	require.Equal(t, 1, got.Steps[0].StepOrder, "step_order is in run.json")
	require.Len(t, readLines(t, filepath.Join(b.w.Dir(), "run.json")), 1, "run.json is compact: one line")
	require.Len(t, readLines(t, filepath.Join(b.w.Dir(), "events.jsonl")), 1)
	require.NoDirExists(t, filepath.Join(b.w.Dir(), "a"), "no folder for a node with nothing to keep")

	tests := []struct {
		name string
		call func() error
		want error // nil: no error
	}{
		{"finish again", func() error { return b.w.Finish(res) }, nil},
		{"close after finish", b.w.Close, nil},
		{"step after finish", func() error { return b.w.Step(step) }, runlog.ErrClosed},
		{"event after finish", func() error {
			return b.w.Event(engine.TimedEvent{Time: t1, Event: engine.Event{Type: engine.EventWarning}})
		}, runlog.ErrClosed},
		{"node dir after finish", func() error { _, err := b.w.NodeDir("z"); return err }, runlog.ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
		})
	}
	var again struct{ Status string }
	readJSON(t, filepath.Join(b.w.Dir(), "run.json"), &again)
	require.Equal(t, "failed", string(again.Status), "a second Finish must not rewrite run.json")
}

func TestCloseWithoutFinish(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.w.Event(engine.TimedEvent{Time: started, Event: engine.Event{Type: engine.EventNodeStarted, Node: "a", Visit: 1}}))

	require.NoError(t, b.w.Close())
	require.NoError(t, b.w.Close(), "Close twice")
	require.ErrorIs(t, b.w.Finish(&engine.Result{}), runlog.ErrClosed)

	var run struct{ Status string }
	readJSON(t, filepath.Join(b.w.Dir(), "run.json"), &run)
	require.Equal(t, "running", string(run.Status), "run.json stays as Open wrote it")
	require.Len(t, readLines(t, filepath.Join(b.w.Dir(), "events.jsonl")), 1, "what was recorded is written")
}

func TestNodeDirRefusesEscapes(t *testing.T) {
	t.Parallel()
	ids := []struct {
		name string
		id   string
	}{
		{"parent", "../x"},
		{"dot dot", ".."},
		{"dot", "."},
		{"slash", "a/b"},
		{"backslash", `a\b`},
		{"absolute", "/tmp/x"},
		{"empty", ""},
		{"upper case", "UPPER"},
		{"leading digit", "1a"},
		{"NUL", "a\x00b"},
		{"65 characters", strings.Repeat("a", 65)},
	}
	calls := []struct {
		name string
		call func(w *runlog.Writer, id string) error
	}{
		{"NodeDir", func(w *runlog.Writer, id string) error { _, err := w.NodeDir(id); return err }},
		{"ArtifactDir", func(w *runlog.Writer, id string) error { _, err := w.ArtifactDir(id); return err }},
		{"Step", func(w *runlog.Writer, id string) error {
			return w.Step(&engine.StepRecord{StepOrder: 1, Node: id, Visit: 1})
		}},
		{"Event", func(w *runlog.Writer, id string) error {
			return w.Event(engine.TimedEvent{Time: started, Event: engine.Event{Type: engine.EventNodeStarted, Node: id}})
		}},
	}
	for _, tt := range ids {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			outside := filepath.Dir(b.root) // the temp folder holding .skein
			before := tree(t, outside)
			for _, c := range calls {
				if c.name == "Event" && tt.id == "" {
					continue // an event with no node is the run's own
				}
				err := c.call(b.w, tt.id)
				require.ErrorIs(t, err, runlog.ErrInvalidName, "%s(%q)", c.name, tt.id)
				require.ErrorContains(t, err, "[a-z_][a-z0-9_]*", "%s(%q) should say what an id looks like", c.name, tt.id)
			}
			require.Equal(t, before, tree(t, outside), "nothing should be created or changed")
		})
	}
}

func TestNodeDirRefusesWhatIsInTheWay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		plant func(t *testing.T, dir, outside string) // puts something in the run folder
		call  func(w *runlog.Writer) error
		want  string
	}{
		{
			name:  "symlink as node folder",
			plant: func(t *testing.T, dir, outside string) { symlink(t, outside, filepath.Join(dir, "evil")) },
			call:  func(w *runlog.Writer) error { _, err := w.NodeDir("evil"); return err },
			want:  "is a symlink, not a folder",
		},
		{
			name: "symlink as artifacts folder",
			plant: func(t *testing.T, dir, outside string) {
				mkdir(t, dir, "n")
				symlink(t, outside, filepath.Join(dir, "n", "artifacts"))
			},
			call: func(w *runlog.Writer) error {
				// Checked in a reopened folder (a resumed run).
				rw, err := runlog.Reopen(w.Dir(), "hello", "run1", started, nil, nil)
				require.NoError(t, err)
				defer rw.Close()
				_, err = rw.ArtifactDir("n")
				return err
			},
			want: "is a symlink, not a folder",
		},
		{
			name: "file as node folder",
			plant: func(t *testing.T, dir, _ string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "n"), nil, 0o644))
			},
			call: func(w *runlog.Writer) error {
				_, err := w.NodeDir("n")
				return err
			},
			want: "is a file, not a folder",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			outside := t.TempDir()
			tt.plant(t, b.w.Dir(), outside)
			before := tree(t, outside)

			err := tt.call(b.w)
			require.ErrorIs(t, err, runlog.ErrUnsafePath)
			require.ErrorContains(t, err, tt.want)
			require.ErrorContains(t, err, "remove it and run again")
			require.Equal(t, before, tree(t, outside), "nothing should be written through the link")
		})
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("cannot create symlinks here: %v", err)
	}
}

func mkdir(t *testing.T, dir, name string) {
	t.Helper()
	require.NoError(t, os.Mkdir(filepath.Join(dir, name), 0o755))
}

func TestArtifactDir(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name string
		id   string
	}{
		{"new node", "shoot"},
		{"again", "shoot"},
		{"longest id", strings.Repeat("a", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, err := b.w.ArtifactDir(tt.id)
			require.NoError(t, err)
			require.Equal(t, filepath.Join(b.w.Dir(), tt.id, "artifacts"), dir)
			// The folder is made by the kind that has files to keep.
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "shot.png"), []byte("png"), 0o644))
			nd, err := b.w.NodeDir(tt.id)
			require.NoError(t, err)
			require.Equal(t, filepath.Dir(dir), nd)
		})
	}
}

// TestAbsArtifactDir: what the engine hands a node is the artifacts
// folder as an absolute path, also when the run folder was named
// relatively, and nothing for an id that is not a node's.
func TestAbsArtifactDir(t *testing.T) {
	t.Chdir(t.TempDir())
	w, err := runlog.Open(".skein", "hello", "run1", started, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	abs := w.AbsArtifactDir()
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(wd, w.Dir(), "shoot", "artifacts"), abs("shoot"))
	require.True(t, filepath.IsAbs(abs("shoot")))
	for _, bad := range []string{"..", "../x", "a/b", ""} {
		require.Empty(t, abs(bad), "id %q", bad)
	}
}

// TestConcurrentUse runs the engine's pattern under -race: records from one
// goroutine, artifact folders from the node tasks' goroutines.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	nodes := []string{"a", "b", "c", "d"}
	var wg sync.WaitGroup
	errs := make(chan error, len(nodes)*10)
	for _, id := range nodes {
		wg.Go(func() {
			for range 10 {
				if _, err := b.w.ArtifactDir(id); err != nil {
					errs <- err
				}
			}
		})
	}
	for i, id := range nodes {
		require.NoError(t, b.w.Event(engine.TimedEvent{Time: started, Event: engine.Event{Type: engine.EventNodeStarted, Node: id, Visit: 1}}))
		require.NoError(t, b.w.Step(&engine.StepRecord{StepOrder: i + 1, Node: id, Visit: 1, Status: engine.StatusRunning}))
	}
	require.NoError(t, b.w.Flush())
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, b.w.Wait())
	require.Len(t, readLines(t, filepath.Join(b.w.Dir(), "events.jsonl")), len(nodes))
}

// TestLaterWritesCommittedRecords: with Later set, what Flush hands over is
// written only once Later calls back (the records are committed).
func TestLaterWritesCommittedRecords(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var commits []func()
	b.w.Later = func(fn func()) { commits = append(commits, fn) }
	require.NoError(t, b.w.Event(engine.TimedEvent{Time: started, Event: engine.Event{Type: engine.EventNodeStarted, Node: "a", Visit: 1}}))
	require.NoError(t, b.w.Step(&engine.StepRecord{StepOrder: 1, Node: "a", Visit: 1, Status: engine.StatusSuccess}))
	require.NoError(t, b.w.Flush())
	require.NoError(t, b.w.Wait())
	require.Empty(t, readLines(t, filepath.Join(b.w.Dir(), "events.jsonl")), "not committed yet")

	require.Len(t, commits, 1)
	commits[0]()
	require.NoError(t, b.w.Wait())
	require.Len(t, readLines(t, filepath.Join(b.w.Dir(), "events.jsonl")), 1)
}

// Whatever the Writer is handed, it writes no secret: an event's data, the
// run's document (any type) are masked before they are written.
func TestWriterMasksSecrets(t *testing.T) {
	t.Parallel()
	const secret = `canary"s3cr3t/value`
	root := filepath.Join(t.TempDir(), ".skein")
	w, err := runlog.Open(root, "hello", "run1", started, nil, redact.New(map[string]string{"TOKEN": secret}))
	require.NoError(t, err)
	require.NoError(t, w.Event(engine.TimedEvent{Time: started, Event: engine.Event{Type: "tool_result", Node: "a", Visit: 1,
		Data: map[string]any{"text": "got " + secret, "n": 1}}}))
	require.NoError(t, w.Event(engine.TimedEvent{Time: started, Event: engine.Event{Type: "node_finished", Node: "a", Visit: 1,
		Data: map[string]any{"status": "success"}}}))
	require.NoError(t, w.Flush())
	type doc struct {
		Status string         `json:"status"`
		Error  *node.Error    `json:"error"`
		Output map[string]any `json:"output"`
	}
	require.NoError(t, w.Finish(&doc{Status: "failed", Error: &node.Error{Message: "m", Details: map[string]any{"stderr": secret + "\n"}},
		Output: map[string]any{"k": []any{"x", secret}}}))

	lines := readLines(t, filepath.Join(w.Dir(), "events.jsonl"))
	require.Len(t, lines, 2)
	require.Equal(t, "got ***", lines[0]["data"].(map[string]any)["text"])
	require.Equal(t, "node_finished", lines[1]["type"])
	var got map[string]any
	readJSON(t, filepath.Join(w.Dir(), "run.json"), &got)
	require.Equal(t, map[string]any{"status": "failed", "error": map[string]any{"code": "", "category": "", "message": "m", "fixable": false,
		"details": map[string]any{"stderr": "***\n"}}, "output": map[string]any{"k": []any{"x", "***"}}}, got)
	for _, f := range []string{"events.jsonl", "run.json"} {
		data, err := os.ReadFile(filepath.Join(w.Dir(), f))
		require.NoError(t, err)
		require.NotContains(t, string(data), "s3cr3t", f)
	}
}

// streamed writes its document in pieces, as runner.RunDoc does.
type streamed struct{ pieces []string }

func (s *streamed) WriteJSON(w io.Writer) error {
	for _, p := range s.pieces {
		if _, err := io.WriteString(w, p); err != nil {
			return err
		}
	}
	return nil
}

func (s *streamed) MarshalJSON() ([]byte, error) { return []byte(strings.Join(s.pieces, "")), nil }

// A document that writes itself is written as it writes; one that holds
// a secret all the same is masked whole.
func TestFinishStreamsAndStillMasks(t *testing.T) {
	t.Parallel()
	const secret = "canary-s3cr3t-value"
	tests := []struct {
		name, want string
		pieces     []string
	}{
		{name: "clean", pieces: []string{`{"steps":[`, `{"a":1}`, "]}\n"}, want: `{"steps":[{"a":1}]}` + "\n"},
		{name: "a secret in a piece", pieces: []string{`{"steps":[`, `"` + secret + `"`, "]}\n"}, want: `{"steps":["***"]}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, err := runlog.Open(filepath.Join(t.TempDir(), ".skein"), "hello", "run1", started, nil, redact.New(map[string]string{"TOKEN": secret}))
			require.NoError(t, err)
			require.NoError(t, w.Finish(&streamed{pieces: tt.pieces}))
			data, err := os.ReadFile(filepath.Join(w.Dir(), "run.json"))
			require.NoError(t, err)
			require.Equal(t, tt.want, string(data))
		})
	}
}

// A Finish begun (Begin) writes run.json's content before it is asked to
// finish, and the same document as Finish: streamed, and masked whole when
// it holds a secret; run.json says so only once it finishes. One abandoned
// leaves no file behind and the folder as it was.
func TestBeginWritesRunJSONBeforeFinish(t *testing.T) {
	t.Parallel()
	const secret = "canary-s3cr3t-value"
	open := func(t *testing.T) *runlog.Writer {
		w, err := runlog.Open(filepath.Join(t.TempDir(), ".skein"), "hello", "run1", started, nil, redact.New(map[string]string{"TOKEN": secret}))
		require.NoError(t, err)
		return w
	}
	for _, tt := range []struct {
		name, want string
		pieces     []string
	}{
		{name: "clean", pieces: []string{`{"steps":[`, `{"a":1}`, "]}\n"}, want: `{"steps":[{"a":1}]}` + "\n"},
		{name: "a secret in a piece", pieces: []string{`{"steps":[`, `"` + secret + `"`, "]}\n"}, want: `{"steps":["***"]}` + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := open(t)
			before, err := os.ReadFile(filepath.Join(w.Dir(), "run.json"))
			require.NoError(t, err)
			made := make(chan struct{})
			fin := w.Begin(func() any { close(made); return &streamed{pieces: tt.pieces} })
			<-made
			now, err := os.ReadFile(filepath.Join(w.Dir(), "run.json"))
			require.NoError(t, err)
			require.Equal(t, string(before), string(now), "run.json says the run ended only once finished")
			require.NoError(t, fin.Finish())
			data, err := os.ReadFile(filepath.Join(w.Dir(), "run.json"))
			require.NoError(t, err)
			require.Equal(t, tt.want, string(data))
			require.ElementsMatch(t, []string{"run.json", "events.jsonl"}, names(t, w.Dir()), "no temporary file left")
		})
	}
	t.Run("Abandoned", func(t *testing.T) {
		t.Parallel()
		w := open(t)
		before := names(t, w.Dir())
		w.Begin(func() any { return &streamed{pieces: []string{`{}`}} }).Abandon()
		require.ElementsMatch(t, before, names(t, w.Dir()))
		require.NoError(t, w.Finish(&streamed{pieces: []string{`{"status":"failed"}`}}), "the Writer finishes as before")
		data, err := os.ReadFile(filepath.Join(w.Dir(), "run.json"))
		require.NoError(t, err)
		require.Equal(t, `{"status":"failed"}`, string(data))
	})
	t.Run("OnDemandNothingKept", func(t *testing.T) {
		t.Parallel()
		w, err := runlog.OpenOnDemand(filepath.Join(t.TempDir(), ".skein"), "hello", "quiet", started, nil, nil)
		require.NoError(t, err)
		made := 0
		require.NoError(t, w.Begin(func() any { made++; return map[string]any{"status": "completed"} }).Finish())
		require.NoDirExists(t, w.Dir())
		require.Zero(t, made, "no run.json: the document is not made")
	})
	t.Run("OnDemandMadeAfterBegin", func(t *testing.T) {
		t.Parallel()
		w, err := runlog.OpenOnDemand(filepath.Join(t.TempDir(), ".skein"), "hello", "late", started, nil, nil)
		require.NoError(t, err)
		made := 0
		fin := w.Begin(func() any { made++; return map[string]any{"status": "completed"} })
		require.Zero(t, made, "nothing written ahead into a folder not made")
		_, err = w.NodeDir("fetch") // a node's folder, made while the final record commits
		require.NoError(t, err)
		require.NoError(t, fin.Finish())
		require.Equal(t, 1, made)
		var doc map[string]any
		readJSON(t, filepath.Join(w.Dir(), "run.json"), &doc)
		require.Equal(t, "completed", doc["status"])
	})
	t.Run("NilDocument", func(t *testing.T) {
		t.Parallel()
		w := open(t)
		require.Error(t, w.Finish(nil))
		require.Error(t, w.Begin(func() any { return nil }).Finish())
		require.NoError(t, w.Finish(map[string]any{"status": "completed"}), "the Writer finishes as before")
	})
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// An on-demand run that keeps no file leaves nothing on disk, whatever it
// records; one whose node saves an artifact gets its folder, with the run
// document at the end.
func TestOnDemandFolder(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".skein")
	rec := func(w *runlog.Writer) {
		t.Helper()
		require.NoError(t, w.Step(&engine.StepRecord{Node: "fetch", Visit: 1, Status: engine.StatusSuccess}))
		require.NoError(t, w.Event(engine.TimedEvent{Time: started, Event: engine.Event{Type: "node_started", Node: "fetch", Visit: 1}}))
		require.NoError(t, w.Flush())
		require.NoError(t, w.Wait())
	}

	t.Run("NothingKept", func(t *testing.T) {
		w, err := runlog.OpenOnDemand(root, "hello", "quiet", started, nil, nil)
		require.NoError(t, err)
		rec(w)
		require.NoError(t, w.Finish(map[string]any{"status": "completed"}))
		require.NoDirExists(t, w.Dir())
		require.NoDirExists(t, filepath.Join(root, "runs"), "not even the workflow's folder")
	})

	t.Run("ArtifactKept", func(t *testing.T) {
		w, err := runlog.OpenOnDemand(root, "hello", "shot", started, nil, nil)
		require.NoError(t, err)
		rec(w)
		art, err := w.ArtifactDir("fetch")
		require.NoError(t, err)
		require.NoDirExists(t, w.Dir(), "asking for the path makes nothing")
		require.NoError(t, os.MkdirAll(art, 0o755)) // as a node kind saving a file
		require.NoError(t, os.WriteFile(filepath.Join(art, "page.png"), []byte("png"), 0o644))
		require.NoError(t, w.Finish(map[string]any{"execution_id": "shot", "status": "completed"}))
		var doc map[string]any
		readJSON(t, filepath.Join(w.Dir(), "run.json"), &doc)
		require.Equal(t, "completed", doc["status"])
		require.FileExists(t, filepath.Join(art, "page.png"))
		require.NoFileExists(t, filepath.Join(w.Dir(), "events.jsonl"), "events are in the database")
	})

	t.Run("NodeDirMakesIt", func(t *testing.T) {
		w, err := runlog.OpenOnDemand(root, "hello", "nodedir", started, nil, nil)
		require.NoError(t, err)
		dir, err := w.NodeDir("fetch")
		require.NoError(t, err)
		require.DirExists(t, dir)
		_, err = w.NodeDir("../escape")
		require.ErrorIs(t, err, runlog.ErrInvalidName)
		require.NoError(t, w.Finish(map[string]any{"status": "completed"}))
		require.FileExists(t, filepath.Join(w.Dir(), "run.json"))
	})

	t.Run("BlobKept", func(t *testing.T) {
		w, err := runlog.OpenOnDemand(root, "hello", "big", started, nil, nil)
		require.NoError(t, err)
		st, err := blob.NewRunStore(w, nil)
		require.NoError(t, err)
		require.NoDirExists(t, w.Dir(), "a store makes nothing before its first blob")
		v, err := st.Put(strings.Repeat("x", 100000))
		require.NoError(t, err, "the store made the run folder it keeps the blob in")
		b := v.(*blob.Blob)
		require.Equal(t, filepath.Join(w.Dir(), blob.Folder, b.Digest()), b.Path())
		require.FileExists(t, b.Path())
		rec(w)
		require.NoError(t, w.Finish(map[string]any{"status": "completed"}))
		require.FileExists(t, filepath.Join(w.Dir(), "run.json"))
	})

	t.Run("BlobWithASymlinkInTheWay", func(t *testing.T) {
		w, err := runlog.OpenOnDemand(root, "hello", "blobtrap", started, nil, nil)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(w.Dir()), 0o755))
		elsewhere := t.TempDir()
		require.NoError(t, os.Symlink(elsewhere, w.Dir()))
		st, err := blob.NewRunStore(w, nil)
		require.NoError(t, err)
		_, err = st.Put(strings.Repeat("x", 100000))
		require.ErrorIs(t, err, runlog.ErrUnsafePath)
		require.ErrorContains(t, err, "writing a big value")
		left, err := os.ReadDir(elsewhere)
		require.NoError(t, err)
		require.Empty(t, left, "nothing was written through the symlink")
		require.NoError(t, w.Close())
	})

	t.Run("SymlinkInTheWay", func(t *testing.T) {
		w, err := runlog.OpenOnDemand(root, "hello", "trap", started, nil, nil)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(w.Dir()), 0o755))
		require.NoError(t, os.Symlink(t.TempDir(), w.Dir()))
		_, err = w.NodeDir("fetch")
		require.ErrorIs(t, err, runlog.ErrUnsafePath)
		require.NoError(t, w.Close())
	})

	t.Run("ResumedFromTheCommandLine", func(t *testing.T) {
		w, err := runlog.OpenOnDemand(root, "hello", "later", started, nil, nil)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		require.NoDirExists(t, w.Dir())
		// The CLI's Reopen makes the folder a served run never needed.
		rw, err := runlog.Reopen(w.Dir(), "hello", "later", started, nil, nil)
		require.NoError(t, err)
		rec(rw)
		require.NoError(t, rw.Finish(map[string]any{"status": "completed"}))
		require.Len(t, readLines(t, filepath.Join(w.Dir(), "events.jsonl")), 1)
		// The server's ReopenOnDemand of a folder that exists writes it as
		// Reopen does.
		ow, err := runlog.ReopenOnDemand(w.Dir(), "hello", "later", started, nil, nil)
		require.NoError(t, err)
		rec(ow)
		require.NoError(t, ow.Finish(map[string]any{"status": "completed"}))
		require.Len(t, readLines(t, filepath.Join(w.Dir(), "events.jsonl")), 2)
	})
}
