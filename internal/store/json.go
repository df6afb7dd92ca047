package store

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/plainjson"
	"github.com/skeinhq/skein/node"
)

// The helpers below give every implementation the same JSON encoding of
// maps and node errors, so that values round-trip alike in each of them.

// EncodeMap returns m as JSON, or nil (a NULL column) when m is nil.
// Strings that are not valid UTF-8 (a command's raw bytes) are kept
// losslessly: JSON would turn their bad bytes into U+FFFD, so such a string
// is written as {"$skein.bytes": "<base64>"}, which DecodeMap turns back
// into the same string. That one-key object is reserved.
func EncodeMap(m map[string]any) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	// Room for a typical record's map (a node's output, an event's
	// data), which so grows its buffer once instead of from nothing.
	if b, ok := plainjson.AppendMap(make([]byte, 0, encodeRoom), m, false); ok {
		return b, nil // plain: no bad bytes to protect
	}
	b, err := encode(m)
	// encoding/json writes a bad byte as the escape \ufffd (a real U+FFFD
	// as its own bytes): only JSON holding that text can hold a string
	// protect would change, so only such JSON pays for the walk.
	if err != nil || !bytes.Contains(b, badByte) {
		return b, err
	}
	if v, changed := protect(m); changed {
		return encode(v)
	}
	return b, nil
}

// encodeRoom is the room EncodeMap makes for a map's JSON before it
// writes it.
const encodeRoom = 64

// badByte is what encoding/json writes for a byte that is not UTF-8.
var badByte = []byte(`\ufffd`)

// BytesKey marks a string that is not valid UTF-8, kept as base64.
const BytesKey = "$skein.bytes"

// protect returns v with every string that is not valid UTF-8 replaced by
// its {BytesKey: base64} form; it copies only what it changes.
func protect(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if utf8.ValidString(x) {
			return x, false
		}
		return map[string]any{BytesKey: base64.StdEncoding.EncodeToString([]byte(x))}, true
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			if p, changed := protect(e); changed {
				if out == nil {
					out = make(map[string]any, len(x))
					for k2, e2 := range x {
						out[k2] = e2
					}
				}
				out[k] = p
			}
		}
		if out == nil {
			return x, false
		}
		return out, true
	case []any:
		var out []any
		for i, e := range x {
			if p, changed := protect(e); changed {
				if out == nil {
					out = append([]any(nil), x...)
				}
				out[i] = p
			}
		}
		if out == nil {
			return x, false
		}
		return out, true
	}
	return v, false
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
	e := encoders.Get().(*encoder)
	defer func() {
		if e.buf.Cap() <= maxPooledBuffer {
			e.buf.Reset()
			encoders.Put(e)
		}
	}()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	// A copy of its own: the buffer goes back to the pool.
	return bytes.Clone(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))), nil
}

// encoder is a JSON encoder with its buffer, kept in encoders between
// uses: a record's documents are encoded without growing a buffer each.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// maxPooledBuffer is the largest buffer given back to the pool: the
// rare big document does not stay in memory after it.
const maxPooledBuffer = 64 << 10

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// DecodeMap decodes what EncodeMap wrote; nil or empty data gives a nil
// map. Whole numbers that fit in an int become int (those written with a
// fraction or exponent only up to 2^53), others float64.
func DecodeMap(data []byte) (map[string]any, error) {
	if len(data) == 0 {
		return nil, nil
	}
	m, ok := decodePlainObject(data)
	if !ok {
		if err := decode(data, &m); err != nil {
			return nil, err
		}
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
		if b, ok := x[BytesKey].(string); ok && len(x) == 1 {
			if raw, err := base64.StdEncoding.DecodeString(b); err == nil {
				return string(raw)
			}
		}
		if _, ok := x[blob.Key]; ok && len(x) == 1 {
			if b, ok := blob.FromRef(normalizeMap(x)); ok {
				return b // a big value, kept in a file of the run folder
			}
		}
		return normalizeMap(x)
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	}
	return v
}
