package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// Every request body is read by readBody and its JSON decoded by
// decodeJSON: the API's bodies, a signal's, a chat message's and a
// webhook's. A body is what it says or it is refused before anything is
// done with it: text (JSON is text, RFC 8259 §8.1) that is not valid
// UTF-8, and a number no run can hold (beyond a 64-bit float), are 400
// invalid_body; JSON that does not parse is 400 bad_request.

// readBody reads the request's body, at most limit bytes (413 too_large
// past it).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

// invalidBody is the problem of a body that is not what it says.
func invalidBody(format string, args ...any) *Problem {
	return problemf(http.StatusBadRequest, CodeInvalidBody, format, args...)
}

// checkUTF8 refuses text that is not valid UTF-8, naming where it is not.
func checkUTF8(what string, text []byte) error {
	if utf8.Valid(text) {
		return nil
	}
	at := 0
	for at < len(text) {
		r, size := utf8.DecodeRune(text[at:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		at += size
	}
	return invalidBody("%s is not valid UTF-8 (byte %d is 0x%02x); send it encoded in UTF-8", what, at, text[at])
}

// decodeJSON decodes the one JSON value raw holds into v, numbers as
// json.Number (numberValues turns them into a run's values). strict
// refuses the fields v does not have.
func decodeJSON(raw []byte, v any, strict bool) error {
	if err := checkUTF8("the body", raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if strict {
		dec.DisallowUnknownFields()
	}
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			// Said in the body's terms, not the server's Go types.
			return problemf(http.StatusBadRequest, CodeBadRequest, "field %s must be %s, not %s", te.Field, jsonKind(te.Type), te.Value)
		}
		return problemf(http.StatusBadRequest, CodeBadRequest, "the body is not valid JSON: %v", err)
	}
	if len(bytes.TrimSpace(raw[dec.InputOffset():])) > 0 {
		return problemf(http.StatusBadRequest, CodeBadRequest, "the body holds more than one JSON value")
	}
	return nil
}

// decodeBody reads a JSON object body into v; an empty body leaves v as
// it is. Unknown fields are refused.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	raw, err := readBody(w, r, maxBody)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	return decodeJSON(raw, v, true)
}

// jsonKind names the JSON a Go type is decoded from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another JSON value"
}

// numberValues turns the json.Numbers of a decoded value into int (when
// whole) or float64, as the engine's values are, in place; with convert
// false it only checks them (a signal keeps its numbers as written). A
// number beyond a float64 is invalid_body: no run could keep it.
func numberValues(x any, convert bool) (any, error) {
	switch t := x.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, invalidBody("the number %s is beyond what a run holds (a 64-bit float)", clipText(string(t), 40))
		}
		if !convert {
			return t, nil
		}
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil && int64(int(i)) == i {
			return int(i), nil
		}
		if f == 0 {
			return 0.0, nil // -0 is 0: JSON keeps no sign of zero that a run could tell
		}
		return f, nil
	case map[string]any:
		for k, v := range t {
			nv, err := numberValues(v, convert)
			if err != nil {
				return nil, err
			}
			t[k] = nv
		}
	case []any:
		for i, v := range t {
			nv, err := numberValues(v, convert)
			if err != nil {
				return nil, err
			}
			t[i] = nv
		}
	}
	return x, nil
}

// inputValues are the inputs of a request's body as a run takes them.
func inputValues(in map[string]any) (map[string]any, error) {
	if in == nil {
		return map[string]any{}, nil
	}
	if _, err := numberValues(in, true); err != nil {
		return nil, err
	}
	return in, nil
}

// clipText cuts s to n bytes for a message.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s… (%d digits)", s[:n], len(s))
}
