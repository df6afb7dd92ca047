package runlog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/runlog"
)

// TestRunEndSyncsOwnFilesOnly: a run folder holding only the Writer's own
// files (events.jsonl, run.json) is made durable with their fsyncs, not a
// syncfs of the whole file system, which waits for every other writer on
// the machine; a folder others wrote into (a node's folder, a blob, the
// node files of a traced run) still gets the syncfs.
func TestRunEndSyncsOwnFilesOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		before func(t *testing.T, w *runlog.Writer)
		whole  bool
	}{
		{"own files only", func(*testing.T, *runlog.Writer) {}, false},
		{"a node's folder", func(t *testing.T, w *runlog.Writer) {
			dir, err := w.NodeDir("a")
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "out.txt"), []byte("x"), 0o644))
		}, true},
		{"a file someone put in the folder", func(t *testing.T, w *runlog.Writer) {
			require.NoError(t, os.WriteFile(filepath.Join(w.Dir(), "blob-1"), []byte("x"), 0o644))
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := filepath.Join(t.TempDir(), ".skein")
			w, err := runlog.Open(root, "hello", "run1", started, nil, nil)
			require.NoError(t, err)
			require.NoError(t, w.Event(engine.TimedEvent{Time: started, Event: engine.Event{Type: engine.EventExecutionStarted}}))
			require.NoError(t, w.Flush())
			tt.before(t, w)
			require.NoError(t, w.Finish(map[string]any{"status": "completed"}))
			require.Equal(t, tt.whole, runlog.SyncedWholeFS(w))
			require.FileExists(t, filepath.Join(w.Dir(), "run.json"))
			require.Len(t, readLines(t, filepath.Join(w.Dir(), "events.jsonl")), 1)
		})
	}
	t.Run("traced: node files", func(t *testing.T) {
		t.Parallel()
		w, err := runlog.Open(filepath.Join(t.TempDir(), ".skein"), "hello", "run1", started, nil, nil)
		require.NoError(t, err)
		doc, evs := traceRecords("no-secret-here")
		w.TraceNodes(func() ([]record.EventRow, error) { return evs, nil })
		require.NoError(t, w.Finish(doc))
		require.True(t, runlog.SyncedWholeFS(w))
		require.FileExists(t, filepath.Join(w.Dir(), "body", "run.json"))
	})
	t.Run("on demand, never made", func(t *testing.T) {
		t.Parallel()
		w, err := runlog.OpenOnDemand(filepath.Join(t.TempDir(), ".skein"), "hello", "run1", started, nil, nil)
		require.NoError(t, err)
		require.NoError(t, w.Finish(map[string]any{"status": "completed"}))
		require.False(t, runlog.SyncedWholeFS(w))
		require.NoDirExists(t, w.Dir())
	})
	t.Run("on demand, made for a blob", func(t *testing.T) {
		t.Parallel()
		w, err := runlog.OpenOnDemand(filepath.Join(t.TempDir(), ".skein"), "hello", "run1", started, nil, nil)
		require.NoError(t, err)
		require.NoError(t, w.Materialize())
		require.NoError(t, os.WriteFile(filepath.Join(w.Dir(), "blob-1"), []byte("x"), 0o644))
		require.NoError(t, w.Finish(map[string]any{"status": "completed"}))
		require.True(t, runlog.SyncedWholeFS(w))
		require.FileExists(t, filepath.Join(w.Dir(), "run.json"))
	})
}
