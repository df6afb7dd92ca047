package runner

import (
	"errors"

	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/secrets"
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

// secretRenderer renders the templates of model configs with a run's
// secrets (secrets.Renderer).
var secretRenderer = secrets.Renderer

// redactor returns the Redactor of a run's secrets, shared by runs with
// the same secret values (redact.Cache).
func (r *Runner) redactor(secrets map[string]string) *redact.Redactor {
	return r.redactors.For(secrets)
}
