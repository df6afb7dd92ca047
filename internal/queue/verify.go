package queue

import (
	"context"
	"time"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/internal/store"
)

// VerifyEnded runs the checks of a queued run that ended (of workflow
// name), in the process that follows it: verify writes the verdict files
// in dir, the run's folder, made now, its secrets masked with red; the
// verdict's events go to the database.
func VerifyEnded(ctx context.Context, st store.Store, run *store.Run, name string, red *redact.Redactor, now time.Time,
	verify func(dir string) (*check.RunVerdict, error)) (*check.RunVerdict, error) {
	rl, err := runlog.ReopenOnDemand(run.Dir, name, run.ID, run.StartedAt, nil, red)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rl.Close() }()
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
