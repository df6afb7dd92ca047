package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
)

// ParseJSON parses b as exactly one JSON value, whole numbers as int and
// other numbers as float64 (so ids keep every digit), and reports whether it
// was JSON. Kinds use it for command output and tool text.
func ParseJSON(b []byte) (any, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || !json.Valid(b) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return plainNumbers(v)
}

// ParseJSONReader is ParseJSON for a text read from r: it reports false
// when the text is not exactly one JSON value (spaces around it aside).
func ParseJSONReader(r io.Reader) (any, bool) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return plainNumbers(v)
}

// plainNumbers replaces the json.Numbers in v by int or float64, in place.
func plainNumbers(v any) (any, bool) {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil && n >= math.MinInt && n <= math.MaxInt {
			return int(n), true
		}
		f, err := v.Float64()
		return f, err == nil
	case map[string]any:
		for k, x := range v {
			p, ok := plainNumbers(x)
			if !ok {
				return nil, false
			}
			v[k] = p
		}
	case []any:
		for i, x := range v {
			p, ok := plainNumbers(x)
			if !ok {
				return nil, false
			}
			v[i] = p
		}
	}
	return v, true
}

// RedactValue returns a copy of v with redact applied to every string in
// it, map keys included; other values are returned as they are.
func RedactValue(v any, redact func(string) string) any {
	switch x := v.(type) {
	case string:
		return redact(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[redact(k)] = RedactValue(e, redact)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = RedactValue(e, redact)
		}
		return out
	}
	return v
}
