package runner

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/joho/godotenv"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/workflow"
)

// readDotenv reads a dotenv file with godotenv: NAME=value lines, blank
// lines and # comments, also after a value (NAME="x" # note reads x); an
// `export ` prefix; '…' taken as written, "…" with \n escapes and on
// several lines; ${NAME} of a name set above it. The environment is
// neither read nor changed.
func readDotenv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := godotenv.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// resolveSecrets reads each declared secret from SKEIN_SECRET_<NAME>, then
// <NAME> in the environment, then the secrets file.
func resolveSecrets(w *workflow.Workflow, getenv func(string) (string, bool), file string) (map[string]string, error) {
	var fromFile map[string]string
	if file != "" {
		var err error
		if fromFile, err = readDotenv(file); err != nil {
			return nil, usagef("--secrets-file: %v", err)
		}
	}
	out := map[string]string{}
	var missing []string
	for _, name := range w.Secrets {
		if v, ok := getenv("SKEIN_SECRET_" + name); ok {
			out[name] = v
		} else if v, ok := getenv(name); ok {
			out[name] = v
		} else if v, ok := fromFile[name]; ok {
			out[name] = v
		} else {
			missing = append(missing, name)
		}
	}
	switch len(missing) {
	case 0:
	case 1:
		return nil, usagef("secret %s is not set; export SKEIN_SECRET_%s (or %s), or put it in a --secrets-file", missing[0], missing[0], missing[0])
	default:
		return nil, usagef("secrets %s are not set; export SKEIN_SECRET_<NAME> (or <NAME>) for each, or put them in a --secrets-file", strings.Join(missing, ", "))
	}
	return out, nil
}

// knownSecrets returns the values of the workflow's secrets that are set
// in the environment (SKEIN_SECRET_<NAME>, then <NAME>), skipping the
// others: for masking what a run that is over produces.
func knownSecrets(w *workflow.Workflow, getenv func(string) (string, bool)) map[string]string {
	out := map[string]string{}
	for _, name := range w.Secrets {
		if v, ok := getenv("SKEIN_SECRET_" + name); ok {
			out[name] = v
		} else if v, ok := getenv(name); ok {
			out[name] = v
		}
	}
	return out
}

// secretRenderer renders templates in model configs, which may read
// secrets only (api_key: "{{ secrets.OPENAI_API_KEY }}").
func secretRenderer(secrets map[string]string) func(string) (string, error) {
	scope := &expr.Scope{Secrets: map[string]any{}}
	for k, v := range secrets {
		scope.Secrets[k] = v
	}
	return func(s string) (string, error) {
		if !expr.HasTemplate(s) {
			return s, nil
		}
		v, err := expr.RenderValue(s, scope)
		if err != nil {
			return "", err
		}
		if v == nil {
			// Never "<nil>": a key sent as "Bearer <nil>" fails far from
			// its cause.
			return "", fmt.Errorf("%s has no value: the secret it reads is not set (SKEIN_SECRET_<NAME> or --secrets-file)", s)
		}
		return fmt.Sprint(v), nil
	}
}

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
