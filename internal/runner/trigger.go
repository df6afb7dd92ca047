package runner

import (
	"context"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// Secrets returns the values of the secrets a workflow declares, read as
// a run reads them (SKEIN_SECRET_<NAME>, <NAME>, then the secrets file):
// for a front end that checks a request against a secret of the workflow
// (a webhook's signing secret) before any run starts.
func (r *Runner) Secrets(w *workflow.Workflow, secretsFile string) (map[string]string, error) {
	return resolveSecrets(w, r.cfg.LookupEnv, secretsFile)
}

// Lookup returns a stored run without its steps, with its status as people
// should see it (Runner.Status): a cheaper Get, to learn whether a run
// exists and how it stands. ErrNotFound when there is none.
func (r *Runner) Lookup(ctx context.Context, id string) (*store.Run, error) {
	run, err := r.run(ctx, id)
	if err != nil {
		return nil, err
	}
	run.Status = r.Status(run)
	return run, nil
}
