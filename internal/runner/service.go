package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/schedule"
	"github.com/skeinhq/skein/internal/store"
)

// What a long-running front end (skein serve) needs beyond runs.

// Store is the store the runner keeps runs in, for tests of the runner
// and its neighbours; front ends use the runner's methods.
func (r *Runner) Store() store.Store { return r.st }

// ScheduleState is where the schedules' fire times are kept, for the
// scheduler of a server.
func (r *Runner) ScheduleState() schedule.Store { return r.st }

// Schedules lists the stored state of the schedules: each schedule
// trigger's last and next fire times.
func (r *Runner) Schedules(ctx context.Context) ([]store.Schedule, error) {
	return r.st.Schedules(ctx)
}

// SaveWorkflow stores a workflow's source as its next version, unless it
// is the latest version already, and returns the version.
func (r *Runner) SaveWorkflow(ctx context.Context, name string, source []byte) (int, error) {
	sum := sha256.Sum256(source)
	v, err := r.st.SaveWorkflow(ctx, name, source, hex.EncodeToString(sum[:]))
	return v.Version, err
}

// Abandoned returns the runs an owner left running when it died, to be
// taken over: top-level runs (a child run goes on with its parent) whose
// stored status is running and whose owner is gone — its lease expired,
// or it was a process of this host that no longer exists. A run that
// ended, waits, or has a live owner is not one.
func (r *Runner) Abandoned(ctx context.Context) ([]*store.Run, error) {
	runs, err := r.st.ListRuns(ctx, store.RunFilter{Status: engine.RunRunning})
	if err != nil {
		return nil, err
	}
	var out []*store.Run
	for _, run := range runs {
		if run.ParentID != "" || engine.RunStatus(run.Status) != engine.RunRunning {
			continue
		}
		if r.liveOwner(run) {
			continue
		}
		out = append(out, run)
	}
	return out, nil
}
