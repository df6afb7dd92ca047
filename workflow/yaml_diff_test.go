package workflow

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The differential fuzzer checks the YAML decoder (parseYAML: yaml/v3's
// Node tree walked into values) against a second, independent decoding of
// the same bytes, yaml/v3's Unmarshal into plain Go values, which resolves
// scalars, aliases and merge keys with its own code. Where both accept a
// file they must agree on every value; and every position the decoder
// reports must point at the text it came from.

var yamlSnippets = []string{
	"a: 1\n",
	"a: 1",
	"---\na: b\n",
	"--- \na: b\n",
	"a: b\n---\nc: d\n",
	"a: b\n...\n",
	"# c\n\na: b # c\nb: 'x' # c\nc: \"y\"#c\n",
	"a:\n  b:\n    c: d\n  e: f\ng: h\n",
	"a:\n- 1\n- 2\nb: 3\n",
	"a:\n  - 1\n  -  2\n  - - x\n    - y\n  - k: v\n    l: w\n  -   m: n\n      o: p\n",
	"- a\n- b\n",
	"- a: 1\n  b: 2\n- c\n",
	"-\n  a: 1\n- b\n",
	"- \n- b\n",
	"a:\nb: ~\nc: null\nd: Null\ne: NULL\nf: \n",
	"a: true\nb: True\nc: TRUE\nd: false\ne: yes\nf: no\ng: on\nh: off\ni: y\nj: tRue\n",
	"a: 1\nb: -1\nc: +1\nd: 01\ne: 0x1F\nf: 0o17\ng: 0b101\nh: 1_000\ni: _1\nj: 08\nk: 1e3\nl: 1.5e3\nm: 1.\nn: .5\no: -.5\np: 1.2.3\nq: 9223372036854775807\nr: 9223372036854775808\ns: 18446744073709551616\nt: -9223372036854775809\nu: 0x\nv: -0\nw: 0.0\nx: -0.0\ny: 1_0.5\nz: 5s\n",
	"a: .inf\nb: -.inf\nc: .Inf\nd: +.inf\ne: .nan\nf: .NaN\ng: .NAN\nh: .nAn\n",
	"a: [1, b, \"c\", 'd', [e, f], {g: h}]\nb: {x: 1, y: [2, 3], z: {}}\nc: []\nd: {}\n",
	"a: [1, 2\n  , 3]\n",
	"a: {b: 1,\n  c: 2}\n",
	"a: [a, b,]\n",
	"a: [a: b]\n",
	"a: {b}\n",
	"a: {b: }\n",
	"a: {\"b\": 1, 'c': 2}\n",
	"a: {b:1}\n",
	"{a: 1, b: [x, y]}\n",
	"[1, 2]\n",
	"a: \"x\\ny\\t\\\\\\\"\\/\\u00e9\"\nb: 'it''s'\nc: \"\\x41\"\nd: \"\\u0041\"\n",
	"a: \"unterminated\n  more\"\n",
	"a: plain\n  continued\n",
	"a: |\n  line1\n  line2\nb: x\n",
	"a: |-\n  line1\n\n  line2\n\n\nb: x\n",
	"a: |+\n  line1\n\n\nb: x\n",
	"a: |\n    deeper\n  less\n",
	"a: |\n  x\n    indented\n  # not a comment\n",
	"a: |2\n   x\n",
	"a: >\n  folded\n  text\n",
	"a: >-\n  folded\n",
	"- |\n  x\n- y\n",
	"a: |\n  x",
	"a: |\n\n  x\n",
	"a: |\n     \n  x\n",
	"a: &x 1\nb: *x\n",
	"a: !!str 1\n",
	"<<: {a: 1}\n",
	"? a\n: b\n",
	"%YAML 1.2\n---\na: b\n",
	"a: 1\na: 2\n",
	"1: a\n01: b\n",
	"a: 1\n\tb: 2\n",
	"a:\tb\n",
	"\"a b\": 1\n'c': 2\n\"d\":3\n",
	"a: b: c\n",
	"a: - b\n",
	"a: b #c\n",
	"a: b#c\n",
	"a: http://x.y/z?q=1#f\n",
	"a: foo:bar\n",
	"a: x, y\n",
	"a: x]y\n",
	"a: x{y\n",
	"a: ü\nüb: c\nc: [ä, ö]\n",
	"a: 'ü' # ü\n",
	"\"ü\": {ä: ö}\n",
	"a: b\n  c: d\n",
	"a:\n    b: 1\n  c: 2\n",
	"- a\n  - b\n",
	"a: 1\n- b\n",
	"key:    value   \n",
	"a:\n  - b\n  c: d\n",
	"a: -x\nb: -\n",
	"a: ---\n",
	"true: 1\nnull: 2\n",
	"1.0: a\n0x10: b\n",
	"~: a\n",
	"a: ''\nb: \"\"\n",
	"a: '#'\n",
	"a: 'x' y\n",
	"a: \"{{ x.y }}\"\nb: \"{{ x }} and 'y'\"\n",
	"a: x  # c\n",
	"a:   # c\n  b: 1\n",
	"a: # c\nb: 1\n",
	"\n\n\na: 1\n\n\n",
	"# only a comment\n",
	"",
	"a: 2001-12-14\nb: 12:30\nc: 1:2\n",
	"- [a, b]\n- {c: d}\n",
	"a: [\"x, y\", 'z]']\n",
	"a: [-1, -x, - y]\n",
	"a: [.5, +1, ~, null, true]\n",
	"a: {1: x, true: y}\n",
	"a: |\n  x\n\n",
	"a: |+\n  x\n\n",
	"a: |+\n  x\n\nb: 1\n",
	"a: |-\n  x\n",
	"a: |\n  x\n b: 1\n",
	"-  - a\n   - b\n-  c\n",
	"- - - a\n",
	"a:\n- b: 1\n  c:\n  - d\n",
	"a: \"x\\ny\\t\\\\\\\"\\/\\u00e9\"\nb: 'it''s'\nc: \"\\u0041\"\n",
	"# c\n\na: b # c\nb: 'x' # c\n",
	"a: >\n  one\n  two\n\n  three\n\n\n  four\nb: >+\n  x\n\nc: 1\n",
	"nodes:\n  - id: a\n    with:\n      cmd: |\n        echo hi\n        # not a comment\n\n        exit 0\n    next: b\n",
	"a: 'x'  \nb: [1]  \nc: {d: e}  # c\n",
	"a: [ 1 ,2 , \"x\" ]\n",
	"a: [[], {}, [[a]]]\n",
	"k: 'ü''x' \n",
	"- a: 1\n  b:\n    - c\n  d: e\n- f\n",
	// Lists a big file's parse cuts into pieces (checkPieces).
	"a:\n  - 1\n  # c\n  - 2\nb:\n  - x\n  -\n    y: 1\nc: d\n",
	"a:\n  - |\n    x\n    - y\n  - z\n",
	"a:\n  - \"x\n  - y\"\n  - z\n",
	"a:\n  - [x,\n  - y]\n",
	"a:\n  - &x 1\n  - *x\n",
	"x: &x 1\na:\n  - *x\n  - 2\n",
	"a:\n  - 1\n  - 2\ny: *x\n",
	"a:\n  -\n  - b\n#c\n  - c\n",
	"a:   # c\n  - 1\n  - 2\n",
	"a:\n  - 1\n  - 2\n...\n",
	"a:\n  - 1\n  - 2\na:\n  - 3\n",
	"<<: {a: 1}\na:\n  - 1\n  - 2\n",
	"a:\n  - b: |\n      x\n\n  - c\nd:\n    - e\n    - f\n",
	"{\na:\n  - 1\n  - 2\n}\n",
}

func yamlSeeds(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{}
	for _, pat := range []string{"../examples/*.yaml", "testdata/invalid/*.yaml", "testdata/warnings/*.yaml"} {
		files, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			seeds[f] = b
		}
	}
	for i, s := range yamlSnippets {
		seeds[fmt.Sprintf("snippet%d", i)] = []byte(s)
	}
	seeds["bom"] = []byte("\ufeffa: 1\nb: [x, 'y']\n")
	seeds["crlf"] = []byte("a: 1\r\nb:\r\n  - \"x\"\r\n  - |\r\n    y\r\n")
	seeds["big"] = bigYAML(30)
	return seeds
}

// anyTime stands for a timestamp yaml/v3 resolved; the decoder keeps its
// text, which the time value cannot give back.
type anyTime struct{}

// normal puts a decoded value in one form for comparison: integers as
// int64 (float64 when too big), maps as map[string]any keyed by the text
// of the key.
func normal(v any) any {
	switch v := v.(type) {
	case int:
		return int64(v)
	case uint64:
		if v > math.MaxInt64 {
			return float64(v)
		}
		return int64(v)
	case time.Time:
		return anyTime{}
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normal(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = normal(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[keyText(k)] = normal(e)
		}
		return out
	}
	return v
}

// hasTimeKey reports whether a map in v has a timestamp for a key.
func hasTimeKey(v any) bool {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			if hasTimeKey(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range v {
			if hasTimeKey(e) {
				return true
			}
		}
	case map[any]any:
		for k, e := range v {
			if _, ok := k.(time.Time); ok || hasTimeKey(e) {
				return true
			}
		}
	}
	return false
}

func keyText(k any) string {
	switch k := k.(type) {
	case nil:
		return "null"
	case string:
		return k
	case bool:
		return strconv.FormatBool(k)
	case float64:
		return strconv.FormatFloat(k, 'g', -1, 64)
	}
	return fmt.Sprint(normal(k))
}

// sameValue describes the first difference between a (the decoder's) and
// b (yaml/v3 Unmarshal's), or "".
func sameValue(path string, a, b any) string {
	if _, ok := b.(anyTime); ok {
		if _, isString := a.(string); isString {
			return ""
		}
	}
	switch av := a.(type) {
	case float64:
		bv, ok := b.(float64)
		if ok && (av == bv || math.IsNaN(av) && math.IsNaN(bv)) {
			return ""
		}
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			break
		}
		for i := range av {
			if d := sameValue(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i]); d != "" {
				return d
			}
		}
		return ""
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			break
		}
		for k, e := range av {
			be, ok := bv[k]
			if !ok {
				return fmt.Sprintf("%s: key %q missing from yaml/v3's", path, k)
			}
			if d := sameValue(path+"."+k, e, be); d != "" {
				return d
			}
		}
		return ""
	default:
		if a == b {
			return ""
		}
	}
	return fmt.Sprintf("%s: %#v (decoder) vs %#v (yaml/v3 Unmarshal)", path, a, b)
}

// checkPositions fails when a position does not point at its text: every
// string whose style says it maps onto the source must be found there, and
// every key must start where its position says.
func checkPositions(t *testing.T, src []byte, v *value) {
	t.Helper()
	c := &yamlConv{src: src}
	var walk func(path string, v *value)
	walk = func(path string, v *value) {
		if v.pos.Line < 1 || v.pos.Col < 1 {
			t.Fatalf("%s: no position (%v)\n%s", path, v.pos, src)
		}
		if v.kind == vString && v.style != 0 {
			off, ok := c.offset(v.pos.Line, v.pos.Col)
			if v.style != 'p' {
				off++
			}
			if !ok || !bytes.HasPrefix(src[off:], []byte(v.s)) {
				t.Fatalf("%s: %q is not at %v\n%s", path, v.s, v.pos, src)
			}
		}
		for i, e := range v.list {
			walk(fmt.Sprintf("%s[%d]", path, i), e)
		}
		for _, e := range v.keys {
			off, ok := c.offset(e.keyPos.Line, e.keyPos.Col)
			if !ok {
				t.Fatalf("%s: key %q has position %v outside the file\n%s", path, e.key, e.keyPos, src)
			}
			// A plain key may run over several lines, folded into spaces
			// (or newlines, where a blank line was): compare its first
			// word.
			word := e.key
			if i := strings.IndexAny(word, " \n"); i >= 0 {
				word = word[:i]
			}
			if rest := src[off:]; keyChecked(word, rest) && !strings.EqualFold(string(rest[:min(len(rest), len(word))]), word) {
				t.Fatalf("%s: key %q is not at %v\n%s", path, e.key, e.keyPos, src)
			}
			walk(path+"."+e.key, e.val)
		}
	}
	walk("$", v)
}

// keyChecked tells whether a key's text can be compared with its source:
// a plain key that starts with a letter (True is the key "true"; numbers,
// "~" and quoted, tagged, anchored or explicit keys are spelled otherwise).
func keyChecked(key string, rest []byte) bool {
	if key == "null" || len(rest) == 0 || len(key) == 0 {
		return false
	}
	c := key[0]
	return (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') && !strings.ContainsRune("\"'?*&!|>", rune(rest[0]))
}

// checkYAML decodes src both ways and fails on a disagreement. It reports
// whether the decoder accepted src.
func checkYAML(t *testing.T, src []byte) bool {
	t.Helper()
	v, perr := parseYAML(src)
	if perr != nil {
		if perr.pos.Line < 1 || perr.msg == "" {
			t.Fatalf("error without a position or a message: %+v\n%s", perr, src)
		}
		return false
	}
	checkPositions(t, src, v)
	checkPieces(t, src)
	if bytes.Contains(src, []byte("!!binary")) {
		return true // yaml/v3 decodes base64; the decoder keeps the text
	}
	var other any
	if err := yaml.Unmarshal(src, &other); err != nil {
		// The decoder accepted what the library's own decoder refuses; only
		// its alias ratio limit is stricter than MaxAliasValues.
		if !strings.Contains(err.Error(), "excessive aliasing") {
			t.Fatalf("the decoder accepted what yaml/v3 Unmarshal refuses (%v):\n%s", err, src)
		}
		return true
	}
	if hasTimeKey(other) {
		return true // the key's text cannot be had back from the time
	}
	if d := sameValue("$", normal(v.plain()), normal(other)); d != "" {
		t.Fatalf("%s\n%s", d, src)
	}
	return true
}

// tinyPieces cuts any file, each list in pieces of an item or two.
var tinyPieces = splitting{min: 0, piece: 1, most: 64}

// checkPieces fails unless src parsed in pieces gives what the whole
// parse gives, or the pieces decline. src passed preScan.
func checkPieces(t *testing.T, src []byte) {
	t.Helper()
	for _, s := range []splitting{tinyPieces, {min: 0, piece: 1, most: 2}} {
		got, ok := parseInPieces(src, s)
		if !ok {
			continue
		}
		want, perr := parseWhole(src)
		if perr != nil {
			t.Fatalf("the pieces accepted what the whole parse refuses (%s at %v):\n%s", perr.msg, perr.pos, src)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("the pieces disagree with the whole parse:\n%s\npieces: %#v\nwhole:  %#v", src, got.plain(), want.plain())
		}
	}
}

func TestYAMLDifferentialSeeds(t *testing.T) {
	t.Parallel()
	for name, src := range yamlSeeds(t) {
		t.Run(name, func(t *testing.T) {
			ok := checkYAML(t, src)
			if !ok && strings.HasPrefix(name, "../examples/") {
				t.Errorf("%s does not decode", name)
			}
		})
	}
}

func FuzzYAMLDifferential(f *testing.F) {
	for _, src := range yamlSeeds(f) {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<16 {
			return
		}
		checkYAML(t, src)
	})
}
