package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

// Each op is one call: one transaction, committed to the WAL.

func BenchmarkSaveSteps(b *testing.B) {
	for _, batch := range []int{1, 50} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "skein.db"))
			ctx := b.Context()
			require.NoError(b, s.CreateRun(ctx, &store.Run{ID: "r1", Workflow: "bench"}))

			start := time.Now().UTC()
			steps := make([]*store.Step, batch)
			for i := range steps {
				steps[i] = &store.Step{
					Node: fmt.Sprintf("node_%d", i), Type: "http", Attempts: 1, Status: "success",
					Params: map[string]any{"method": "GET", "url": "https://api.example.com/items?page=2"},
					Output: map[string]any{"status": 200, "headers": map[string]any{"content-type": "application/json"},
						"body": map[string]any{"items": []any{1, 2, 3}, "next": "abc"}},
					ConfigHash: "sha256:0123456789abcdef", StartedAt: &start, FinishedAt: &start, DurationMS: 12,
				}
			}
			visit := 0
			for b.Loop() {
				visit++
				for i, st := range steps {
					st.Visit, st.StepOrder = visit, visit*batch+i
				}
				if err := s.SaveBatch(ctx, []store.Batch{{RunID: "r1", Steps: steps}}); err != nil {
					b.Fatal(err)
				}
			}
			reportRates(b, batch, "steps/s")
		})
	}
}

func BenchmarkAppendEvents(b *testing.B) {
	for _, batch := range []int{1, 50} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "skein.db"))
			ctx := b.Context()
			require.NoError(b, s.CreateRun(ctx, &store.Run{ID: "r1", Workflow: "bench"}))

			now := time.Now().UTC()
			events := make([]store.Event, batch)
			for b.Loop() {
				for i := range events {
					events[i] = store.Event{Time: now, Type: "tool_call", Node: "agent", Visit: 1,
						Data: map[string]any{"tool": "fs.read", "arguments": map[string]any{"path": "/tmp/notes.txt"}}}
				}
				if err := s.AppendEvents(ctx, "r1", events); err != nil {
					b.Fatal(err)
				}
			}
			reportRates(b, batch, "events/s")
		})
	}
}

func reportRates(b *testing.B, batch int, unit string) {
	secs := b.Elapsed().Seconds()
	if secs == 0 {
		return
	}
	b.ReportMetric(float64(b.N)/secs, "ops/s")
	b.ReportMetric(float64(b.N*batch)/secs, unit)
}

// BenchmarkChainRecords writes the records of a chain of 1,000 nodes as
// a local run does: its plan when it starts, then its nodes' steps with
// their two events each, group-committed 20 nodes to a transaction.
// pending-rows plans the steps as a pending row each (as schema versions
// before 15 did), plan as one row of the run's plan.
func BenchmarkChainRecords(b *testing.B) {
	const n, group = 1000, 20
	for _, mode := range []string{"pending-rows", "plan"} {
		b.Run(mode, func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "skein.db"))
			ctx := b.Context()
			now := time.Now().UTC()
			run := 0
			for b.Loop() {
				run++
				id := fmt.Sprint("r", run)
				require.NoError(b, s.CreateRun(ctx, &store.Run{ID: id, Workflow: "chain", Status: "running"}))
				planned := make([]*store.Step, n)
				for i := range planned {
					planned[i] = &store.Step{Generation: 1, StepOrder: i + 1, Node: fmt.Sprint("n", i), Type: "set", Visit: 1, Status: "pending"}
				}
				start := store.Batch{RunID: id, Plan: planned}
				if mode == "pending-rows" {
					start = store.Batch{RunID: id, Steps: planned}
				}
				require.NoError(b, s.SaveBatch(ctx, []store.Batch{start}))
				for g := 0; g < n; g += group {
					bt := store.Batch{RunID: id}
					for i := g; i < g+group; i++ {
						bt.Steps = append(bt.Steps, &store.Step{Generation: 1, StepOrder: i + 1, Node: fmt.Sprint("n", i), Type: "set", Visit: 1,
							Attempts: 1, Status: "success", Output: map[string]any{"i": i}, StartedAt: &now, FinishedAt: &now,
							RanOn: &record.Place{Host: "bench", PID: 1}})
						bt.Events = append(bt.Events,
							store.Event{Time: now, Type: "node_started", Node: fmt.Sprint("n", i), Visit: 1},
							store.Event{Time: now, Type: "node_finished", Node: fmt.Sprint("n", i), Visit: 1, Data: map[string]any{"status": "success"}})
					}
					if err := s.SaveBatch(ctx, []store.Batch{bt}); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e6/float64(b.N*n), "µs/node")
		})
	}
}

// BenchmarkOpenNew: a new database (the first `skein run` in a folder)
// opened and closed.
func BenchmarkOpenNew(b *testing.B) {
	dir := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		s, err := sqlite.Open(filepath.Join(dir, fmt.Sprintf("new-%d.db", i)))
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenExisting: an existing database opened and closed.
func BenchmarkOpenExisting(b *testing.B) {
	path := filepath.Join(b.TempDir(), "skein.db")
	s, err := sqlite.Open(path)
	require.NoError(b, err)
	require.NoError(b, s.Close())
	for b.Loop() {
		s, err := sqlite.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
