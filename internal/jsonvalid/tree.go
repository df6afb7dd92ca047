package jsonvalid

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// child is a subschema of a schema.
type child struct {
	key  string // its JSON Pointer from the parent: "properties/a~1b", "allOf/0", "not"
	sub  *jsonschema.Schema
	same bool // it applies to the parent's value itself, not to a part of it
}

// children lists the subschemas of s.
func children(s *jsonschema.Schema) []child {
	var out []child
	one := func(key string, sub *jsonschema.Schema, same bool) {
		if sub != nil {
			out = append(out, child{key, sub, same})
		}
	}
	list := func(key string, subs []*jsonschema.Schema, same bool) {
		for i, sub := range subs {
			one(key+"/"+strconv.Itoa(i), sub, same)
		}
	}
	named := func(key string, m map[string]*jsonschema.Schema, same bool) {
		names := make([]string, 0, len(m))
		for name := range m {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			one(key+"/"+escape(name), m[name], same)
		}
	}
	list("allOf", s.AllOf, true)
	list("anyOf", s.AnyOf, true)
	list("oneOf", s.OneOf, true)
	one("not", s.Not, true)
	one("if", s.If, true)
	one("then", s.Then, true)
	one("else", s.Else, true)
	named("dependentSchemas", s.DependentSchemas, true)
	named("dependencies", s.DependencySchemas, true)
	named("$defs", s.Defs, false)
	named("definitions", s.Definitions, false)
	named("properties", s.Properties, false)
	named("patternProperties", s.PatternProperties, false)
	one("additionalProperties", s.AdditionalProperties, false)
	one("propertyNames", s.PropertyNames, false)
	one("unevaluatedProperties", s.UnevaluatedProperties, false)
	list("prefixItems", s.PrefixItems, false)
	one("items", s.Items, false)
	list("items", s.ItemsArray, false)
	one("additionalItems", s.AdditionalItems, false)
	one("contains", s.Contains, false)
	one("unevaluatedItems", s.UnevaluatedItems, false)
	one("contentSchema", s.ContentSchema, false)
	return out
}

// escape writes a name as a JSON Pointer token.
func escape(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// local is the subschema of root a $ref names by a JSON Pointer ("#",
// "#/$defs/a", "#/properties/a/items"), or nil.
func local(root *jsonschema.Schema, ref string) *jsonschema.Schema {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok || (ptr != "" && !strings.HasPrefix(ptr, "/")) {
		return nil
	}
	s := root
	ptr = strings.TrimPrefix(ptr, "/")
	for ptr != "" {
		var next *jsonschema.Schema
		for _, c := range children(s) {
			if rest, ok := strings.CutPrefix(ptr, c.key); ok && (rest == "" || rest[0] == '/') {
				next, ptr = c.sub, strings.TrimPrefix(rest, "/")
				break
			}
		}
		if next == nil {
			return nil
		}
		s = next
	}
	return s
}

// check refuses what the validator would take and then misread or never
// finish: a type JSON does not have (every value would fail), a $ref that
// is not a JSON Pointer into the schema, a $dynamicRef, and subschemas
// that refer to each other without going into the value (the validator
// would recurse until the stack overflows).
func check(root *jsonschema.Schema) error {
	type node struct {
		ptr  string
		same []*jsonschema.Schema // applied to the same value: subschemas and $ref targets
	}
	nodes := map[*jsonschema.Schema]*node{}
	var order []*jsonschema.Schema // as walked, for a stable message
	var walk func(s *jsonschema.Schema, ptr string) error
	walk = func(s *jsonschema.Schema, ptr string) error {
		if nodes[s] != nil {
			return nil
		}
		n := &node{ptr: ptr}
		nodes[s] = n
		order = append(order, s)
		for _, t := range append([]string{s.Type}, s.Types...) {
			switch t {
			case "", "null", "boolean", "object", "array", "number", "integer", "string":
			default:
				return fmt.Errorf("%s: type %q is not a JSON type (null, boolean, object, array, number, integer, string)", ptr, t)
			}
		}
		if s.DynamicRef != "" {
			return fmt.Errorf("%s: $dynamicRef %q is not followed; refer with $ref and a JSON Pointer (#/$defs/…)", ptr, s.DynamicRef)
		}
		if s.Ref != "" {
			target := local(root, s.Ref)
			if target == nil {
				return fmt.Errorf("%s: $ref %q is not a JSON Pointer to a part of this schema (#/$defs/…); nothing is loaded from elsewhere", ptr, s.Ref)
			}
			n.same = append(n.same, target)
		}
		for _, c := range children(s) {
			if c.same {
				n.same = append(n.same, c.sub)
			}
			if err := walk(c.sub, ptr+"/"+c.key); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, "#"); err != nil {
		return err
	}
	// A cycle of same-value edges is a loop the validator never leaves.
	const (
		unseen = iota
		open
		done
	)
	state := map[*jsonschema.Schema]int{}
	var visit func(s *jsonschema.Schema) error
	visit = func(s *jsonschema.Schema) error {
		switch state[s] {
		case open:
			return fmt.Errorf("%s refers to itself without going into the value: checking a value against it would never end", nodes[s].ptr)
		case done:
			return nil
		}
		state[s] = open
		for _, next := range nodes[s].same {
			if err := visit(next); err != nil {
				return err
			}
		}
		state[s] = done
		return nil
	}
	for _, s := range order {
		if err := visit(s); err != nil {
			return err
		}
	}
	return nil
}
