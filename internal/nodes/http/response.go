package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	nethttp "net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// readBody reads at most limit bytes of r. truncated reports that there was
// more.
func readBody(r io.Reader, limit int64) (body []byte, truncated bool, err error) {
	body, err = io.ReadAll(io.LimitReader(r, limit+1))
	if int64(len(body)) > limit {
		return body[:limit], true, err
	}
	return body, false, err
}

// decodeBody returns the parsed JSON value of a JSON body, else its text.
// A body counts as JSON when its Content-Type says so, or when it holds an
// object or an array whatever the Content-Type says. A cut body is text.
func decodeBody(h nethttp.Header, body []byte, truncated bool) any {
	if truncated {
		return string(trimPartialRune(body))
	}
	if isJSONType(h.Get("Content-Type")) || looksLikeJSON(body) {
		if v, err := decodeJSON(body); err == nil {
			return v
		}
	}
	return string(body)
}

func isJSONType(ctype string) bool {
	mt, _, err := mime.ParseMediaType(ctype)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

func looksLikeJSON(body []byte) bool {
	b := bytes.TrimSpace(body)
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

// decodeJSON parses one JSON value. Whole numbers that fit an int become
// ints, so large ids keep every digit; other numbers become float64.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}
	return numbers(v), nil
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(x.String(), 10, 0); err == nil {
			return int(i)
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}

// firstValues maps each header's lower-case name to its first value.
func firstValues(h nethttp.Header) map[string]any {
	out := make(map[string]any, len(h))
	for k, vs := range h {
		if len(vs) > 0 {
			out[strings.ToLower(k)] = vs[0]
		}
	}
	return out
}

// trimPartialRune drops an incomplete UTF-8 sequence left at the end of b
// by a cut.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if r, size := utf8.DecodeRune(b[len(b)-i:]); r == utf8.RuneError && size <= 1 {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}
