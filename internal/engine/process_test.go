//go:build unix

package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
)

// flushLog is a buffering recorder that keeps a copy of each step record
// and hands on, at each flush, the records recorded since the last one.
type flushLog struct {
	mu      sync.Mutex
	pending []engine.StepRecord
	all     []engine.StepRecord
	flushed chan []engine.StepRecord
}

func newFlushLog() *flushLog { return &flushLog{flushed: make(chan []engine.StepRecord, 256)} }

func (l *flushLog) Step(rec *engine.StepRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = append(l.pending, *rec)
	l.all = append(l.all, *rec)
	return nil
}

func (l *flushLog) Event(engine.TimedEvent) error { return nil }

func (l *flushLog) Flush() error {
	l.mu.Lock()
	batch := l.pending
	l.pending = nil
	l.mu.Unlock()
	if len(batch) > 0 {
		l.flushed <- batch
	}
	return nil
}

func (l *flushLog) records(node string) []engine.StepRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []engine.StepRecord
	for _, r := range l.all {
		if r.Node == node {
			out = append(out, r)
		}
	}
	return out
}

// A running shell step's record carries its command's process group, and
// is flushed with it while the command runs, so a resume after a crash
// finds it; the step holds no group once it ended, however it ended.
func TestDriverRecordsProcessGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		end    func(release string, cancel func(), hard chan struct{}) // ends the running command
		status engine.Status
	}{
		{"the command finishes", func(release string, _ func(), _ chan struct{}) {
			require.NoError(t, os.WriteFile(release, nil, 0o644))
		}, engine.StatusSuccess},
		{"the run is cancelled at once", func(_ string, cancel func(), hard chan struct{}) {
			cancel()
			close(hard)
		}, engine.StatusCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			release := filepath.Join(t.TempDir(), "release")
			b := setupDriver(t, wf(`
  - {id: start, type: trigger.manual}
  - id: sh
    type: shell
    command: [sh, -c, 'while [ ! -e "$1" ]; do sleep 0.01; done', sh, "`+release+`"]
`, `
  - {from: start, to: sh}
`))
			log := newFlushLog()
			hard := make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := b.execute(ctx, engine.Options{Host: engine.Host{Recorder: log}, Hard: hard})

			var running engine.StepRecord
			deadline := time.After(60 * time.Second)
			for running.ProcessGroup == 0 {
				select {
				case batch := <-log.flushed:
					for _, r := range batch {
						if r.Node == "sh" && r.ProcessGroup != 0 {
							running = r
						}
					}
				case <-deadline:
					t.Fatal("no flushed record of the running shell step carries a process group")
				}
			}
			require.Equal(t, engine.StatusRunning, running.Status)
			require.NoError(t, syscall.Kill(-running.ProcessGroup, 0), "the recorded group is the running command's")

			tt.end(release, cancel, hard)
			res := result(t, done)
			final := stepsOf(res, "sh")[0]
			require.Equal(t, tt.status, final.Status)
			require.Zero(t, final.ProcessGroup, "an ended step holds no group")
			recs := log.records("sh")
			require.Zero(t, recs[len(recs)-1].ProcessGroup, "the last record of the step holds no group")
		})
	}
}
