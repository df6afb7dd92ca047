package jsonvalid_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/jsonvalid"
)

func compile(t *testing.T, schema string) *jsonvalid.Schema {
	t.Helper()
	var doc any
	require.NoError(t, json.Unmarshal([]byte(schema), &doc))
	s, err := jsonvalid.Compile(doc)
	require.NoError(t, err)
	return s
}

// found writes problems one a line: "pointer keyword: message".
func found(ps []jsonvalid.Problem) string {
	var lines []string
	for _, p := range ps {
		lines = append(lines, p.Pointer()+" "+p.Keyword+": "+p.Message)
	}
	return strings.Join(lines, "\n")
}

const order = `{
	"type": "object",
	"properties": {
		"city": {"type": "string", "minLength": 2},
		"code": {"type": "string", "pattern": "^[A-Z]{3}$"},
		"days": {"type": "integer", "minimum": 1},
		"unit": {"enum": ["c", "f"]},
		"kind": {"const": "forecast"},
		"items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
		"pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": false}
	},
	"required": ["city", "days"],
	"additionalProperties": false,
	"$defs": {
		"item": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
	}
}`

func TestValidateFindsEveryProblemWhereItIs(t *testing.T) {
	s := compile(t, order)
	for _, tc := range []struct {
		name  string
		value string
		want  string // found(problems); empty when the value matches
	}{
		{"matches", `{"city": "Oslo", "days": 3, "unit": "c", "kind": "forecast", "items": [{"name": "a"}], "pair": ["a", 1.5]}`, ""},
		{"wrong type", `{"city": 1, "days": 3}`, "/city type: got number, want string"},
		{"number for an integer", `{"city": "Oslo", "days": 1.5}`, "/days type: got number, want integer"},
		{"missing, each named", `{}`, "/city required: is required\n/days required: is required"},
		{"not allowed, in order", `{"city": "Oslo", "days": 1, "zz": 1, "aa": 2}`, "/aa additionalProperties: is not allowed\n/zz additionalProperties: is not allowed"},
		{"enum", `{"city": "Oslo", "days": 1, "unit": "k"}`, `/unit enum: value must be one of "c", "f"`},
		{"const", `{"city": "Oslo", "days": 1, "kind": "x"}`, `/kind const: value must be "forecast"`},
		{"through a $ref, at each item", `{"city": "Oslo", "days": 1, "items": [{}, {"name": 3}, {"name": "ok"}]}`,
			"/items/0/name required: is required\n/items/1/name type: got number, want string"},
		{"prefix items and no more", `{"city": "Oslo", "days": 1, "pair": [1, "x", true]}`,
			"/pair/0 type: got number, want string\n/pair/1 type: got string, want number\n/pair/2 items: is not allowed"},
		{"a range, from the validator", `{"city": "Oslo", "days": 0}`, "/days minimum: must be >= 1, is 0"},
		{"a length, from the validator", `{"city": "O", "days": 1}`, "/city minLength: must have at least 2 characters, has 1"},
		{"a pattern", `{"city": "Oslo", "days": 1, "code": "usd"}`, "/code pattern: 'usd' does not match the pattern '^[A-Z]{3}$'"},
		{"not an object at all", `[1]`, " type: got array, want object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v any
			require.NoError(t, json.Unmarshal([]byte(tc.value), &v))
			ps, err := s.Validate(v)
			require.NoError(t, err)
			require.Equal(t, tc.want, found(ps))
		})
	}
}

// The same value gets the same problems in the same order every time,
// though the value and the schema are maps.
func TestValidateIsStable(t *testing.T) {
	s := compile(t, order)
	v := map[string]any{"a": 1, "b": 2, "c": 3, "d": 4, "city": 5, "days": "x", "items": []any{map[string]any{}, 7}}
	first, err := s.Validate(v)
	require.NoError(t, err)
	require.Len(t, first, 8)
	for range 50 {
		again, err := s.Validate(v)
		require.NoError(t, err)
		require.Equal(t, first, again)
	}
}

func TestPaths(t *testing.T) {
	p := jsonvalid.Problem{Path: []string{"items", "2", "a/b", "c~d"}}
	require.Equal(t, "/items/2/a~1b/c~0d", p.Pointer())
	require.Equal(t, "items[2].a/b.c~d", p.Field())
	require.Equal(t, "", jsonvalid.Problem{}.Pointer())
	require.Equal(t, "", jsonvalid.Problem{}.Field())
}

// Go values a workflow holds (ints, []string, nested maps) are checked as
// the JSON they encode to.
func TestValidateGoValues(t *testing.T) {
	s := compile(t, `{"type": "object", "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}}`)
	ps, err := s.Validate(map[string]any{"n": 3, "tags": []string{"a", "b"}})
	require.NoError(t, err)
	require.Empty(t, ps)
	ps, err = s.Validate(map[string]any{"n": int64(3), "tags": []any{"a", 2}})
	require.NoError(t, err)
	require.Equal(t, "/tags/1 type: got number, want string", found(ps))
	_, err = s.Validate(map[string]any{"n": math.NaN()})
	require.Error(t, err, "a NaN is not JSON")
}

// Schemas from MCP servers come in every draft: draft-07 (with or without
// the #) refers to definitions; draft-04 and -06 read as draft-07.
func TestDrafts(t *testing.T) {
	for _, draft := range []string{
		"http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema",
		"http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
		"https://json-schema.org/draft/2020-12/schema",
	} {
		t.Run(draft, func(t *testing.T) {
			s := compile(t, `{"$schema": "`+draft+`", "type": "object",
				"properties": {"a": {"$ref": "#/definitions/pos"}}, "definitions": {"pos": {"type": "integer", "minimum": 1}}}`)
			ps, err := s.Validate(map[string]any{"a": 0})
			require.NoError(t, err)
			require.Equal(t, "/a minimum: must be >= 1, is 0", found(ps))
		})
	}
}

// What the walk cannot place is the validator's own finding, at the value.
func TestValidateFallsBackToTheVerdict(t *testing.T) {
	s := compile(t, `{"anyOf": [{"$ref": "#/$defs/a"}, {"type": "integer"}], "$defs": {"a": {"type": "string"}}}`)
	ps, err := s.Validate(true)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, "", ps[0].Pointer())
	require.Equal(t, "anyOf", ps[0].Keyword)

	// anyOf of plain subschemas is checked where it stands.
	s = compile(t, `{"type": "object", "properties": {"id": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}`)
	ps, err = s.Validate(map[string]any{"id": true})
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, "/id", ps[0].Pointer())
	require.Equal(t, "anyOf", ps[0].Keyword)
}

func TestCompileRefusesWhatItCannotRead(t *testing.T) {
	for name, doc := range map[string]any{
		"a remote reference":     map[string]any{"$ref": "https://example.com/schema.json"},
		"a bad pattern":          map[string]any{"type": "string", "pattern": "("},
		"not a schema":           "object",
		"an unknown draft":       map[string]any{"$schema": "https://example.com/my-draft"},
		"a type JSON lacks":      map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "strin"}}},
		"a bad type in $defs":    map[string]any{"$defs": map[string]any{"x": map[string]any{"type": []any{"string", "float"}}}},
		"a minimum not a number": map[string]any{"minimum": "one"},
	} {
		_, err := jsonvalid.Compile(doc)
		require.Error(t, err, name)
	}
	// true and false are schemas.
	s, err := jsonvalid.Compile(false)
	require.NoError(t, err)
	ps, err := s.Validate(1)
	require.NoError(t, err)
	require.Equal(t, " false: is not allowed", found(ps))
}

// Schemas the validator would loop on forever (its recursion overflows
// the stack, which no recover catches) or misread do not compile; each
// error names the place.
func TestCompileRefusesLoops(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"$ref": "#"}`, "# refers to itself without going into the value"},
		{`{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}`, "refers to itself"},
		{`{"allOf": [{"not": {"$ref": "#"}}]}`, "refers to itself"},
		{`{"properties": {"a": {"$ref": "#/definitions/x"}}, "definitions": {"x": {"type": "strin"}}}`, `#/definitions/x: type "strin" is not a JSON type`},
		{`{"properties": {"a": {"$ref": "#anchor"}}}`, `#/properties/a: $ref "#anchor" is not a JSON Pointer`},
		{`{"properties": {"a": {"$ref": "#/$defs/missing"}}}`, `$ref "#/$defs/missing"`},
		{`{"$dynamicRef": "#node"}`, "$dynamicRef"},
	} {
		var doc any
		require.NoError(t, json.Unmarshal([]byte(tc.schema), &doc))
		_, err := jsonvalid.Compile(doc)
		require.ErrorContains(t, err, tc.want, tc.schema)
	}
	// Recursion that goes into the value is fine: a tree of any depth.
	s := compile(t, `{"type": "object", "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#"}}}, "required": ["name"]}`)
	var v any
	require.NoError(t, json.Unmarshal([]byte(`{"name": "a", "kids": [{"name": "b", "kids": [{"kids": []}, {"name": 1}]}]}`), &v))
	ps, err := s.Validate(v)
	require.NoError(t, err)
	require.Equal(t, "/kids/0/kids/0/name required: is required\n/kids/0/kids/1/name type: got number, want string", found(ps))
}

// A $ref may point anywhere in the schema by JSON Pointer, as
// zod-to-json-schema writes them ("#/properties/a/items/anyOf/0").
func TestRefsByPointer(t *testing.T) {
	s := compile(t, `{"type": "object", "properties": {
		"a": {"type": "array", "items": {"anyOf": [{"type": "object", "properties": {"x~y/z": {"type": "integer"}}}]}},
		"b": {"$ref": "#/properties/a/items/anyOf/0/properties/x~0y~1z"}}}`)
	ps, err := s.Validate(map[string]any{"a": []any{}, "b": "no"})
	require.NoError(t, err)
	require.Equal(t, "/b type: got string, want integer", found(ps))
}

func FuzzValidate(f *testing.F) {
	f.Add(order, `{"city": 1, "items": [{}, {"name": 2}], "zz": null}`)
	f.Add(`{"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}, "required": ["n"]}`, `{"kids": [{"kids": [{}]}]}`)
	f.Add(`{"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 3}]}`, `2`)
	f.Add(`{"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}}`, `1`)
	f.Add(`{"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"$ref": "#"}]}}}`, `{"a": {"a": 1}}`)
	f.Add(`{"items": [{"type": "string"}], "additionalItems": false, "$schema": "http://json-schema.org/draft-07/schema#"}`, `["a", 1]`)
	f.Fuzz(func(t *testing.T, schema, value string) {
		var doc, v any
		if json.Unmarshal([]byte(schema), &doc) != nil || json.Unmarshal([]byte(value), &v) != nil {
			return
		}
		s, err := jsonvalid.Compile(doc)
		if err != nil {
			return
		}
		ps, err := s.Validate(v)
		require.NoError(t, err)
		for _, p := range ps {
			// Every problem is at a place the value has; a missing
			// property's parent is.
			path := p.Path
			if p.Keyword == "required" {
				require.NotEmpty(t, path)
				path = path[:len(path)-1]
			}
			require.True(t, has(v, path), "%s: %q is not in %s", p.Message, p.Pointer(), value)
			require.NotEmpty(t, p.Message)
		}
	})
}

// has says whether the value has a part at path.
func has(v any, path []string) bool {
	for _, tok := range path {
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[tok]
			if !ok {
				return false
			}
			v = e
		case []any:
			i := 0
			for _, r := range tok {
				i = i*10 + int(r-'0')
			}
			if i >= len(x) {
				return false
			}
			v = x[i]
		default:
			return false
		}
	}
	return true
}

// A subschema checked where it stands keeps its $refs to the whole schema:
// read as its own root, "#" would name the subschema and loop.
func TestRefsInsideAnyOfKeepTheirMeaning(t *testing.T) {
	s := compile(t, `{"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"$ref": "#"}]}}}`)
	ps, err := s.Validate(map[string]any{"a": map[string]any{"a": 1}})
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, "", ps[0].Pointer(), "the validator's own finding, at the value")
	ps, err = s.Validate(map[string]any{"a": map[string]any{"a": "x"}})
	require.NoError(t, err)
	require.Empty(t, ps)
}

// enum and const compare JSON values: numbers by value, objects whatever
// their keys' order.
func TestEnumAndConstCompareValues(t *testing.T) {
	s := compile(t, `{"type": "object", "properties": {"n": {"enum": [1, 2.5]}, "o": {"const": {"a": 1, "b": [true, null]}}}}`)
	ps, err := s.Validate(map[string]any{"n": 1.0, "o": map[string]any{"b": []any{true, nil}, "a": 1}})
	require.NoError(t, err)
	require.Empty(t, ps)
	ps, err = s.Validate(map[string]any{"n": int64(2), "o": map[string]any{"a": 1}})
	require.NoError(t, err)
	require.Equal(t, "/n enum: value must be one of 1, 2.5\n/o const: value must be {\"a\":1,\"b\":[true,null]}", found(ps))
}
