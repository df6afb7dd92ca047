package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/skeinhq/skein/internal/store"
)

// ErrAmbiguous: a run id prefix matches more than one run.
var ErrAmbiguous = store.ErrAmbiguous

// AmbiguousError is a run id prefix that matches several runs.
type AmbiguousError = store.AmbiguousError

// ResolveRunID returns the id of the one run whose id is idOrPrefix or
// begins with it (store.ResolveRunID): a prefix of several runs is an
// *AmbiguousError naming them, and no match is ErrNotFound.
func (r *Runner) ResolveRunID(ctx context.Context, idOrPrefix string) (string, error) {
	if idOrPrefix == "" {
		return "", usagef("a run id is empty; `skein runs list` shows the runs")
	}
	id, err := store.ResolveRunID(ctx, r.st, idOrPrefix, r.Status)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("no run %q in %s; `skein runs list` shows the runs: %w", idOrPrefix, r.cfg.Dir, ErrNotFound)
	}
	return id, err
}
