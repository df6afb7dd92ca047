package durable

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// ErrNoVersion: a run was not tied to a stored version of its workflow.
var ErrNoVersion = errors.New("the run's workflow was not stored with it")

// StoredWorkflow is the workflow version stored with run, which may
// differ from its file as it is now; ErrNoVersion when there is none.
func StoredWorkflow(ctx context.Context, st store.Store, run *store.Run) (*workflow.Workflow, error) {
	if run.WorkflowVersion <= 0 {
		return nil, fmt.Errorf("run %s: %w", run.ID, ErrNoVersion)
	}
	v, err := st.Workflow(ctx, run.Workflow, run.WorkflowVersion)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("run %s: version %d of %s: %w", run.ID, run.WorkflowVersion, run.Workflow, ErrNoVersion)
	}
	if err != nil {
		return nil, err
	}
	w, ds := workflow.Decode(run.File, v.Source)
	if ds.HasErrors() {
		return nil, fmt.Errorf("run %s: version %d of %s does not parse: %s", run.ID, run.WorkflowVersion, run.Workflow, ds.Error())
	}
	return w, nil
}

// CancelClaimed cancels in place a run nobody runs, claimed by this
// process: its waiting and running steps are cancelled and the nodes
// that did not start skipped (Cancelled, with the plan of its stored
// workflow when the store still has it), and it ends cancelled at now
// with runErr. local: the run was last owned on this host, where the
// processes its running steps left are stopped (KillOrphans). Its folder's
// run.json becomes doc's answer, the run's document as it ended.
func CancelClaimed[D any](ctx context.Context, st store.Store, reg *node.Registry, claimed *store.Run, now time.Time, runErr *node.Error, local bool, doc func(context.Context, string) (D, error)) error {
	steps, err := st.Steps(ctx, claimed.ID)
	if err != nil {
		return err
	}
	if local {
		KillOrphans(steps)
	}
	var plan *engine.Plan // nil when the store no longer has the run's workflow
	if w, err := StoredWorkflow(ctx, st, claimed); err == nil {
		plan, _ = engine.NewPlan(w, reg)
	}
	stopped := Cancelled(plan, claimed, steps, now)
	claimed.Status, claimed.FinishedAt, claimed.Error = engine.RunCancelled, &now, runErr
	if err := st.SaveBatch(ctx, []store.Batch{{RunID: claimed.ID, Token: claimed.Owner.Token, Steps: stopped, Finish: claimed}}); err != nil {
		return err
	}
	d, err := doc(ctx, claimed.ID)
	if err != nil {
		return err
	}
	return redocument(claimed, d)
}

// redocument writes doc, the document of a run that ended with no process
// running it, as the run.json of its folder, when it has one (a run that
// made none, on demand, gets none).
func redocument(run *store.Run, doc any) error {
	if run.Dir == "" {
		return nil
	}
	if _, err := os.Stat(run.Dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	rl, err := runlog.Reopen(run.Dir, run.Workflow, run.ID, run.StartedAt, nil, nil)
	if err != nil {
		return err
	}
	return errors.Join(rl.Finish(doc), rl.Close())
}

// AwaitEnd reads run id again every 50 ms until status, its status as
// people should see it, is no longer running, or wait has passed, and
// returns it as last read.
func AwaitEnd(ctx context.Context, st store.Store, run *store.Run, wait time.Duration, status func(*store.Run) record.RunStatus) (*store.Run, error) {
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return run, ctx.Err()
		case <-tick.C:
		}
		next, err := st.Run(ctx, run.ID)
		if err != nil {
			return nil, err
		}
		if run = next; status(run) != engine.RunRunning {
			break
		}
	}
	return run, nil
}

// Prune deletes the runs of st started before before, with their child
// runs, and their folders under root (Store.DeleteRuns, runlog.Remove),
// then compacts the store; dry, it only lists them. It returns the runs
// and how many folders it removed.
func Prune(ctx context.Context, st store.Store, root string, before time.Time, dryRun bool) ([]*store.Run, int, error) {
	runs, err := st.DeleteRuns(ctx, before, dryRun)
	if err != nil || dryRun {
		return runs, 0, err
	}
	dirs := make([]string, len(runs))
	for i, run := range runs {
		dirs[i] = run.Dir
	}
	n := runlog.Remove(root, dirs)
	return runs, n, st.Compact(ctx)
}
