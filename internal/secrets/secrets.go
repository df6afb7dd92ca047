// Package secrets reads the values of a workflow's declared secrets: from
// SKEIN_SECRET_<NAME>, then <NAME> in the environment, then a dotenv
// file (--secrets-file). It renders the templates of model configs that
// read them, and never changes the environment.
package secrets

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/joho/godotenv"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/workflow"
)

// ReadDotenv reads a dotenv file with godotenv: NAME=value lines, blank
// lines and # comments, also after a value (NAME="x" # note reads x); an
// `export ` prefix; '…' taken as written, "…" with \n escapes and on
// several lines; ${NAME} of a name set above it. The environment is
// neither read nor changed.
func ReadDotenv(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := godotenv.UnmarshalBytes(data)
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w (each line is NAME=value)", path, lineOf(data, err), err)
	}
	return m, nil
}

// near is how godotenv's errors quote the text from where it stopped.
var near = regexp.MustCompile(`near "((?:[^"\\]|\\.)*)"$`)

// lineOf returns ":N", the line of data where godotenv's err stopped, or
// "" when its message does not tell.
func lineOf(data []byte, err error) string {
	m := near.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	rest, uerr := strconv.Unquote(`"` + m[1] + `"`)
	if uerr != nil || rest == "" {
		return ""
	}
	i := bytes.LastIndex(data, []byte(rest))
	if i < 0 {
		return ""
	}
	return ":" + strconv.Itoa(1+bytes.Count(data[:i], []byte("\n")))
}

// UnsetError is a request whose secrets cannot all be read: the secrets
// file does not read, or declared secrets are not set. Its message says
// what to do.
type UnsetError struct{ Msg string }

func (e *UnsetError) Error() string { return e.Msg }

// Resolve reads each declared secret from SKEIN_SECRET_<NAME>, then
// <NAME> in the environment, then the secrets file (none when file is
// ""). A secret that is not set, or a file that does not read, is an
// *UnsetError.
func Resolve(w *workflow.Workflow, getenv func(string) (string, bool), file string) (map[string]string, error) {
	var fromFile map[string]string
	if file != "" {
		var err error
		if fromFile, err = ReadDotenv(file); err != nil {
			return nil, &UnsetError{Msg: fmt.Sprintf("the secrets file: %v", err)}
		}
	}
	out := map[string]string{}
	for _, name := range w.Secrets {
		if v, ok := getenv("SKEIN_SECRET_" + name); ok {
			out[name] = v
		} else if v, ok := getenv(name); ok {
			out[name] = v
		} else if v, ok := fromFile[name]; ok {
			out[name] = v
		}
	}
	missing := Missing(w, getenv, fromFile)
	switch len(missing) {
	case 0:
	case 1:
		return nil, &UnsetError{Msg: fmt.Sprintf("secret %s is not set; export SKEIN_SECRET_%s (or %s), or put it in a --secrets-file", missing[0], missing[0], missing[0])}
	default:
		return nil, &UnsetError{Msg: fmt.Sprintf("secrets %s are not set; export SKEIN_SECRET_<NAME> (or <NAME>) for each, or put them in a --secrets-file", strings.Join(missing, ", "))}
	}
	return out, nil
}

// Missing lists the declared secrets that neither the environment nor the
// file's values (nil: none) set, in declaration order.
func Missing(w *workflow.Workflow, getenv func(string) (string, bool), file map[string]string) []string {
	var missing []string
	for _, name := range w.Secrets {
		if _, ok := getenv("SKEIN_SECRET_" + name); ok {
			continue
		}
		if _, ok := getenv(name); ok {
			continue
		}
		if _, ok := file[name]; ok {
			continue
		}
		missing = append(missing, name)
	}
	return missing
}

// Known returns the values of the workflow's secrets that are set in the
// environment (SKEIN_SECRET_<NAME>, then <NAME>), skipping the others:
// for masking what a run that is over produces.
func Known(w *workflow.Workflow, getenv func(string) (string, bool)) map[string]string {
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

// Available returns the values of the workflow's secrets set in the
// environment (as Known reads it) or in the dotenv file (none: ""),
// skipping the others: what a process that starts a queued run knows of
// them, whose nodes read theirs on the workers.
func Available(w *workflow.Workflow, getenv func(string) (string, bool), file string) (map[string]string, error) {
	known := Known(w, getenv)
	if file == "" || len(known) == len(w.Secrets) {
		return known, nil
	}
	fromFile, err := ReadDotenv(file)
	if err != nil {
		return nil, err
	}
	for _, name := range w.Secrets {
		if _, set := known[name]; !set {
			if v, ok := fromFile[name]; ok {
				known[name] = v
			}
		}
	}
	return known, nil
}

// Renderer renders templates in model configs, which may read secrets
// only (api_key: "{{ secrets.OPENAI_API_KEY }}").
func Renderer(secrets map[string]string) func(string) (string, error) {
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
