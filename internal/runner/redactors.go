package runner

import (
	"errors"

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
