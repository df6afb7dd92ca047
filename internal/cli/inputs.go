package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/reqbody"
	"github.com/skeinhq/skein/workflow"
)

// usageError is a problem with how skein was called (exit 2).
type usageError struct {
	msg string
	// cmd, when set, is the command whose arguments or flags were wrong:
	// its usage line and a pointer to its --help follow the message.
	cmd *cobra.Command
}

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return exit(ExitInvalid, &usageError{msg: fmt.Sprintf(format, args...)})
}

// resolveInputs merges --input-file and -i pairs, converts text values to
// their declared types, and checks them against the workflow: unknown,
// mistyped and missing inputs are one usage error that names them all.
func resolveInputs(w *workflow.Workflow, pairs []string, file string) (map[string]any, error) {
	raw, probs, err := inputValues(w, pairs, file)
	if err != nil {
		return nil, err
	}
	bad := map[string]bool{}
	for _, p := range probs {
		bad[p.Input] = true
	}
	for _, p := range w.InputProblems(raw) {
		if p.Input == "" || !bad[p.Input] {
			probs = append(probs, p)
		}
	}
	if len(probs) > 0 {
		lines := make([]string, 0, len(probs))
		for _, p := range probs {
			msg := p.Error()
			if len(p.Missing) > 0 {
				msg += fmt.Sprintf(" (pass -i %s=…)", p.Missing[0])
			}
			lines = append(lines, msg)
		}
		if len(lines) == 1 {
			return nil, usagef("%s", lines[0])
		}
		return nil, usagef("the inputs do not fit the workflow:\n  %s", strings.Join(lines, "\n  "))
	}
	return w.ResolveInputs(raw)
}

// inputValues reads --input-file and the -i pairs, converting each text
// value to its input's declared type; a value that does not convert is
// kept as it is and named in probs.
func inputValues(w *workflow.Workflow, pairs []string, file string) (map[string]any, []*workflow.InputError, error) {
	raw := map[string]any{}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, nil, usagef("reading --input-file: %v", err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&raw); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, nil, usagef(`--input-file %s holds a JSON %s, not an object of the inputs ({"name": value, …})`, file, te.Value)
			}
			return nil, nil, usagef("--input-file %s is not a JSON object: %v", file, err)
		}
		if len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
			return nil, nil, usagef("--input-file %s holds more than one JSON value; give one object of the inputs", file)
		}
		// Numbers as the API takes them: whole ones as integers, and one
		// no run can hold (1e400) refused.
		if _, err := reqbody.Numbers(raw, true); err != nil {
			return nil, nil, usagef("--input-file %s: %v", file, err)
		}
	}
	var probs []*workflow.InputError
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, nil, usagef("-i %q: write inputs as name=value", p)
		}
		val, err := fromText(w.Input(k), v)
		if err != nil {
			probs = append(probs, &workflow.InputError{Input: k, Msg: err.Error()})
			val = v
		}
		raw[k] = val
	}
	return raw, probs, nil
}

// fromText converts a -i value to the input's declared type.
func fromText(in *workflow.Input, s string) (any, error) {
	if in == nil {
		return s, nil // ResolveInputs reports the unknown name
	}
	t := strings.TrimSpace(s)
	switch in.Type {
	case "integer":
		if n, err := strconv.Atoi(t); err == nil {
			return n, nil
		}
		// A whole number written as JSON writes it (3.0, 1e3) is an
		// integer, as it is given in JSON to the API or --input-file.
		f, ok := jsonNumber(t)
		if !ok || f != math.Trunc(f) || math.Abs(f) >= 1<<53 {
			return nil, fmt.Errorf("expected an integer, got %q%s", s, notFinite(t))
		}
		return int(f), nil
	case "number":
		f, ok := jsonNumber(t)
		if !ok {
			return nil, fmt.Errorf("expected a number, got %q%s", s, notFinite(t))
		}
		return f, nil
	case "boolean":
		b, err := strconv.ParseBool(t)
		if err != nil {
			return nil, fmt.Errorf("expected true or false, got %q", s)
		}
		return b, nil
	case "list", "map":
		x, ok := jsonValue(s)
		if !ok {
			return nil, fmt.Errorf("expected a JSON %s, got %q", in.Type, s)
		}
		// A number no run can hold (1e400) is refused as the API does.
		return reqbody.Numbers(x, true)
	case "any":
		if x, ok := jsonValue(s); ok {
			return reqbody.Numbers(x, true)
		}
	}
	return s, nil
}

// jsonValue reads s as one JSON value, its numbers as json.Numbers.
func jsonValue(s string) (any, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var x any
	if dec.Decode(&x) != nil || dec.More() {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return x, true
}

// jsonNumber reads t as a JSON number (a leading + aside): the numbers a
// run can record, and the same text the API and --input-file take. Go's
// own syntax (strconv.ParseFloat) also reads inf, NaN, hexadecimal and
// 1_000, which JSON cannot hold or does not write.
func jsonNumber(t string) (float64, bool) {
	if rest, ok := strings.CutPrefix(t, "+"); ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' {
		t = rest
	}
	var x any
	if json.Unmarshal([]byte(t), &x) != nil {
		return 0, false
	}
	f, ok := x.(float64)
	return f, ok
}

// notFinite says why a text that names infinity or NaN is no number for a
// run; "" for any other text.
func notFinite(t string) string {
	if f, err := strconv.ParseFloat(t, 64); err == nil && (math.IsInf(f, 0) || math.IsNaN(f)) {
		return " (a run records its values as JSON, which has no infinity or NaN)"
	}
	return ""
}
