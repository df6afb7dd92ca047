package store

import (
	"context"
	"strings"
	"time"
)

// prefixPage is how many runs WithPrefix reads at a time.
const prefixPage = 500

// WithPrefix returns the runs of st whose ids begin with prefix, newest
// first, at most keep of them, and how many there are in all. It reads
// the runs a page at a time: a page ends before the microsecond after its
// last run's start, so runs that started in the same microsecond are not
// missed, and those read twice are dropped.
func WithPrefix(ctx context.Context, st Store, prefix string, keep int) (matches []*Run, total int, err error) {
	seen := map[string]bool{}
	f := RunFilter{Limit: prefixPage}
	for {
		runs, err := st.ListRuns(ctx, f)
		if err != nil {
			return nil, 0, err
		}
		fresh := 0
		for _, run := range runs {
			if seen[run.ID] {
				continue
			}
			seen[run.ID] = true
			fresh++
			if !strings.HasPrefix(run.ID, prefix) {
				continue
			}
			total++
			if len(matches) < keep {
				matches = append(matches, run)
			}
		}
		if f.Limit == 0 || len(runs) < f.Limit {
			break
		}
		f.Before = runs[len(runs)-1].StartedAt.Add(time.Microsecond)
		if fresh == 0 {
			// A whole page started in one microsecond: read the rest
			// at once.
			f.Limit = 0
		}
	}
	return matches, total, nil
}
