package store

import (
	"context"
	"time"

	"github.com/skeinhq/skein/internal/record"
)

// Cursor is a place in the list of runs, newest first: a run's start time
// and id.
type Cursor struct {
	StartedAt time.Time
	ID        string
}

// ListPage returns the runs of st that f selects, newest first, after the
// cursor after (nil: from the newest), at most f.Limit of them (0: all),
// each with its status as status tells it. f.Status is matched against
// that status: a run whose owner died is interrupted there, not in the
// database, so for "interrupted" and "running" the runs are read without
// the status and picked here.
func ListPage(ctx context.Context, st Store, f RunFilter, after *Cursor, status func(*Run) record.RunStatus) ([]*Run, error) {
	want, limit := f.Status, f.Limit
	if want == record.RunInterrupted || want == record.RunRunning {
		f.Status, f.Limit = "", 0
	}
	if after != nil {
		// The store pages by start time alone; runs that started in the
		// same microsecond as the cursor are told apart by id here.
		f.Before = after.StartedAt.Add(time.Microsecond)
		if f.Limit > 0 {
			f.Limit += 16
		}
	}
	for {
		runs, err := st.ListRuns(ctx, f)
		if err != nil {
			return nil, err
		}
		out, full := page(runs, after, want, limit, status)
		if full || f.Limit == 0 || len(runs) < f.Limit {
			return out, nil
		}
		f.Limit *= 4 // many runs at the cursor's instant: read further
	}
}

// page keeps the runs of a store page after the cursor whose status is
// want (any when ""), up to limit, and reports whether limit was reached.
func page(runs []*Run, after *Cursor, want record.RunStatus, limit int, status func(*Run) record.RunStatus) ([]*Run, bool) {
	out := runs[:0]
	for _, run := range runs {
		if after != nil && run.StartedAt.Equal(after.StartedAt) && run.ID >= after.ID {
			continue
		}
		run.Status = status(run)
		if want != "" && run.Status != want {
			continue
		}
		out = append(out, run)
		if limit > 0 && len(out) == limit {
			return out, true
		}
	}
	return out, false
}
