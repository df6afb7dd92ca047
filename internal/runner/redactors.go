package runner

import (
	"errors"
	"slices"
	"strings"

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

// redactor returns the Redactor of a run's secrets. Runs with the same
// secret values share one (a Redactor does not change once made): a
// served webhook's every run would otherwise build the same one again.
func (r *Runner) redactor(secrets map[string]string) *redact.Redactor {
	if len(secrets) == 0 {
		return nil
	}
	values := make([]string, 0, len(secrets))
	for _, v := range secrets {
		values = append(values, v)
	}
	slices.Sort(values)
	key := strings.Join(values, "\x00")
	r.redMu.Lock()
	defer r.redMu.Unlock()
	if red, ok := r.redactors[key]; ok {
		return red
	}
	if len(r.redactors) >= maxRedactors {
		clear(r.redactors)
	}
	red := redact.New(secrets)
	if r.redactors == nil {
		r.redactors = map[string]*redact.Redactor{}
	}
	r.redactors[key] = red
	return red
}

// maxRedactors bounds the Redactors a Runner keeps.
const maxRedactors = 64
