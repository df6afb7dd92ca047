package runner

import (
	"context"
	"errors"

	"github.com/skeinhq/skein/internal/secrets"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// resolveSecrets reads the workflow's secrets (secrets.Resolve); one that
// is not set is a *UsageError.
func resolveSecrets(w *workflow.Workflow, getenv func(string) (string, bool), file string) (map[string]string, error) {
	s, err := secrets.Resolve(w, getenv, file)
	if unset := (*secrets.UnsetError)(nil); errors.As(err, &unset) {
		return nil, &UsageError{Msg: unset.Msg}
	}
	return s, err
}

// claimToRun claims run (claim) once the secrets its execution with w
// needs are set: a resume refused for them leaves the run as it was.
func (r *Runner) claimToRun(ctx context.Context, run *store.Run, w *workflow.Workflow, o Options) (*store.Run, error) {
	if _, err := resolveSecrets(w, r.cfg.LookupEnv, o.SecretsFile); err != nil {
		return nil, err
	}
	return r.claim(ctx, run)
}
