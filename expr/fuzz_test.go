package expr

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"",
	"plain",
	"{{ inputs.city }}",
	"Hello {{ inputs.name }}, {{ len(fetch.body.items) }} items",
	`{{ {"a": {"b": "}}"}} }}`,
	"{{ `}}` + '}}' + \"}}\" }}",
	"{{ a /* }} */ }}",
	`\{{ a }}`,
	"{{ a",
	"{{ }}",
	"{{ a }}}",
	"{{ map(xs, .name) }} {{ let x = 1; x }}",
	"{{ $env.fetch.body }}",
	"{{ any(fetch.body.days, .rain > 0.5) ? 'wet' : 'dry' }}",
	"héllo {{ \"日本\" + a }}",
	"{{ a?.b?.[0] }}",
	"{{ 1..3 | map(# * 2) }}",
	" {{ 1 + 1 }}",
	"{{ inputs.n }}\n",
}

// FuzzParseTemplate checks that scanning, parsing and rendering never panic,
// that errors point inside the template, and that segments are exactly the
// text between their braces.
func FuzzParseTemplate(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	scope := &Scope{
		Inputs: map[string]any{"city": "Paris", "n": 3},
		Nodes:  map[string]any{"fetch": map[string]any{"body": map[string]any{"items": []any{1, 2}}}},
	}
	f.Fuzz(func(t *testing.T, s string) {
		tmpl, err := ParseTemplate(s)
		if err != nil {
			checkError(t, err, s)
			return
		}
		if tmpl.String() != s {
			t.Fatalf("String() = %q, want %q", tmpl.String(), s)
		}
		if !HasTemplate(s) && !tmpl.Static() {
			t.Fatalf("%q has no {{ but is not static", s)
		}
		// The template is its text pieces and {{ segments }}, in order.
		var rebuilt strings.Builder
		prev := 0
		for i, seg := range tmpl.Segments() {
			if seg.Offset < prev+2 || seg.Offset+len(seg.Code)+2 > len(s) {
				t.Fatalf("segment %d at %d is out of order or out of range in %q", i, seg.Offset, s)
			}
			if s[seg.Offset-2:seg.Offset] != "{{" || s[seg.Offset+len(seg.Code):seg.Offset+len(seg.Code)+2] != "}}" {
				t.Fatalf("segment %d %q of %q is not between {{ and }}", i, seg.Code, s)
			}
			if got := s[seg.Offset : seg.Offset+len(seg.Code)]; got != seg.Code {
				t.Fatalf("segment %d offset points at %q, want %q", i, got, seg.Code)
			}
			rebuilt.WriteString(tmpl.lits[i])
			rebuilt.WriteString("{{" + seg.Code + "}}")
			prev = seg.Offset + len(seg.Code) + 2
		}
		rebuilt.WriteString(tmpl.lits[len(tmpl.lits)-1])
		if rebuilt.String() != s {
			t.Fatalf("pieces rebuild %q, want %q", rebuilt.String(), s)
		}
		refs, err := tmpl.References()
		if err != nil {
			checkError(t, err, s)
		}
		for _, r := range refs {
			if r.Offset < 0 || r.Offset >= len(s) {
				t.Fatalf("reference %v is outside %q", r, s)
			}
		}
		segs := tmpl.Segments()
		if want := len(segs) == 1 && s == "{{"+segs[0].Code+"}}"; tmpl.Single() != want {
			t.Fatalf("Single() = %v for %q, want %v: only a template that is exactly one {{ }} is single", tmpl.Single(), s, want)
		}
		v, err := tmpl.Render(scope)
		if err != nil {
			checkError(t, err, s)
			return
		}
		if !tmpl.Single() {
			// The text around the expressions is kept as it is.
			text, ok := v.(string)
			if !ok || !strings.HasPrefix(text, tmpl.lits[0]) || !strings.HasSuffix(text, tmpl.lits[len(tmpl.lits)-1]) {
				t.Fatalf("%q rendered %#v, which does not keep the text around its expressions", s, v)
			}
		}
	})
}

// FuzzReferences checks that References never panics and that its offsets
// point at the names it reports.
func FuzzReferences(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	for _, s := range []string{
		"fetch.body.items[0].name",
		`fetch["body"].x`,
		"reduce(xs, #acc + #, 0)",
		"let fetch = 1; fetch + other",
		`$env["a"].b + $env.c`,
		"filter(xs, {let y = #; y > min})",
		"now().Year() + a.b.c()",
	} {
		f.Add(s)
	}
	f.Add("fetch.body.items")
	f.Add("  a.b  ")
	f.Add("len.x")
	f.Add("true.x")
	f.Fuzz(func(t *testing.T, code string) {
		refs, err := References(code)
		if fast, ok := simplePath(code); ok {
			// The fast path must agree with the parser.
			a, perr := analyze(code)
			if perr != nil || len(a.refs) != 1 || !reflect.DeepEqual(a.refs[0].Root, fast.Root) ||
				!reflect.DeepEqual(append([]string{}, a.refs[0].Path...), append([]string{}, fast.Path...)) || a.refs[0].Offset != fast.Offset {
				t.Fatalf("fast path %+v disagrees with the parser (%+v, %v) on %q", fast, a, perr, code)
			}
		}
		if err != nil {
			checkError(t, err, code)
			return
		}
		for _, r := range refs {
			if r.Offset < 0 || r.Offset >= len(code) {
				t.Fatalf("reference %v is outside %q", r, code)
			}
			rest := code[r.Offset:]
			if !strings.HasPrefix(rest, r.Root) && !strings.ContainsAny(rest[:1], "\"'`") {
				t.Fatalf("reference %v does not point at its root in %q", r, code)
			}
		}
	})
}

func checkError(t *testing.T, err error, src string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	if e.Offset < -1 || e.Offset > len(src) {
		t.Fatalf("error offset %d is outside %q: %v", e.Offset, src, err)
	}
	if e.Expr != src {
		t.Fatalf("error is about %q, want %q", e.Expr, src)
	}
	if strings.Contains(e.Msg, "internal error") {
		t.Fatalf("internal error: %v", err)
	}
}
