package store

import (
	"encoding/json"
	"unicode/utf8"
)

// decodePlainObject decodes data, a JSON object, into what encoding/json's
// Decoder with UseNumber gives for it (maps, lists, strings, json.Number,
// bools and nil) without its machinery: a Decoder copies its input and
// works through reflection, and reading a big run's steps back decoded
// two maps a step that way. It declines (ok false) what it does not read
// as encoding/json would: a string with an escape, a control character or
// bytes that are not UTF-8, nesting deeper than 64, any text that is not
// valid JSON, and anything but an object or null at the top. The caller
// decodes those with encoding/json (FuzzPlainObject checks the two agree).
func decodePlainObject(data []byte) (m map[string]any, ok bool) {
	d := plainDecoder{data: data}
	d.space()
	if d.literal("null") {
		d.space()
		return nil, d.i == len(d.data)
	}
	if d.i >= len(d.data) || d.data[d.i] != '{' {
		return nil, false
	}
	v, ok := d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	if d.i != len(d.data) {
		return nil, false
	}
	return v.(map[string]any), true
}

type plainDecoder struct {
	data []byte
	i    int
}

const maxPlainDepth = 64

func (d *plainDecoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *plainDecoder) literal(s string) bool {
	if len(d.data)-d.i >= len(s) && string(d.data[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

func (d *plainDecoder) value(depth int) (any, bool) {
	d.space()
	if d.i >= len(d.data) || depth > maxPlainDepth {
		return nil, false
	}
	switch c := d.data[d.i]; {
	case c == '{':
		m := map[string]any{}
		return m, d.elements('}', func() bool {
			d.space()
			k, ok := d.string()
			if !ok {
				return false
			}
			d.space()
			if d.i >= len(d.data) || d.data[d.i] != ':' {
				return false
			}
			d.i++
			v, ok := d.value(depth + 1)
			m[k] = v
			return ok
		})
	case c == '[':
		l := []any{}
		ok := d.elements(']', func() bool {
			v, ok := d.value(depth + 1)
			l = append(l, v)
			return ok
		})
		return l, ok
	case c == '"':
		return d.string()
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	case d.literal("true"):
		return true, true
	case d.literal("false"):
		return false, true
	case d.literal("null"):
		return nil, true
	}
	return nil, false
}

// elements reads the elements of an object or a list, each with element,
// from its opening bracket to its closing one, close: none, or one and
// then one after each comma.
func (d *plainDecoder) elements(close byte, element func() bool) bool {
	d.i++ // the opening bracket
	d.space()
	if d.i < len(d.data) && d.data[d.i] == close {
		d.i++
		return true
	}
	for {
		if !element() {
			return false
		}
		d.space()
		if d.i >= len(d.data) {
			return false
		}
		d.i++
		switch d.data[d.i-1] {
		case ',':
		case close:
			return true
		default:
			return false
		}
	}
}

// string reads a string with no escape, no control character and valid
// UTF-8: the bytes between its quotes are its value.
func (d *plainDecoder) string() (string, bool) {
	if d.i >= len(d.data) || d.data[d.i] != '"' {
		return "", false
	}
	start := d.i + 1
	ascii := true
	for j := start; j < len(d.data); j++ {
		switch c := d.data[j]; {
		case c == '"':
			s := d.data[start:j]
			if !ascii && !utf8.Valid(s) {
				return "", false
			}
			d.i = j + 1
			return string(s), true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= 0x80:
			ascii = false
		}
	}
	return "", false
}

// number reads a number as JSON spells it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *plainDecoder) number() (any, bool) {
	start := d.i
	digits := func() int {
		n := 0
		for d.i < len(d.data) && d.data[d.i] >= '0' && d.data[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.data[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.data) && d.data[d.i] == '0':
		d.i++
	case digits() == 0:
		return nil, false
	}
	if d.i < len(d.data) && d.data[d.i] == '.' {
		d.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if d.i < len(d.data) && (d.data[d.i] == 'e' || d.data[d.i] == 'E') {
		d.i++
		if d.i < len(d.data) && (d.data[d.i] == '+' || d.data[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return json.Number(d.data[start:d.i]), true
}
