package runner

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/workflow"
)

// readDotenv reads KEY=VALUE lines: blank lines and # comments are skipped,
// an `export ` prefix is allowed, and values may be quoted ('…' literally,
// "…" with \n, \t, \", \\ escapes).
func readDotenv(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		t = strings.TrimPrefix(t, "export ")
		k, v, ok := strings.Cut(t, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("%s:%d: expected NAME=value", path, line)
		}
		v = strings.TrimSpace(v)
		switch {
		case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
			v = v[1 : len(v)-1]
		case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
			v = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\"`, `"`, `\\`, `\`).Replace(v[1 : len(v)-1])
		default:
			if i := strings.Index(v, " #"); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
		}
		out[k] = v
	}
	return out, sc.Err()
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
	if len(missing) > 0 {
		return nil, usagef("secret %s is not set; export SKEIN_SECRET_%s (or %s), or put it in a --secrets-file", missing[0], missing[0], missing[0])
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
		return fmt.Sprint(v), nil
	}
}
