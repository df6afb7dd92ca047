package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// InputError is a problem with the inputs given to a run.
type InputError struct {
	Input string
	Msg   string
	// Missing lists required inputs that were not given.
	Missing []string
}

func (e *InputError) Error() string {
	if e.Input == "" {
		return e.Msg
	}
	return "input " + e.Input + ": " + e.Msg
}

// ResolveInputs checks the inputs given to a run against the declared ones:
// unknown names, values of the wrong type and missing required inputs are
// errors; defaults fill in the rest, and the inputs given as null that
// are not of type any (absent). Whole numbers given as float64 (as JSON
// decodes them) become int. The error is the first of InputProblems.
func (w *Workflow) ResolveInputs(given map[string]any) (map[string]any, error) {
	out, errs := w.resolveInputs(given)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return out, nil
}

// InputProblems returns every problem of the inputs given to a run, in
// the order of their names; the required inputs missing are one last
// problem that lists them all.
func (w *Workflow) InputProblems(given map[string]any) []*InputError {
	_, errs := w.resolveInputs(given)
	return errs
}

func (w *Workflow) resolveInputs(given map[string]any) (map[string]any, []*InputError) {
	var names []string
	for _, in := range w.Inputs {
		names = append(names, in.Name)
	}
	keys := make([]string, 0, len(given))
	for k := range given {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []*InputError
	out := make(map[string]any, len(w.Inputs))
	for _, k := range keys {
		in := w.Input(k)
		if in == nil {
			if len(names) == 0 {
				errs = append(errs, &InputError{Input: k, Msg: "not declared: the workflow takes no inputs"})
				continue
			}
			errs = append(errs, &InputError{Input: k, Msg: fmt.Sprintf("not declared%s (inputs: %s)", didYouMean(k, names), strings.Join(names, ", "))})
			continue
		}
		v := wholeNumbers(given[k])
		if v == nil && in.Type != "any" {
			continue // not given: see absent
		}
		if !valueHasType(v, in.Type) {
			errs = append(errs, &InputError{Input: k, Msg: fmt.Sprintf("expected %s, got %s", article(in.Type), describePlain(v))})
			continue
		}
		if len(in.Enum) > 0 && !inEnum(v, in.Enum) {
			errs = append(errs, &InputError{Input: k, Msg: fmt.Sprintf("%v is not one of %v", v, in.Enum)})
			continue
		}
		out[k] = v
	}
	var missing []string
	for _, in := range w.Inputs {
		if !absent(in, given) {
			continue
		}
		switch {
		case in.Default != nil:
			out[in.Name] = in.Default
		case in.Required:
			missing = append(missing, in.Name)
		}
	}
	if len(missing) > 0 {
		errs = append(errs, &InputError{Msg: fmt.Sprintf("missing required input %s", strings.Join(missing, ", ")), Missing: missing})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// absent reports whether the input is not given: left out, or given as
// null when its type is not any. A typed input's null is no value of its
// type; clients that write every field (a model's structured output, a
// generated API client) send it for a field they leave unset, so it gets
// the input's default, or is missing when the input is required. An
// input of type any keeps a null it is given.
func absent(in *Input, given map[string]any) bool {
	v, ok := given[in.Name]
	return !ok || (v == nil && in.Type != "any")
}

func article(typ string) string {
	switch typ {
	case "integer", "any":
		return "an " + typ
	}
	return "a " + typ
}

func inEnum(v any, enum []any) bool {
	for _, e := range enum {
		if fmt.Sprint(e) == fmt.Sprint(v) {
			return true
		}
	}
	return false
}

// wholeNumbers is v as a run's inputs hold it: JSON's values, a whole
// float64 (as JSON decodes a number) an int. A Go value a program gives
// that is not one of JSON's (an int64, a float32, a json.Number, a
// []string, a map[string]string, a struct) becomes the value it encodes
// as in JSON; one that does not encode is kept, and refused by its type.
func wholeNumbers(v any) any {
	switch x := v.(type) {
	case nil, bool, string, int:
		return v
	case float64, []any, map[string]any:
	case json.Number:
		if n, err := x.Int64(); err == nil && int64(int(n)) == n {
			return int(n)
		}
		f, err := x.Float64()
		if err != nil {
			return v
		}
		return wholeNumbers(f)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return v
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var out any
		if dec.Decode(&out) != nil {
			return v
		}
		return wholeNumbers(out)
	}
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) && x < 1<<53 && x > -(1<<53) {
			return int(x)
		}
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = wholeNumbers(x[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = wholeNumbers(e)
		}
		return out
	}
	return v
}

// InputSchema is the JSON Schema of the inputs the workflow declares: an
// object with a property per input (its type, description, enum and
// default), the required ones listed, no others allowed. It is what a
// model is told a workflow offered as a tool takes.
func (w *Workflow) InputSchema() map[string]any {
	props := make(map[string]any, len(w.Inputs))
	required := []string{}
	for _, in := range w.Inputs {
		p := map[string]any{}
		switch in.Type {
		case "list":
			p["type"] = "array"
		case "map":
			p["type"] = "object"
		case "any":
		default:
			p["type"] = in.Type
		}
		if in.Description != "" {
			p["description"] = in.Description
		}
		if len(in.Enum) > 0 {
			p["enum"] = in.Enum
		}
		if in.Default != nil {
			p["default"] = in.Default
		}
		props[in.Name] = p
		if in.Required {
			required = append(required, in.Name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}
