package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
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
