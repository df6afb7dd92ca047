package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/skeinhq/skein/internal/store"
)

// ErrAmbiguous: a run id prefix matches more than one run.
var ErrAmbiguous = errors.New("ambiguous run id")

// AmbiguousError is a run id prefix that matches several runs; Matches
// holds them, newest first (at most maxCandidates of them), and Total
// counts them all.
type AmbiguousError struct {
	Prefix  string
	Matches []*store.Run
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

// maxCandidates is how many of the runs an ambiguous prefix matches are
// named.
const maxCandidates = 10

// ResolveRunID returns the id of the one run whose id is idOrPrefix or
// begins with it, as `git` does with commits: an exact id wins, a unique
// prefix names its run, a prefix of several runs is an *AmbiguousError
// (ErrAmbiguous) naming them, and no match is ErrNotFound.
func (r *Runner) ResolveRunID(ctx context.Context, idOrPrefix string) (string, error) {
	if idOrPrefix == "" {
		return "", usagef("a run id is empty; `skein runs list` shows the runs")
	}
	if _, err := r.st.Run(ctx, idOrPrefix); err == nil {
		return idOrPrefix, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	// Not an id: the runs whose ids begin with it.
	matches, total, err := store.WithPrefix(ctx, r.st, idOrPrefix, maxCandidates)
	if err != nil {
		return "", err
	}
	for _, run := range matches {
		run.Status = r.Status(run)
	}
	switch total {
	case 0:
		return "", fmt.Errorf("no run %q in %s; `skein runs list` shows the runs: %w", idOrPrefix, r.cfg.Dir, ErrNotFound)
	case 1:
		return matches[0].ID, nil
	}
	return "", &AmbiguousError{Prefix: idOrPrefix, Matches: matches, Total: total}
}
