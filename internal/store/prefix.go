package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skeinhq/skein/internal/record"
)

// prefixPage is how many runs WithPrefix reads at a time.
const prefixPage = 500

// WithPrefix returns the runs of st whose ids begin with prefix, newest
// first, at most keep of them, and how many there are in all. It reads
// the runs a page at a time: a page ends before the microsecond after its
// last run's start, so runs that started in the same microsecond are not
// missed, and those read twice are dropped.
func WithPrefix(ctx context.Context, st Store, prefix string, keep int) (matches []*Run, total int, err error) {
	return withPrefix(ctx, st, prefix, keep, false)
}

// withPrefix is WithPrefix, of the top-level runs only when top (a child
// run's id is its parent's, a dot and more).
func withPrefix(ctx context.Context, st Store, prefix string, keep int, top bool) (matches []*Run, total int, err error) {
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
			if !strings.HasPrefix(run.ID, prefix) || (top && strings.Contains(run.ID, ".")) {
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

// ErrAmbiguous: a run id prefix matches more than one run.
var ErrAmbiguous = errors.New("ambiguous run id")

// AmbiguousError is a run id prefix that matches several runs; Matches
// holds them, newest first (at most MaxCandidates of them), and Total
// counts them all.
type AmbiguousError struct {
	Prefix  string
	Matches []*Run
	Total   int
}

func (e *AmbiguousError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run id %q is ambiguous: %d runs begin with it; type more of the id:", e.Prefix, e.Total)
	for _, run := range e.Matches {
		fmt.Fprintf(&b, "\n  %s  %s  %s  %s", run.ID, run.Workflow, run.Status, run.StartedAt.Local().Format("2006-01-02 15:04:05"))
	}
	if more := e.Total - len(e.Matches); more > 0 {
		fmt.Fprintf(&b, "\n  … and %d more", more)
	}
	return b.String()
}

func (e *AmbiguousError) Is(target error) bool { return target == ErrAmbiguous }

// MaxCandidates is how many of the runs an ambiguous prefix matches are
// named.
const MaxCandidates = 10

// ResolveRunID returns the id of the one run of st whose id is idOrPrefix
// or begins with it, as `git` does with commits: an exact id wins, a
// unique prefix names its run, a prefix of several runs is an
// *AmbiguousError (ErrAmbiguous) naming them, with their status as
// status tells it, and no match is ErrNotFound. A prefix without a dot
// names top-level runs first: the child runs of the run it names, whose
// ids begin with their parent's, do not make it ambiguous.
func ResolveRunID(ctx context.Context, st Store, idOrPrefix string, status func(*Run) record.RunStatus) (string, error) {
	if _, err := st.Run(ctx, idOrPrefix); err == nil {
		return idOrPrefix, nil
	} else if !errors.Is(err, ErrNotFound) {
		return "", err
	}
	// Not an id: the runs whose ids begin with it.
	top := !strings.Contains(idOrPrefix, ".")
	matches, total, err := withPrefix(ctx, st, idOrPrefix, MaxCandidates, top)
	if err == nil && top && total == 0 {
		matches, total, err = WithPrefix(ctx, st, idOrPrefix, MaxCandidates)
	}
	if err != nil {
		return "", err
	}
	for _, run := range matches {
		run.Status = status(run)
	}
	switch total {
	case 0:
		return "", ErrNotFound
	case 1:
		return matches[0].ID, nil
	}
	return "", &AmbiguousError{Prefix: idOrPrefix, Matches: matches, Total: total}
}
