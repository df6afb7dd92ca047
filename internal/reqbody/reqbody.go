// Package reqbody reads what a request's body says: the JSON of the API's
// bodies, a signal's, a chat message's, and a webhook's body in any of the
// content types a hook takes. A body is what it says or it is refused
// before anything is done with it: text (JSON is text, RFC 8259 §8.1) that
// is not valid UTF-8, and a number no run can hold (beyond a 64-bit
// float), are invalid_body; JSON that does not parse is bad_request; a
// content type a hook does not take is unsupported_media_type. The server
// answers a refusal as a problem with its status and code.
package reqbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The codes of refusals, as the API's problems give them (docs/api.md).
const (
	CodeBadRequest           = "bad_request"
	CodeInvalidBody          = "invalid_body"
	CodeUnsupportedMediaType = "unsupported_media_type"
)

// Refusal is why a body is not taken: an HTTP status, a stable code and
// what to do.
type Refusal struct {
	Status int
	Code   string
	Detail string
}

func (r *Refusal) Error() string { return r.Detail }

func refuse(status int, code, format string, args ...any) *Refusal {
	return &Refusal{Status: status, Code: code, Detail: fmt.Sprintf(format, args...)}
}

// invalid is the refusal of a body that is not what it says.
func invalid(format string, args ...any) *Refusal {
	return refuse(http.StatusBadRequest, CodeInvalidBody, format, args...)
}

// CheckUTF8 refuses text that is not valid UTF-8, naming what it is and
// where it is not.
func CheckUTF8(what string, text []byte) error {
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
	return invalid("%s is not valid UTF-8 (byte %d is 0x%02x); send it encoded in UTF-8", what, at, text[at])
}

// DecodeJSON decodes the one JSON value raw holds into v, numbers as
// json.Number (Numbers turns them into a run's values). strict refuses
// the fields v does not have.
func DecodeJSON(raw []byte, v any, strict bool) error {
	if err := CheckUTF8("the body", raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if strict {
		dec.DisallowUnknownFields()
	}
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			// Said in the body's terms, not the server's Go types.
			if te.Field == "" {
				return refuse(http.StatusBadRequest, CodeBadRequest, "the body must be %s, not %s", jsonKind(te.Type), te.Value)
			}
			if ft := fieldType(v, te.Field); ft != nil && ft != te.Type && (ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array) {
				return refuse(http.StatusBadRequest, CodeBadRequest, "each item of field %s must be %s, not %s", te.Field, jsonKind(te.Type), te.Value)
			}
			return refuse(http.StatusBadRequest, CodeBadRequest, "field %s must be %s, not %s", te.Field, jsonKind(te.Type), te.Value)
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok && strict {
			// Valid JSON, with a field this request does not take; the
			// fields it takes are listed when the unknown one is the
			// body's own, not one of an object within it.
			var top map[string]json.RawMessage
			takes := ""
			if uq, err := strconv.Unquote(name); err == nil && json.Unmarshal(raw, &top) == nil && top[uq] != nil {
				takes = fieldsOf(v)
			}
			return refuse(http.StatusBadRequest, CodeBadRequest, "the body has a field %s that this request does not take%s",
				name, takes)
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return refuse(http.StatusBadRequest, CodeBadRequest, "the body is not valid JSON: %v (at byte %d)", err, se.Offset)
		}
		return refuse(http.StatusBadRequest, CodeBadRequest, "the body is not valid JSON: %v", err)
	}
	if len(bytes.TrimSpace(raw[dec.InputOffset():])) > 0 {
		return refuse(http.StatusBadRequest, CodeBadRequest, "the body holds more than one JSON value")
	}
	return nil
}

// fieldType is the Go type of the field at path (JSON names joined by
// dots) in the struct v points to, or nil.
func fieldType(v any, path string) reflect.Type {
	t := reflect.TypeOf(v)
	for name := range strings.SplitSeq(path, ".") {
		var found reflect.Type
		for _, f := range jsonFields(t) {
			if n, _ := jsonName(f); n == name {
				found = f.Type
				break
			}
		}
		t = found
	}
	return t
}

// fieldsOf lists, for a message, the JSON fields of the struct v points
// to: "; it takes a, b and c", or "" when v is not a struct.
func fieldsOf(v any) string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return ""
	}
	var names []string
	for _, f := range jsonFields(t) {
		name, _ := jsonName(f)
		names = append(names, name)
	}
	switch len(names) {
	case 0:
		return "; it takes no fields"
	case 1:
		return "; it takes " + names[0]
	}
	return "; it takes " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// jsonFields are the fields of struct type t (through pointers) that
// encoding/json decodes; none when t is not a struct.
func jsonFields(t reflect.Type) []reflect.StructField {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var fs []reflect.StructField
	for f := range t.Fields() {
		if _, ok := jsonName(f); ok && f.IsExported() {
			fs = append(fs, f)
		}
	}
	return fs
}

// jsonName is the name encoding/json gives field f: its tag's, else its
// own; ok is false for a field the tag leaves out ("-").
func jsonName(f reflect.StructField) (name string, ok bool) {
	name, _, _ = strings.Cut(f.Tag.Get("json"), ",")
	switch name {
	case "-":
		return "", false
	case "":
		return f.Name, true
	}
	return name, true
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

// Numbers turns the json.Numbers of a decoded value into int (when whole)
// or float64, as the engine's values are, in place; with convert false it
// only checks them (a signal keeps its numbers as written). A number
// beyond a float64 is invalid_body: no run could keep it.
func Numbers(x any, convert bool) (any, error) {
	switch t := x.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, invalid("the number %s is beyond what a run holds (a 64-bit float)", clip(string(t), 40))
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
			nv, err := Numbers(v, convert)
			if err != nil {
				return nil, err
			}
			t[k] = nv
		}
	case []any:
		for i, v := range t {
			nv, err := Numbers(v, convert)
			if err != nil {
				return nil, err
			}
			t[i] = nv
		}
	}
	return x, nil
}

// Inputs are the inputs of a request's body as a run takes them: none is
// an empty map.
func Inputs(in map[string]any) (map[string]any, error) {
	if in == nil {
		return map[string]any{}, nil
	}
	if _, err := Numbers(in, true); err != nil {
		return nil, err
	}
	return in, nil
}

// clip cuts s to n bytes for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s… (%d digits)", s[:n], len(s))
}

// Parse reads a webhook's body by its declared content type: JSON
// (numbers whole or not, as the engine's values are), a form (each field
// a string, or a list of strings when repeated) or text. An empty body is
// null.
func Parse(contentType string, raw []byte) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if contentType == "" || err != nil {
		return nil, refuse(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
			"declare the body's Content-Type: application/json, application/x-www-form-urlencoded or text/plain")
	}
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		var v any
		if err := DecodeJSON(raw, &v, false); err != nil {
			return nil, err
		}
		return Numbers(v, true)
	case mt == "application/x-www-form-urlencoded":
		if err := CheckUTF8("the form", raw); err != nil {
			return nil, err
		}
		q, err := url.ParseQuery(string(raw))
		if err != nil {
			return nil, refuse(http.StatusBadRequest, CodeBadRequest, "the body is not a valid form: %v", err)
		}
		for k, vs := range q {
			if err := CheckUTF8(fmt.Sprintf("form field %q", k), []byte(k+strings.Join(vs, ""))); err != nil {
				return nil, err
			}
		}
		return Values(q), nil
	case strings.HasPrefix(mt, "text/"):
		if cs := strings.ToLower(params["charset"]); cs != "" && cs != "utf-8" && cs != "us-ascii" {
			return nil, refuse(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "send text in UTF-8, not %s", cs)
		}
		if err := CheckUTF8("the text", raw); err != nil {
			return nil, err
		}
		return string(raw), nil
	}
	return nil, refuse(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
		"a hook takes application/json, application/x-www-form-urlencoded or text/* bodies, not %s", mt)
}

// Values turns query or form values into a map: a string per name, or a
// list of strings when the name is repeated.
func Values(q url.Values) map[string]any {
	out := make(map[string]any, len(q))
	for k, vs := range q {
		if len(vs) == 1 {
			out[k] = vs[0]
			continue
		}
		list := make([]any, len(vs))
		for i, v := range vs {
			list[i] = v
		}
		out[k] = list
	}
	return out
}
