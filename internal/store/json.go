package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/skeinhq/skein/node"
)

// The helpers below give every implementation the same JSON encoding of
// maps and node errors, so that values round-trip alike in each of them.

// EncodeMap returns m as JSON, or nil (a NULL column) when m is nil.
func EncodeMap(m map[string]any) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	return encode(m)
}

// EncodeError returns e as JSON, or nil when e is nil. Only the fields a
// node error shows (code, category, message, details) are kept.
func EncodeError(e *node.Error) ([]byte, error) {
	if e == nil {
		return nil, nil
	}
	return encode(e)
}

func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// DecodeMap decodes what EncodeMap wrote; nil or empty data gives a nil
// map. Whole numbers that fit in an int become int (those written with a
// fraction or exponent only up to 2^53), others float64.
func DecodeMap(data []byte) (map[string]any, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var m map[string]any
	if err := decode(data, &m); err != nil {
		return nil, err
	}
	return normalizeMap(m), nil
}

// DecodeError decodes what EncodeError wrote; nil or empty data gives nil.
func DecodeError(data []byte) (*node.Error, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var e node.Error
	if err := decode(data, &e); err != nil {
		return nil, err
	}
	e.Details = normalizeMap(e.Details)
	return &e, nil
}

func decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	return nil
}

func normalizeMap(m map[string]any) map[string]any {
	for k, v := range m {
		m[k] = normalize(v)
	}
	return m
}

// normalize turns the json.Numbers of a decoded value into int or float64.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil && n >= math.MinInt && n <= math.MaxInt {
			return int(n)
		}
		f, err := x.Float64()
		if err != nil {
			// Out of float64 range: keep the digits rather than lose them.
			return string(x)
		}
		if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
			return int(f) // written as 1.0 or 1e3 by another encoder
		}
		return f
	case map[string]any:
		return normalizeMap(x)
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	}
	return v
}
