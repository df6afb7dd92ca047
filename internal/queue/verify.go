package queue

import (
	"context"
	"time"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/internal/store"
)

// VerifyEnded runs the checks of a queued run that ended, in the process
// that follows it: verify writes the verdict files in the folder of rl,
// the run's writer (runlog.ReopenOnDemand), made now; the verdict's events
// go to the database.
func VerifyEnded(ctx context.Context, st store.Store, rl *runlog.Writer, run *store.Run, now time.Time,
	verify func(dir string) (*check.RunVerdict, error)) (*check.RunVerdict, error) {
	if err := rl.Materialize(); err != nil {
		return nil, err
	}
	v, err := verify(rl.Dir())
	if v == nil {
		return nil, err
	}
	if aerr := AppendEvents(ctx, st, run.ID, check.Events(v, now)); aerr != nil && err == nil {
		err = aerr
	}
	return v, err
}
