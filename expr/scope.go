package expr

import (
	"maps"
	"reflect"
	"strings"
	"time"
)

// ScopeRoots are the top-level names the scope reserves; node ids must not
// use them.
var ScopeRoots = []string{"inputs", "trigger", "vars", "secrets", "execution", "loop", "messages"}

// Scope is what expressions can read: the run's inputs, trigger payload,
// variables, declared secrets, execution facts, the current loop, the
// run's chat messages, and the outputs of the nodes finished so far.
//
// Values are data: they are read, never rendered again, and evaluation never
// modifies them. A value an expression returns may be (part of) a value of
// the scope, so callers must treat results as read-only.
type Scope struct {
	Inputs    map[string]any
	Trigger   map[string]any
	Vars      map[string]any
	Secrets   map[string]any
	Execution map[string]any // id, workflow, started_at
	Loop      map[string]any // item, index, total, iteration; nil outside loops
	// Messages is the run's message list (the nodes' _messages); nil is
	// an empty list.
	Messages []any
	Nodes    map[string]any // node id → its output object, with "success" and "error"
	// Now is the clock now() reads: the run's, so that a test's injected
	// clock and a replay's recorded times reach templates. nil: the
	// machine's clock.
	Now func() time.Time
}

// Env returns the flat environment expressions see: the keys of ScopeRoots
// and every node id. A node id equal to a scope root is shadowed by the root.
// A nil root map is an empty object, except loop, which is nil outside loops.
func (s *Scope) Env() map[string]any {
	n := len(ScopeRoots)
	if s != nil {
		n += len(s.Nodes)
	}
	env := make(map[string]any, n)
	if s != nil {
		for id, out := range s.Nodes {
			env[id] = out
		}
	}
	for _, root := range ScopeRoots {
		env[root], _ = s.lookup(root)
	}
	return env
}

// lookup returns the value of one top-level name, as Env would hold it.
func (s *Scope) lookup(name string) (any, bool) {
	var m map[string]any
	switch name {
	case "inputs":
		if s != nil {
			m = s.Inputs
		}
	case "trigger":
		if s != nil {
			m = s.Trigger
		}
	case "vars":
		if s != nil {
			m = s.Vars
		}
	case "secrets":
		if s != nil {
			m = s.Secrets
		}
	case "execution":
		if s != nil {
			m = s.Execution
		}
	case "loop":
		if s == nil || s.Loop == nil {
			return nil, true
		}
		return s.Loop, true
	case "messages":
		if s == nil || s.Messages == nil {
			return []any{}, true
		}
		return s.Messages, true
	default:
		if s == nil {
			return nil, false
		}
		v, ok := s.Nodes[name]
		return v, ok
	}
	if m == nil {
		// An empty object, so that len(inputs) and the like work. A new one
		// each time: a rendered value may be handed on and modified.
		return map[string]any{}, true
	}
	return m, true
}

// Normalize applies the variable-extraction rule to a tool or node result
// and returns its output object:
//
//   - an object (a map with string keys) gives its keys, copied;
//   - an array (any slice but []byte) gives items (the array), found (it is
//     not empty) and count, plus the fields of its first element when that is
//     an object, except fields named items, found or count and fields
//     beginning with "_" (an array's data never carries directives);
//   - anything else (string, number, bool, nil, []byte) gives value.
//
// The result is a new map; the values in it are not copied.
func Normalize(v any) map[string]any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		maps.Copy(out, v)
		return out
	case []any:
		var first any
		if len(v) > 0 {
			first = v[0]
		}
		return normalizeArray(v, len(v), first)
	case nil, string, bool, []byte,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64,
		float32, float64:
		return map[string]any{"value": v}
	}
	if obj, ok := object(v); ok {
		return obj
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		var first any
		if rv.Len() > 0 && rv.Index(0).CanInterface() {
			first = rv.Index(0).Interface()
		}
		return normalizeArray(v, rv.Len(), first)
	}
	return map[string]any{"value": v}
}

func normalizeArray(items any, n int, first any) map[string]any {
	out := map[string]any{"items": items, "found": n > 0, "count": n}
	if f, ok := object(first); ok {
		for k, x := range f {
			if _, taken := out[k]; taken || strings.HasPrefix(k, "_") {
				continue
			}
			out[k] = x
		}
	}
	return out
}

// object returns a copy of v as a map[string]any when v is a map with string
// keys.
func object(v any) (map[string]any, bool) {
	if m, ok := v.(map[string]any); ok {
		return maps.Clone(m), true
	}
	if v == nil {
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return nil, false
	}
	out := make(map[string]any, rv.Len())
	for it := rv.MapRange(); it.Next(); {
		if it.Value().CanInterface() {
			out[it.Key().String()] = it.Value().Interface()
		}
	}
	return out, true
}

// SplitDirectives separates a node result's top-level keys that begin with
// "_" (directives such as _route and _state_patch, kept with their "_") from
// its outputs. out is a new map, never nil; directives is nil when m has none.
func SplitDirectives(m map[string]any) (out map[string]any, directives map[string]any) {
	out = make(map[string]any, len(m))
	for k, v := range m {
		if strings.HasPrefix(k, "_") {
			if directives == nil {
				directives = make(map[string]any)
			}
			directives[k] = v
			continue
		}
		out[k] = v
	}
	return out, directives
}
