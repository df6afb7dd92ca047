package expr

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
)

// isPlain reports whether code is a plain member chain such as
// `fetch.body.items`: its value is read from the scope, which holds data
// recorded as JSON, so it needs no check for NaN and infinities.
func isPlain(code string) bool {
	_, ok := simplePath(code)
	return ok
}

// nonFinite looks for NaN or an infinity in v and the lists and maps it
// holds. It reports where (a path such as "[2].score", "" for v itself) and
// the number found.
func nonFinite(v any, depth int) (string, float64, bool) {
	if depth > maxDepth {
		return "", 0, false
	}
	switch v := v.(type) {
	case nil, string, bool, int, int64:
		return "", 0, false
	case float64:
		return "", v, math.IsNaN(v) || math.IsInf(v, 0)
	case float32:
		f := float64(v)
		return "", f, math.IsNaN(f) || math.IsInf(f, 0)
	case []any:
		for i, x := range v {
			if where, f, ok := nonFinite(x, depth+1); ok {
				return "[" + strconv.Itoa(i) + "]" + where, f, true
			}
		}
		return "", 0, false
	case map[string]any:
		for k, x := range v {
			if where, f, ok := nonFinite(x, depth+1); ok {
				return "." + k + where, f, true
			}
		}
		return "", 0, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if k := rv.Type().Elem().Kind(); k != reflect.Float32 && k != reflect.Float64 && k != reflect.Interface {
			return "", 0, false // []int, []string, []byte: nothing to find
		}
		for i := range rv.Len() {
			if where, f, ok := nonFinite(valueOf(rv.Index(i)), depth+1); ok {
				return "[" + strconv.Itoa(i) + "]" + where, f, true
			}
		}
	case reflect.Map:
		for it := rv.MapRange(); it.Next(); {
			if where, f, ok := nonFinite(valueOf(it.Value()), depth+1); ok {
				return "." + fmt.Sprint(valueOf(it.Key())) + where, f, true
			}
		}
	}
	return "", 0, false
}

func notFiniteMsg(where string, f float64) string {
	what := "the value is " + formatFloat(f, 64)
	if where != "" {
		what = "the value holds " + formatFloat(f, 64) + " at " + where
	}
	return what + ", which is not a number a run can record (a division by zero?); guard it, e.g. `b == 0 ? 0 : a / b`"
}

// codeStart is the offset of the first character of code that is not a
// space, where errors about the whole expression point.
func codeStart(code string) int {
	for i := 0; i < len(code); i++ {
		switch code[i] {
		case ' ', '\t', '\n', '\r':
		default:
			return i
		}
	}
	return 0
}
