package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
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

// resolveInputs merges --input-file and -i pairs, converts each value to its
// declared type, applies defaults and reports missing or unknown inputs.
func resolveInputs(w *workflow.Workflow, pairs []string, file string) (map[string]any, error) {
	raw := map[string]any{}
	fromText := map[string]bool{}
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
		raw[k] = v
		fromText[k] = true
	}
	var names []string
	for _, in := range w.Inputs {
		names = append(names, in.Name)
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := map[string]any{}
	for _, k := range keys {
		in := w.Input(k)
		if in == nil {
			hint := ""
			for _, n := range names {
				if strings.EqualFold(n, k) || strings.HasPrefix(n, k) || strings.HasPrefix(k, n) {
					hint = fmt.Sprintf("; did you mean %q?", n)
				}
			}
			if len(names) == 0 {
				return nil, usagef("input %q is not declared: the workflow takes no inputs", k)
			}
			return nil, usagef("input %q is not declared%s (inputs: %s)", k, hint, strings.Join(names, ", "))
		}
		v, err := convertInput(in, raw[k], fromText[k])
		if err != nil {
			return nil, usagef("input %s: %v", k, err)
		}
		out[k] = v
	}
	var missing []string
	for _, in := range w.Inputs {
		if _, ok := out[in.Name]; ok {
			continue
		}
		if in.Default != nil {
			out[in.Name] = in.Default
			continue
		}
		if in.Required {
			missing = append(missing, in.Name)
		}
	}
	if len(missing) > 0 {
		return nil, usagef("missing required input %s (pass -i %s=…)", strings.Join(missing, ", "), missing[0])
	}
	return out, nil
}

func convertInput(in *workflow.Input, v any, text bool) (any, error) {
	s, isString := v.(string)
	switch in.Type {
	case "string":
		if !isString {
			return nil, fmt.Errorf("expected a string, got %v", v)
		}
		v = s
	case "integer":
		if text {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return nil, fmt.Errorf("expected an integer, got %q", s)
			}
			v = n
		} else if f, ok := v.(float64); ok && f == float64(int(f)) {
			v = int(f)
		} else {
			return nil, fmt.Errorf("expected an integer, got %v", v)
		}
	case "number":
		if text {
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return nil, fmt.Errorf("expected a number, got %q", s)
			}
			v = f
		} else if _, ok := v.(float64); !ok {
			return nil, fmt.Errorf("expected a number, got %v", v)
		}
	case "boolean":
		if text {
			b, err := strconv.ParseBool(strings.TrimSpace(s))
			if err != nil {
				return nil, fmt.Errorf("expected true or false, got %q", s)
			}
			v = b
		} else if _, ok := v.(bool); !ok {
			return nil, fmt.Errorf("expected true or false, got %v", v)
		}
	case "list", "map":
		if text {
			var x any
			if err := json.Unmarshal([]byte(s), &x); err != nil {
				return nil, fmt.Errorf("expected JSON (%s), got %q", in.Type, s)
			}
			v = x
		}
		switch v.(type) {
		case []any:
			if in.Type != "list" {
				return nil, fmt.Errorf("expected a JSON object, got a list")
			}
		case map[string]any:
			if in.Type != "map" {
				return nil, fmt.Errorf("expected a JSON list, got an object")
			}
		default:
			return nil, fmt.Errorf("expected %s, got %v", in.Type, v)
		}
	case "any":
		if text {
			var x any
			if json.Unmarshal([]byte(s), &x) == nil {
				v = x
			}
		}
	}
	v = normalizeNumbers(v)
	if len(in.Enum) > 0 {
		found := false
		for _, e := range in.Enum {
			if fmt.Sprint(e) == fmt.Sprint(v) {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%v is not one of %v", v, in.Enum)
		}
	}
	return v, nil
}

// normalizeNumbers turns whole float64 values from JSON into int, as the
// workflow decoder does.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case float64:
		if x == float64(int(x)) && x < 1<<53 && x > -(1<<53) {
			return int(x)
		}
	case []any:
		for i := range x {
			x[i] = normalizeNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalizeNumbers(x[k])
		}
	}
	return v
}

// resolveSecrets reads each declared secret from SKEIN_SECRET_<NAME> or
// <NAME> in the environment.
func resolveSecrets(w *workflow.Workflow, getenv func(string) (string, bool)) (map[string]string, error) {
	out := map[string]string{}
	var missing []string
	for _, name := range w.Secrets {
		if v, ok := getenv("SKEIN_SECRET_" + name); ok {
			out[name] = v
			continue
		}
		if v, ok := getenv(name); ok {
			out[name] = v
			continue
		}
		missing = append(missing, name)
	}
	if len(missing) > 0 {
		return nil, usagef("secret %s is not set; export SKEIN_SECRET_%s (or %s) before running", missing[0], missing[0], missing[0])
	}
	return out, nil
}
