// Package jsonvalid checks JSON values against JSON Schemas (draft-07 and
// 2020-12) and says where a value misses its schema: every property that is
// missing, not allowed or of the wrong type, each with its path in the
// value, in a stable order.
//
// The verdict is google/jsonschema-go's (the MCP SDK's validator). That
// library stops at a value's first error and names schema locations, not
// the value's; Validate walks the schema's structure (properties, required,
// additionalProperties, items, local $refs) over the value to find each
// problem and where it is, and asks the library about the rest of each
// subschema (ranges, lengths, patterns, anyOf, …) at that place. What it
// cannot place (a subschema whose anyOf holds a $ref, unevaluatedProperties)
// is the library's own finding, about the whole value.
package jsonvalid

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schema is a compiled JSON Schema.
type Schema struct {
	root *jsonschema.Schema
	res  *jsonschema.Resolved
}

// Compile compiles doc, a JSON Schema as decoded from JSON or YAML (maps,
// slices, numbers, strings, booleans). A schema without $schema is read as
// draft 2020-12; draft-04 and draft-06 schemas are read as draft-07, the
// closest draft the validator knows. Nothing is ever loaded from elsewhere:
// a $ref must be a JSON Pointer into the schema ("#/$defs/a"). A schema
// with another reference, a $dynamicRef, a type JSON does not have, or
// subschemas that refer to each other without going into the value does
// not compile, and the error names the place.
func Compile(doc any) (*Schema, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var root jsonschema.Schema
	if err := json.Unmarshal(b, &root); err != nil {
		return nil, err
	}
	root.Schema = draftOf(root.Schema)
	if root.Schema != draft7 && root.Schema != draft2020 {
		return nil, fmt.Errorf("$schema %q is not a draft Skein reads (draft-04 to draft-07, draft 2020-12)", root.Schema)
	}
	if err := check(&root); err != nil {
		return nil, err
	}
	res, err := root.Resolve(nil)
	if err != nil {
		return nil, err
	}
	return &Schema{root: &root, res: res}, nil
}

// draftOf is the $schema the validator reads for s.
func draftOf(s string) string {
	u := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(s, "http://"), "https://"), "#")
	switch u {
	case "json-schema.org/draft-04/schema", "json-schema.org/draft-06/schema", "json-schema.org/draft-07/schema":
		return draft7
	case "json-schema.org/draft/2020-12/schema", "json-schema.org/schema", "":
		return draft2020
	}
	return s
}

// The $schema of the drafts the validator knows.
const (
	draft7    = "http://json-schema.org/draft-07/schema#"
	draft2020 = "https://json-schema.org/draft/2020-12/schema"
)

// Problem is one way a value misses its schema.
type Problem struct {
	// Path is where in the value: property names and array indexes (as
	// decimal strings), outermost first; empty for the value itself.
	Path []string
	// Keyword is the schema keyword the value misses: "type", "required"
	// (Path names the missing property), "additionalProperties" (Path names
	// the property not allowed), "enum", "const", or another keyword.
	Keyword string
	// Message says what is wrong, without the path: "got string, want
	// number", "is required", "is not allowed".
	Message string
}

// Pointer is the problem's path as a JSON Pointer: "/items/2/name", "" for
// the value itself.
func (p Problem) Pointer() string {
	var sb strings.Builder
	for _, tok := range p.Path {
		sb.WriteByte('/')
		sb.WriteString(escape(tok))
	}
	return sb.String()
}

// Field is the problem's path as a field path: "items[2].name", "" for the
// value itself.
func (p Problem) Field() string {
	var sb strings.Builder
	for _, tok := range p.Path {
		if isIndex(tok) {
			sb.WriteString("[" + tok + "]")
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(tok)
	}
	return sb.String()
}

// Validate checks v, any value that encodes as JSON, against the schema.
// It returns nil when v matches; else every problem found, at least one.
// The error is for a value that is not JSON (a NaN, a channel).
func (s *Schema) Validate(v any) ([]Problem, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var inst any
	if err := json.Unmarshal(b, &inst); err != nil {
		return nil, err
	}
	verdict := s.res.Validate(inst)
	if verdict == nil {
		return nil, nil
	}
	w := walker{root: s.root}
	w.walk(s.root, inst, nil, 0)
	if len(w.out) == 0 {
		// What the walk cannot place (a $ref it does not follow, an
		// unevaluatedProperties): the library's own finding.
		w.out = append(w.out, leafProblem(nil, verdict))
	}
	return w.out, nil
}

// maxDepth bounds the walk through $refs that refer to each other without
// going deeper into the value.
const maxDepth = 256

type walker struct {
	root *jsonschema.Schema
	out  []Problem
}

func (w *walker) add(path []string, keyword, msg string) {
	w.out = append(w.out, Problem{Path: slices.Clone(path), Keyword: keyword, Message: msg})
}

// walk finds the problems of v, at path, against sch.
func (w *walker) walk(sch *jsonschema.Schema, v any, path []string, depth int) {
	if sch == nil || depth > maxDepth {
		return
	}
	if isFalse(sch) {
		w.add(path, "false", "is not allowed")
		return
	}
	if sch.Ref != "" {
		if target := local(w.root, sch.Ref); target != nil {
			w.walk(target, v, path, depth+1)
		}
		if w.root.Schema != draft2020 {
			return // draft-07: a $ref's siblings are ignored
		}
	}
	if want := types(sch); len(want) > 0 {
		got := jsonType(v)
		if !slices.Contains(want, got) && !(got == "integer" && slices.Contains(want, "number")) {
			if got == "integer" {
				got = "number" // a whole number is still a number to the reader
			}
			w.add(path, "type", fmt.Sprintf("got %s, want %s", got, strings.Join(want, " or ")))
			return
		}
	}
	if len(sch.Enum) > 0 && !slices.ContainsFunc(sch.Enum, func(e any) bool { return equal(e, v) }) {
		quoted := make([]string, len(sch.Enum))
		for i, e := range sch.Enum {
			quoted[i] = show(e)
		}
		w.add(path, "enum", "value must be one of "+strings.Join(quoted, ", "))
		return
	}
	if sch.Const != nil && !equal(*sch.Const, v) {
		w.add(path, "const", "value must be "+show(*sch.Const))
		return
	}
	before := len(w.out)
	switch x := v.(type) {
	case map[string]any:
		w.object(sch, x, path, depth)
	case []any:
		w.array(sch, x, path, depth)
	}
	if len(w.out) > before {
		return
	}
	// The rest of the subschema, as the library sees it, at this place.
	if err := rest(sch, w.root.Schema, v); err != nil {
		p := leafProblem(path, err)
		if msg := message(sch, p.Keyword, v); msg != "" {
			p.Message = msg
		}
		w.out = append(w.out, p)
	}
}

// message says what the validator found for keyword in words of the
// schema's own limits: "must be >= 1, is 0"; "" for the validator's own.
func message(sch *jsonschema.Schema, keyword string, v any) string {
	num := func(f *float64) string { return strconv.FormatFloat(*f, 'g', -1, 64) }
	count := func(n *int, one string) string {
		if *n == 1 {
			return "1 " + one
		}
		if one == "property" {
			return strconv.Itoa(*n) + " properties"
		}
		return strconv.Itoa(*n) + " " + one + "s"
	}
	is := show(v)
	switch keyword {
	case "minimum":
		return "must be >= " + num(sch.Minimum) + ", is " + is
	case "maximum":
		return "must be <= " + num(sch.Maximum) + ", is " + is
	case "exclusiveMinimum":
		return "must be > " + num(sch.ExclusiveMinimum) + ", is " + is
	case "exclusiveMaximum":
		return "must be < " + num(sch.ExclusiveMaximum) + ", is " + is
	case "multipleOf":
		return "must be a multiple of " + num(sch.MultipleOf) + ", is " + is
	case "minLength":
		return fmt.Sprintf("must have at least %s, has %d", count(sch.MinLength, "character"), utf8.RuneCountInString(fmt.Sprint(v)))
	case "maxLength":
		return fmt.Sprintf("must have at most %s, has %d", count(sch.MaxLength, "character"), utf8.RuneCountInString(fmt.Sprint(v)))
	case "pattern":
		return fmt.Sprintf("'%v' does not match the pattern '%s'", v, sch.Pattern)
	case "minItems":
		if x, ok := v.([]any); ok {
			return fmt.Sprintf("must have at least %s, has %d", count(sch.MinItems, "item"), len(x))
		}
	case "maxItems":
		if x, ok := v.([]any); ok {
			return fmt.Sprintf("must have at most %s, has %d", count(sch.MaxItems, "item"), len(x))
		}
	case "minProperties":
		if x, ok := v.(map[string]any); ok {
			return fmt.Sprintf("must have at least %s, has %d", count(sch.MinProperties, "property"), len(x))
		}
	case "maxProperties":
		if x, ok := v.(map[string]any); ok {
			return fmt.Sprintf("must have at most %s, has %d", count(sch.MaxProperties, "property"), len(x))
		}
	}
	return ""
}

func (w *walker) object(sch *jsonschema.Schema, x map[string]any, path []string, depth int) {
	for _, name := range sch.Required {
		if _, ok := x[name]; !ok {
			w.add(append(path, name), "required", "is required")
		}
	}
	names := make([]string, 0, len(x))
	for k := range x {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if sub, ok := sch.Properties[k]; ok {
			w.walk(sub, x[k], append(path, k), depth+1)
			continue
		}
		matched := false
		for pat, sub := range sch.PatternProperties {
			if ok, _ := regexp.MatchString(pat, k); ok {
				matched = true
				w.walk(sub, x[k], append(path, k), depth+1)
			}
		}
		if matched || sch.AdditionalProperties == nil {
			continue
		}
		if isFalse(sch.AdditionalProperties) {
			w.add(append(path, k), "additionalProperties", "is not allowed")
			continue
		}
		w.walk(sch.AdditionalProperties, x[k], append(path, k), depth+1)
	}
}

func (w *walker) array(sch *jsonschema.Schema, x []any, path []string, depth int) {
	prefix := sch.PrefixItems
	rest := sch.Items
	if len(sch.ItemsArray) > 0 { // draft-07's items: [...]
		prefix, rest = sch.ItemsArray, sch.AdditionalItems
	}
	for i, e := range x {
		sub := rest
		if i < len(prefix) {
			sub = prefix[i]
		}
		if sub == nil {
			continue
		}
		if isFalse(sub) {
			w.add(append(path, strconv.Itoa(i)), "items", "is not allowed")
			continue
		}
		w.walk(sub, e, append(path, strconv.Itoa(i)), depth+1)
	}
}

// rest validates v against what sch says beyond the keywords the walk
// reads; nil when v matches it or it cannot be checked on its own (it
// refers to other parts of the schema).
func rest(sch *jsonschema.Schema, draft string, v any) error {
	c := *sch
	c.ID, c.Schema, c.Ref, c.Anchor, c.DynamicAnchor, c.DynamicRef = "", draft, "", "", "", ""
	c.Defs, c.Definitions = nil, nil
	c.Type, c.Types, c.Enum, c.Const = "", nil, nil, nil
	c.Required, c.Properties, c.PatternProperties, c.AdditionalProperties = nil, nil, nil, nil
	c.PrefixItems, c.Items, c.ItemsArray, c.AdditionalItems = nil, nil, nil, nil
	c.UnevaluatedProperties, c.UnevaluatedItems = nil, nil
	c.Default = nil
	if hasRef(&c) {
		// Its $refs would name parts of the copy, not of the schema.
		return nil
	}
	res, err := c.Resolve(nil)
	if err != nil {
		return nil
	}
	return res.Validate(v)
}

// hasRef says whether s or a subschema of it has a $ref.
func hasRef(s *jsonschema.Schema) bool {
	if s.Ref != "" || s.DynamicRef != "" {
		return true
	}
	for _, c := range children(s) {
		if hasRef(c.sub) {
			return true
		}
	}
	return false
}

// leafProblem is the library's error err as a problem at path: its
// innermost message ("minimum: 0 is less than 1"), keyword first.
func leafProblem(path []string, err error) Problem {
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			break
		}
		err = inner
	}
	msg := err.Error()
	keyword := ""
	if k, rest, ok := strings.Cut(msg, ": "); ok && !strings.ContainsAny(k, " \"") {
		keyword, msg = k, rest
	}
	return Problem{Path: slices.Clone(path), Keyword: keyword, Message: msg}
}

// types are the JSON types sch allows, none when it says nothing.
func types(sch *jsonschema.Schema) []string {
	if sch.Type != "" {
		return []string{sch.Type}
	}
	return sch.Types
}

// jsonType is the JSON Schema type of a decoded JSON value; a number with
// no fraction is an integer.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// equal says whether two JSON values are equal as JSON Schema compares
// them: by their JSON text (object keys sorted, 1 and 1.0 both "1").
func equal(a, b any) bool {
	ab, err1 := json.Marshal(a)
	bb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ab) == string(bb)
}

// show writes a value of an enum or const as JSON.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// isFalse says whether s is the schema false (the library reads false
// as {"not": {}}).
func isFalse(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && isEmpty(s.Not) && !hasOther(s)
}

// isEmpty says whether s is the schema true ({}).
func isEmpty(s *jsonschema.Schema) bool {
	b, err := json.Marshal(s)
	return err == nil && (string(b) == "{}" || string(b) == "true")
}

// hasOther says whether s has keywords besides not ($schema and $id
// aside).
func hasOther(s *jsonschema.Schema) bool {
	c := *s
	c.Not, c.Schema, c.ID = nil, "", ""
	return !isEmpty(&c)
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
