package workflow

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bigYAML generates the n-node workflow of the YAML benchmarks: a chain of
// shell, template and set nodes, each reading the one before it.
func bigYAML(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nname: big\nnodes:\n  - id: n0\n    type: trigger.manual\n")
	for i := 1; i < n; i++ {
		id, prev := fmt.Sprintf("n%d", i), fmt.Sprintf("n%d", i-1)
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "  - id: %s\n    type: shell\n    command: [echo, \"{{ %s.success }}\"]\n    timeout: 5s\n", id, prev)
		case 1:
			fmt.Fprintf(&b, "  - id: %s\n    type: template\n    text: \"step %s after {{ %s.success }}\"\n", id, id, prev)
		case 2:
			fmt.Fprintf(&b, "  - id: %s\n    type: set\n    values:\n      v: \"{{ %s.text }}\"\n      n: %d\n", id, prev, i)
		}
	}
	b.WriteString("edges:\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  - {from: n%d, to: n%d}\n", i-1, i)
	}
	return []byte(b.String())
}

var fastSnippets = []string{
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
}

func fastSeeds(t testing.TB) map[string][]byte {
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
	for i, s := range fastSnippets {
		seeds[fmt.Sprintf("snippet%d", i)] = []byte(s)
	}
	return seeds
}

// diffValues describes the first difference between two trees, or "".
func diffValues(path string, a, b *value) string {
	if a == nil || b == nil {
		if a != b {
			return path + ": one is nil"
		}
		return ""
	}
	if a.kind != b.kind {
		return fmt.Sprintf("%s: kind %v vs %v", path, a.kind, b.kind)
	}
	if a.pos != b.pos {
		return fmt.Sprintf("%s: pos %v vs %v", path, a.pos, b.pos)
	}
	switch a.kind {
	case vBool:
		if a.b != b.b {
			return fmt.Sprintf("%s: bool %v vs %v", path, a.b, b.b)
		}
	case vInt:
		if a.i != b.i {
			return fmt.Sprintf("%s: int %v vs %v", path, a.i, b.i)
		}
	case vFloat:
		if !(math.IsNaN(a.f) && math.IsNaN(b.f)) && math.Float64bits(a.f) != math.Float64bits(b.f) {
			return fmt.Sprintf("%s: float %v vs %v", path, a.f, b.f)
		}
	case vString:
		if a.s != b.s {
			return fmt.Sprintf("%s: string %q vs %q", path, a.s, b.s)
		}
		if a.style != b.style {
			return fmt.Sprintf("%s: style %q vs %q", path, a.style, b.style)
		}
	case vList:
		if len(a.list) != len(b.list) {
			return fmt.Sprintf("%s: list len %d vs %d", path, len(a.list), len(b.list))
		}
		for i := range a.list {
			if d := diffValues(fmt.Sprintf("%s[%d]", path, i), a.list[i], b.list[i]); d != "" {
				return d
			}
		}
	case vMap:
		if len(a.keys) != len(b.keys) {
			return fmt.Sprintf("%s: map len %d vs %d", path, len(a.keys), len(b.keys))
		}
		for i := range a.keys {
			ka, kb := a.keys[i], b.keys[i]
			if ka.key != kb.key || ka.keyPos != kb.keyPos {
				return fmt.Sprintf("%s: key %q@%v vs %q@%v", path, ka.key, ka.keyPos, kb.key, kb.keyPos)
			}
			if d := diffValues(path+"."+ka.key, ka.val, kb.val); d != "" {
				return d
			}
		}
	}
	return ""
}

// checkFast fails when the fast path accepts src but disagrees with go-yaml.
func checkFast(t *testing.T, src []byte) bool {
	t.Helper()
	if checkNesting(src) != nil {
		return false
	}
	fv, ok := parseYAMLFast(src)
	if !ok {
		return false
	}
	gv, perr := parseYAMLGoccy(src)
	if perr != nil {
		t.Fatalf("fast path accepted what go-yaml refuses (%s):\n%s", perr.msg, src)
	}
	if d := diffValues("$", fv, gv); d != "" {
		t.Fatalf("fast vs go-yaml: %s\n%s", d, src)
	}
	return true
}

func TestYAMLFastMatchesGoccy(t *testing.T) {
	for name, src := range fastSeeds(t) {
		t.Run(name, func(t *testing.T) {
			ok := checkFast(t, src)
			if !ok && strings.HasPrefix(name, "../examples/") {
				t.Errorf("%s does not take the fast path", name)
			}
		})
	}
	if !checkFast(t, bigYAML(300)) {
		t.Error("the benchmark file does not take the fast path")
	}
	if _, ok := parseYAMLFast(bigYAML(10000)); !ok {
		t.Error("the 10k benchmark file does not take the fast path")
	}
}

func FuzzYAMLFast(f *testing.F) {
	for _, src := range fastSeeds(f) {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<16 {
			return
		}
		checkFast(t, src)
	})
}
