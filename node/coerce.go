package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Coerce converts a parameter's value, rendered or written, to the
// parameter's declared type. It is the one conversion table of Skein:
// validation applies it to values written in the workflow and the engine to
// every rendered value, so what validate accepts a kind gets at run time,
// in the type its spec declares.
//
//	type      string            number            boolean         object / list
//	string    as is             its text (3, 2.5) true / false    compact JSON
//	integer   parsed ("42")     whole numbers     error           error
//	number    parsed ("2.5")    as is             error           error
//	boolean   "true" / "false"  error             as is           error
//	duration  "1m30s", "2d"     seconds           error           error
//	strings   a one-item list   a one-item list   a one-item list each item as string; object: error
//	list      error             error             error           list: as is; object: error
//	map       error             error             error           object: as is; list: error
//	any       as is             as is             as is           as is
//
// null is no value: Coerce returns nil and no error, and the parameter's
// default applies (a required parameter without one is an error for the
// caller to report). Numbers must be finite; an integer parameter with Max
// set must lie in [Min, Max]; a string parameter with an Enum must be one of
// its values. Strings parsed as numbers or booleans may have surrounding
// spaces. Durations are read by ParseDuration.
func (p Param) Coerce(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch p.Type {
	case String:
		s, err := Text(v)
		if err != nil {
			return nil, err
		}
		if len(p.Enum) > 0 && !containsString(p.Enum, s) {
			return nil, fmt.Errorf("must be one of %s, not %q", strings.Join(p.Enum, ", "), s)
		}
		return s, nil
	case Int:
		n, err := toInt(v)
		if err != nil {
			return nil, err
		}
		if p.Max != 0 && (n < p.Min || n > p.Max) {
			return nil, fmt.Errorf("must be between %s and %s, not %d", groupDigits(p.Min), groupDigits(p.Max), n)
		}
		return n, nil
	case Number:
		return toNumber(v)
	case Bool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true":
				return true, nil
			case "false":
				return false, nil
			}
			return nil, fmt.Errorf("must be true or false, not %q", clip(x))
		}
		return nil, mustBe("true or false", v)
	case Duration:
		switch x := v.(type) {
		case string:
			if _, err := ParseDuration(x); err != nil {
				return nil, err
			}
			return x, nil
		case time.Duration:
			if x < 0 {
				return nil, fmt.Errorf("%s is negative; durations are 0 or more", x)
			}
			return x.String(), nil
		case bool:
			return nil, mustBe("a duration such as 30s", v)
		}
		if f, ok := numeric(v); ok {
			if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > maxDurationSeconds {
				return nil, fmt.Errorf("%s is not a duration: give 0 or more seconds, or a text such as 30s", formatNumber(v))
			}
			return plainNumber(v), nil
		}
		return nil, mustBe("a duration such as 30s", v)
	case Strings:
		if _, ok := v.(string); ok {
			return []any{v}, nil
		}
		if _, ok := numeric(v); ok {
			s, err := Text(v)
			return []any{s}, err
		}
		if b, ok := v.(bool); ok {
			return []any{strconv.FormatBool(b)}, nil
		}
		list, ok := asList(v)
		if !ok {
			return nil, mustBe("a list of strings", v)
		}
		out := make([]any, len(list))
		for i, e := range list {
			if e == nil {
				return nil, fmt.Errorf("item %d is null; every item must be a string", i)
			}
			s, err := Text(e)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			out[i] = s
		}
		return out, nil
	case List:
		list, ok := asList(v)
		if !ok {
			return nil, mustBe("a list", v)
		}
		return list, nil
	case Map:
		m, ok := asMap(v)
		if !ok {
			return nil, mustBe("a map", v)
		}
		return m, nil
	}
	return v, nil
}

// maxDurationSeconds is the longest duration a number of seconds may give.
const maxDurationSeconds = float64(math.MaxInt64 / int64(time.Second))

// maxDays is the most whole days a duration holds (about 292 years).
const maxDays = math.MaxInt64 / int64(24*time.Hour)

// zeroNumbers is s with each run of digits made one 0.
func zeroNumbers(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			b.WriteByte(c)
		} else if i == 0 || s[i-1] < '0' || s[i-1] > '9' {
			b.WriteByte('0')
		}
	}
	return b.String()
}

// ParseDuration reads a duration: a Go duration such as "500ms", "1m30s"
// or "2h", a number of whole days such as "2d", or a bare number of
// seconds ("90", "1.5"). Negative durations are refused. It is the one
// duration parser of Skein, used by validation and kinds alike.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if n, err := strconv.ParseFloat(t, 64); err == nil && !strings.ContainsAny(t, "xXpPnN_") {
		if n < 0 {
			return 0, fmt.Errorf("%q is negative; durations are 0 or more", s)
		}
		if n > maxDurationSeconds {
			return 0, fmt.Errorf("%q is too long a duration", s)
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	if d, ok := strings.CutSuffix(t, "d"); ok {
		if n, err := strconv.ParseInt(d, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			switch {
			case strings.HasPrefix(d, "-"):
				return 0, fmt.Errorf("%q is negative; durations are 0 or more", s)
			case err != nil || n > maxDays:
				return 0, fmt.Errorf("%q is too long a duration (at most %dd)", clip(s), maxDays)
			}
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	dur, err := time.ParseDuration(t)
	if err != nil {
		// Written right but past what a duration holds: each number
		// made 0, it reads.
		if _, zerr := time.ParseDuration(zeroNumbers(t)); zerr == nil && !strings.HasPrefix(t, "-") {
			return 0, fmt.Errorf("%q is too long a duration (at most %dd)", clip(s), maxDays)
		}
		return 0, fmt.Errorf("%q is not a duration (write e.g. 500ms, 30s, 5m, 1h30m or 2d)", clip(s))
	}
	if dur < 0 {
		return 0, fmt.Errorf("%q is negative; durations are 0 or more", s)
	}
	return dur, nil
}

// DurationOf reads a coerced duration parameter's value: a text ParseDuration
// reads, or a number of seconds.
func DurationOf(v any) (time.Duration, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case string:
		return ParseDuration(x)
	case time.Duration:
		return x, nil
	}
	if f, ok := numeric(v); ok && f >= 0 && f <= maxDurationSeconds {
		return time.Duration(f * float64(time.Second)), nil
	}
	return 0, mustBe("a duration such as 30s", v)
}

// Text is a value as text: a string as it is, a number in its shortest form
// (3, 2.5, 1e+21), a boolean as true or false, a time in RFC 3339, a
// duration as 1m30s, and anything else as compact JSON. It is how a value
// reads where a string is wanted.
func Text(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	case json.Number:
		return x.String(), nil
	case time.Time:
		return x.Format(time.RFC3339Nano), nil
	case time.Duration:
		return x.String(), nil
	}
	if f, ok := numeric(v); ok {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "", fmt.Errorf("%v is not a finite number", f)
		}
		return formatNumber(v), nil
	}
	return CompactJSON(v)
}

// CompactJSON encodes v as JSON on one line, without escaping <, > and &.
// Maps whose keys are not strings get their keys as text.
func CompactJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		buf.Reset()
		if err2 := enc.Encode(textKeys(v, 0)); err2 != nil {
			return "", fmt.Errorf("cannot be written as text: %w", err)
		}
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// FormatFloat writes f in its shortest form: 3 rather than 3.0, and an
// exponent only for very large or very small numbers, as JSON does.
func FormatFloat(f float64, bits int) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, bits)
	}
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return strconv.FormatFloat(f, 'g', -1, bits)
	}
	return strconv.FormatFloat(f, 'f', -1, bits)
}

func formatNumber(v any) string {
	switch x := v.(type) {
	case int:
		return strconv.Itoa(x)
	case float64:
		return FormatFloat(x, 64)
	case float32:
		return FormatFloat(float64(x), 32)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(rv.Uint(), 10)
	}
	return fmt.Sprint(v)
}

// numeric reports whether v is a Go number, and its value as a float64.
func numeric(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case float64:
		return x, true
	case bool, string, nil:
		return 0, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if _, isDur := v.(time.Duration); isDur {
			return 0, false
		}
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	}
	return 0, false
}

// plainNumber returns a number as an int when it is a whole number that
// fits, else as a float64.
func plainNumber(v any) any {
	switch x := v.(type) {
	case int, float64:
		return x
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if u := rv.Uint(); u <= math.MaxInt {
			return int(u)
		}
		return float64(rv.Uint())
	}
	f, _ := numeric(v)
	return f
}

func toInt(v any) (int, error) {
	if s, ok := v.(string); ok {
		t := strings.TrimSpace(s)
		n, err := strconv.ParseInt(t, 10, 0)
		if err == nil {
			return int(n), nil
		}
		if f, ferr := strconv.ParseFloat(t, 64); ferr == nil && !strings.ContainsAny(t, "xXpPnN_") && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int(f), nil
		}
		return 0, fmt.Errorf("must be a whole number, not %q", clip(s))
	}
	if _, isDur := v.(time.Duration); !isDur {
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return int(rv.Int()), nil
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			if u := rv.Uint(); u <= math.MaxInt {
				return int(u), nil
			}
			return 0, fmt.Errorf("%d is too large a whole number", rv.Uint())
		}
	}
	if f, ok := numeric(v); ok {
		if f != math.Trunc(f) || math.IsInf(f, 0) || math.IsNaN(f) {
			return 0, fmt.Errorf("must be a whole number, not %s", formatNumber(v))
		}
		if f >= math.MaxInt64 || f < math.MinInt64 {
			return 0, fmt.Errorf("%s is too large a whole number", formatNumber(v))
		}
		return int(f), nil
	}
	return 0, mustBe("a whole number", v)
}

func toNumber(v any) (any, error) {
	if s, ok := v.(string); ok {
		t := strings.TrimSpace(s)
		if n, err := strconv.ParseInt(t, 10, 0); err == nil {
			return int(n), nil
		}
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || strings.ContainsAny(t, "xXpPnN_") || math.IsInf(f, 0) {
			return nil, fmt.Errorf("must be a number, not %q", clip(s))
		}
		return f, nil
	}
	if _, isDur := v.(time.Duration); isDur {
		return nil, mustBe("a number", v)
	}
	f, ok := numeric(v)
	if !ok {
		return nil, mustBe("a number", v)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("must be a finite number, not %v", f)
	}
	return plainNumber(v), nil
}

// asList returns v as a []any when it is a list of any element type.
func asList(v any) ([]any, bool) {
	if l, ok := v.([]any); ok {
		return l, true
	}
	if _, isBytes := v.([]byte); isBytes {
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// asMap returns v as a map[string]any when it is a map of any key type
// (keys that are not strings become their text).
func asMap(v any) (map[string]any, bool) {
	if m, ok := v.(map[string]any); ok {
		return m, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map {
		return nil, false
	}
	out := make(map[string]any, rv.Len())
	for it := rv.MapRange(); it.Next(); {
		k, _ := Text(it.Key().Interface())
		out[k] = it.Value().Interface()
	}
	return out, true
}

// textKeys copies the maps in v whose keys are not strings into
// map[string]any, at any depth up to 1000.
func textKeys(v any, depth int) any {
	if depth > 1000 {
		return nil
	}
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = textKeys(e, depth+1)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = textKeys(e, depth+1)
		}
		return out
	}
	if m, ok := asMap(v); ok {
		return textKeys(m, depth+1)
	}
	return v
}

// mustBe is the error of a value of the wrong JSON type.
func mustBe(want string, v any) error {
	return fmt.Errorf("must be %s, not %s", want, Describe(v))
}

// Describe names a value's JSON type for messages, with the value when it
// is short: `the number 3`, `the string "x"`, `a list of 2 items`.
func Describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", clip(x))
	case bool:
		return fmt.Sprintf("the boolean %t", x)
	case time.Duration:
		return "the duration " + x.String()
	}
	if _, ok := numeric(v); ok {
		return "the number " + formatNumber(v)
	}
	if l, ok := asList(v); ok {
		if len(l) == 1 {
			return "a list of 1 item"
		}
		return fmt.Sprintf("a list of %d items", len(l))
	}
	if m, ok := asMap(v); ok {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) > 4 {
			keys = append(keys[:4], "…")
		}
		return "an object {" + strings.Join(keys, ", ") + "}"
	}
	return fmt.Sprintf("a %T", v)
}

// clip shortens a string quoted in a message.
func clip(s string) string {
	if len(s) <= 60 {
		return s
	}
	return s[:57] + "..."
}

func containsString(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// groupDigits writes n with thousands separators: 1,000,000.
func groupDigits(n int) string {
	if n < 0 {
		return "-" + groupDigits(-n)
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// YAML11Bool returns what the word s meant to older YAML, which read yes,
// no, on, off, y and n (in any case) as true or false: "true" or "false".
// A workflow's YAML reads them as text; errors about them say so.
func YAML11Bool(s string) (string, bool) {
	switch strings.ToLower(s) {
	case "yes", "on", "y":
		return "true", true
	case "no", "off", "n":
		return "false", true
	}
	return "", false
}
