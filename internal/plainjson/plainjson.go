// Package plainjson writes the JSON that encoding/json writes for maps of
// plain values (strings of printable ASCII, integers, floats written
// without an exponent, bools, null, and maps and lists of them) without
// reflection, and declines everything else: the caller then asks
// encoding/json. The records of a run are mostly such maps (a node's
// parameters and output, an event's data), and encoding them was a tenth
// of a node's cost in `skein run`.
package plainjson

import (
	"math"
	"slices"
	"strconv"
)

// Limits of what is encoded here; beyond them encoding/json is as quick.
const (
	maxKeys  = 16
	maxItems = 64
	maxDepth = 8
)

// AppendMap appends the JSON of m, keys sorted, as encoding/json writes
// it: with html, as json.Marshal does (it escapes <, > and &, so a string
// holding one is declined); without, as an Encoder with SetEscapeHTML
// (false). ok is false, and b holds part of the text, when a value is not
// plain: the caller encodes m otherwise from where b was. A nil map is
// null, as encoding/json writes it.
func AppendMap(b []byte, m map[string]any, html bool) (_ []byte, ok bool) {
	return appendMap(b, m, html, 0)
}

// AppendString appends s quoted when it is printable ASCII without a quote
// or a backslash (nor <, > or & with html): what encoding/json writes
// unchanged.
func AppendString(b []byte, s string, html bool) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || html && (c == '<' || c == '>' || c == '&') {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// AppendFloat appends f as encoding/json writes a float64 of magnitude in
// [1e-6, 1e21), or zero: in the shortest 'f' form. It declines others
// (written with an exponent), NaN and the infinities (not written at all).
func AppendFloat(b []byte, f float64) ([]byte, bool) {
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) || math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64), true
}

func appendMap(b []byte, m map[string]any, html bool, depth int) ([]byte, bool) {
	if m == nil {
		return append(b, "null"...), true
	}
	if len(m) > maxKeys || depth > maxDepth {
		return b, false
	}
	var keysArr [maxKeys]string
	keys := keysArr[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = AppendString(b, k, html); !ok {
			return b, false
		}
		b = append(b, ':')
		if b, ok = appendValue(b, m[k], html, depth+1); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

func appendValue(b []byte, v any, html bool, depth int) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, x), true
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case float64:
		return AppendFloat(b, x)
	case string:
		return AppendString(b, x, html)
	case map[string]any:
		return appendMap(b, x, html, depth)
	case []any:
		if x == nil {
			return append(b, "null"...), true
		}
		if len(x) > maxItems || depth > maxDepth {
			return b, false
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendValue(b, e, html, depth+1); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	}
	return b, false
}
