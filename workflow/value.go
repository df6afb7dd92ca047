package workflow

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// kind of a parsed value.
type vkind uint8

const (
	vNull vkind = iota
	vBool
	vInt
	vFloat
	vString
	vList
	vMap
)

func (k vkind) String() string {
	return [...]string{"null", "boolean", "integer", "number", "string", "list", "map"}[k]
}

// value is a parsed YAML or JSON value that remembers where it was written.
// Both decoders produce it, so everything after parsing is shared.
type value struct {
	kind vkind
	pos  Pos
	// style tells how a string was written, so a byte offset in it maps to
	// a column: 'p' plain, '"' or '\'' quoted with nothing escaped; 0 when
	// it cannot be mapped (block scalars, escapes, several lines).
	style byte
	b     bool
	i     int64
	f     float64
	s     string
	list  []*value
	keys  []mapEntry
	// index finds a key of a map with more than smallMap keys. The
	// decoders build it as they add keys (see add); a decoded value is not
	// changed after, so reading it needs no lock.
	index map[string]int
}

// smallMap is the most keys a map value holds without an index: a scan of
// a few keys costs less than a hash.
const smallMap = 16

type mapEntry struct {
	key    string
	keyPos Pos
	val    *value
	merged bool // came from a YAML merge key (<<); an explicit key overrides it
}

// get returns the entry for key.
func (v *value) get(key string) (*value, bool) {
	if i := v.find(key); i >= 0 {
		return v.keys[i].val, true
	}
	return nil, false
}

// find returns the index of key's entry in v.keys, or -1; through the
// index for a big map, so that a map's keys are found in linear time
// overall, whatever their number.
func (v *value) find(key string) int {
	if v.index != nil {
		if i, ok := v.index[key]; ok {
			return i
		}
		return -1
	}
	for i := range v.keys {
		if v.keys[i].key == key {
			return i
		}
	}
	return -1
}

// add appends an entry to a map whose keys do not hold e.key yet, indexing
// the keys once there are more than smallMap.
func (v *value) add(e mapEntry) {
	v.keys = append(v.keys, e)
	switch {
	case v.index != nil:
		v.index[e.key] = len(v.keys) - 1
	case len(v.keys) > smallMap:
		v.index = make(map[string]int, cap(v.keys))
		for i, k := range v.keys {
			v.index[k.key] = i
		}
	}
}

// plain converts v into plain Go values: integers become int, other
// numbers float64, maps map[string]any and lists []any.
func (v *value) plain() any {
	switch v.kind {
	case vBool:
		return v.b
	case vInt:
		return int(v.i)
	case vFloat:
		return v.f
	case vString:
		return v.s
	case vList:
		out := make([]any, len(v.list))
		for i, e := range v.list {
			out[i] = e.plain()
		}
		return out
	case vMap:
		out := make(map[string]any, len(v.keys))
		for _, e := range v.keys {
			out[e.key] = e.val.plain()
		}
		return out
	}
	return nil
}

// text returns the value of a scalar as the text a user wrote, for fields
// that take strings: YAML's `on: true` is the handle "true".
func (v *value) text() (string, bool) {
	switch v.kind {
	case vString:
		return v.s, true
	case vBool:
		return strconv.FormatBool(v.b), true
	case vInt:
		return strconv.FormatInt(v.i, 10), true
	case vFloat:
		return strconv.FormatFloat(v.f, 'g', -1, 64), true
	}
	return "", false
}

func (v *value) describe() string {
	switch v.kind {
	case vString:
		if len(v.s) > 20 {
			return fmt.Sprintf("string %q", v.s[:20]+"…")
		}
		return fmt.Sprintf("string %q", v.s)
	case vList, vMap, vNull:
		return v.kind.String()
	}
	s, _ := v.text()
	return v.kind.String() + " " + s
}

func utf8Valid(b []byte) bool { return utf8.Valid(b) }

// posAt returns the position of byte off of a string value, when its style
// allows mapping it; else the value's position.
func (v *value) posAt(off int) Pos {
	if v == nil || v.kind != vString || v.style == 0 || off < 0 || off > len(v.s) {
		return v.pos
	}
	col := v.pos.Col + utf8.RuneCountInString(v.s[:off])
	if v.style != 'p' {
		col++ // the opening quote
	}
	return Pos{v.pos.Line, col}
}
