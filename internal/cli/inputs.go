package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/skeinhq/skein/workflow"
)

// usageError is a problem with how skein was called (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return exit(ExitInvalid, &usageError{fmt.Sprintf(format, args...)})
}

// resolveInputs merges --input-file and -i pairs, converts text values to
// their declared types, and checks them against the workflow (unknown,
// mistyped and missing inputs are usage errors).
func resolveInputs(w *workflow.Workflow, pairs []string, file string) (map[string]any, error) {
	raw := map[string]any{}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, usagef("reading --input-file: %v", err)
		}
		if err := json.Unmarshal(data, &raw); err != nil {
			return nil, usagef("--input-file %s is not a JSON object: %v", file, err)
		}
	}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, usagef("-i %q: write inputs as name=value", p)
		}
		val, err := fromText(w.Input(k), v)
		if err != nil {
			return nil, usagef("input %s: %v", k, err)
		}
		raw[k] = val
	}
	out, err := w.ResolveInputs(raw)
	if err != nil {
		var ie *workflow.InputError
		if errors.As(err, &ie) && len(ie.Missing) > 0 {
			return nil, usagef("%v (pass -i %s=…)", err, ie.Missing[0])
		}
		return nil, usagef("%v", err)
	}
	return out, nil
}

// fromText converts a -i value to the input's declared type.
func fromText(in *workflow.Input, s string) (any, error) {
	if in == nil {
		return s, nil // ResolveInputs reports the unknown name
	}
	t := strings.TrimSpace(s)
	switch in.Type {
	case "integer":
		n, err := strconv.Atoi(t)
		if err != nil {
			return nil, fmt.Errorf("expected an integer, got %q", s)
		}
		return n, nil
	case "number":
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return nil, fmt.Errorf("expected a number, got %q", s)
		}
		return f, nil
	case "boolean":
		b, err := strconv.ParseBool(t)
		if err != nil {
			return nil, fmt.Errorf("expected true or false, got %q", s)
		}
		return b, nil
	case "list", "map":
		var x any
		if err := json.Unmarshal([]byte(s), &x); err != nil {
			return nil, fmt.Errorf("expected a JSON %s, got %q", in.Type, s)
		}
		return x, nil
	case "any":
		var x any
		if json.Unmarshal([]byte(s), &x) == nil {
			return x, nil
		}
	}
	return s, nil
}
