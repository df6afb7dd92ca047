package expr

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseTemplate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		src        string
		wantCodes  []string
		wantSingle bool
	}{
		{name: "static", src: "plain text"},
		{name: "empty", src: ""},
		{name: "lone closing braces are text", src: "a }} b"},
		{name: "single", src: "{{ inputs.city }}", wantCodes: []string{" inputs.city "}, wantSingle: true},
		{name: "a space before is text", src: " {{x}}", wantCodes: []string{"x"}},
		{name: "a newline after is text", src: "{{x}}\n", wantCodes: []string{"x"}},
		{name: "blanks around are text", src: " \n{{x}}\t ", wantCodes: []string{"x"}},
		{name: "mixed", src: "Hi {{ a }} and {{b}}!", wantCodes: []string{" a ", "b"}},
		{name: "two expressions are not single", src: "{{ a }}{{ b }}", wantCodes: []string{" a ", " b "}},
		{name: "nested braces", src: `{{ {"a": {"b": 1}} }}`, wantCodes: []string{` {"a": {"b": 1}} `}, wantSingle: true},
		{name: "map closing right before", src: `{{ {"a": 1}}}`, wantCodes: []string{` {"a": 1}`}, wantSingle: true},
		{name: "closing braces in a double-quoted string", src: `x {{ "}}" + a }} y`, wantCodes: []string{` "}}" + a `}},
		{name: "closing braces in a single-quoted string", src: `{{ '}}' }}`, wantCodes: []string{` '}}' `}, wantSingle: true},
		{name: "closing braces in a raw string", src: "{{ `}}` }}", wantCodes: []string{" `}}` "}, wantSingle: true},
		{name: "escaped quote in a string", src: `{{ "a\"}}" }}`, wantCodes: []string{` "a\"}}" `}, wantSingle: true},
		{name: "braces in a comment", src: "{{ a /* }} */ }}", wantCodes: []string{" a /* }} */ "}, wantSingle: true},
		{name: "opening braces in a string", src: `{{ "{{" }}`, wantCodes: []string{` "{{" `}, wantSingle: true},
		{name: "extra closing brace is text", src: "{{ a }}}", wantCodes: []string{" a "}},
		{name: "multibyte text", src: "héllo {{ a }} wörld", wantCodes: []string{" a "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl, err := ParseTemplate(tt.src)
			require.NoError(t, err)
			require.Equal(t, len(tt.wantCodes) == 0, tmpl.Static())
			require.Equal(t, tt.wantSingle, tmpl.single)
			require.Equal(t, tt.src, tmpl.String())
			var codes []string
			for _, seg := range tmpl.Segments() {
				require.Equal(t, seg.Code, tt.src[seg.Offset:seg.Offset+len(seg.Code)])
				codes = append(codes, seg.Code)
			}
			require.Equal(t, tt.wantCodes, codes)
		})
	}
}

func TestParseTemplateErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		src        string
		wantMsg    string
		wantOffset int
	}{
		{name: "unclosed", src: "Hello {{ name", wantMsg: "unclosed {{", wantOffset: 6},
		{name: "unclosed after a good one", src: "{{ a }} and {{ b }", wantMsg: "unclosed {{", wantOffset: 12},
		{name: "backslash escape", src: `a \{{ b }}`, wantMsg: `\{{ is not an escape`, wantOffset: 2},
		{name: "unterminated string", src: `x {{ "}} }}`, wantMsg: "string literal is not terminated", wantOffset: 5},
		{name: "newline ends a quoted string", src: "{{ 'a\n' }}", wantMsg: "string literal is not terminated", wantOffset: 3},
		{name: "unterminated raw string", src: "{{ `a }}", wantMsg: "string literal is not terminated", wantOffset: 3},
		{name: "unterminated comment", src: "{{ a /* }}", wantMsg: "comment is not terminated", wantOffset: 5},
		{name: "empty expression", src: "a {{  }} b", wantMsg: "empty expression", wantOffset: 2},
		{
			name:       "expression too long",
			src:        "ab{{" + strings.Repeat(" ", MaxExprLen) + "x}}",
			wantMsg:    "expression is 8193 bytes; the limit is 8192",
			wantOffset: 4 + MaxExprLen,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseTemplate(tt.src)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Contains(t, e.Msg, tt.wantMsg)
			require.Equal(t, tt.wantOffset, e.Offset)
			require.Equal(t, tt.src, e.Expr)
			require.True(t, strings.HasPrefix(err.Error(), "template "), err.Error())
		})
	}
}

// testScope returns the scope most render and eval tests read.
func testScope() *Scope {
	return &Scope{
		Inputs: map[string]any{
			"city": "Paris",
			"days": 3,
			"tags": []any{"a", "b"},
			"rate": 2.5,
		},
		Secrets:   map[string]any{"K": "s3cret"},
		Execution: map[string]any{"id": "run-1", "workflow": "triage"},
		Nodes: map[string]any{
			"fetch": map[string]any{
				"status":  200,
				"success": true,
				"body": map[string]any{
					"items": []any{map[string]any{"name": "first", "rain": 0.7}, map[string]any{"name": "second", "rain": 0.1}},
					"html":  "<b>&</b>",
				},
			},
			"a": map[string]any{"text": "{{ secrets.K }}", "success": true},
		},
	}
}

func TestRender(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		src  string
		want any
	}{
		{name: "static", src: "no templates", want: "no templates"},
		{name: "list stays a list", src: "{{ inputs.tags }}", want: []any{"a", "b"}},
		{name: "int stays an int", src: "{{ inputs.days }}", want: 3},
		{name: "a blank before a lone expression is kept", src: " {{ 1 + 1 }}", want: " 2"},
		{name: "a blank after a lone expression is kept", src: "{{ 1 + 1 }} ", want: "2 "},
		{name: "a block scalar's newline is kept", src: "{{ inputs.tags }}\n", want: "[\"a\",\"b\"]\n"},
		{name: "blanks around a lone nil are kept", src: " {{ missing }} ", want: "  "},
		{name: "float stays a float", src: "{{ inputs.rate }}", want: 2.5},
		{name: "map stays a map", src: "{{ fetch.body.items[0] }}", want: map[string]any{"name": "first", "rain": 0.7}},
		{name: "nil stays nil", src: "{{ missing.node }}", want: nil},
		{name: "map literal with nested braces", src: `{{ {"a": {"b": 1}} }}`, want: map[string]any{"a": map[string]any{"b": 1}}},
		{name: "computed list", src: "{{ map(fetch.body.items, .name) }}", want: []any{"first", "second"}},
		{name: "mixed", src: "Weather in {{ inputs.city }} for {{ inputs.days }} days", want: "Weather in Paris for 3 days"},
		{name: "mixed float integral", src: "n={{ inputs.days * 1.0 }}", want: "n=3"},
		{name: "mixed float", src: "r={{ inputs.rate }}", want: "r=2.5"},
		{name: "mixed big float", src: "{{ 1e21 }}!", want: "1e+21!"},
		{name: "mixed small float", src: "{{ 0.0000001 }}!", want: "1e-07!"},
		{name: "mixed nil is empty", src: "[{{ missing }}]", want: "[]"},
		{name: "mixed bool", src: "ok={{ fetch.success }}", want: "ok=true"},
		{name: "mixed list is compact JSON", src: "tags: {{ inputs.tags }}", want: `tags: ["a","b"]`},
		{name: "mixed map is compact JSON without HTML escapes", src: "{{ fetch.body.items[0] }} {{ fetch.body.html }}", want: `{"name":"first","rain":0.7} <b>&</b>`},
		{name: "mixed map with non-string keys", src: "{{ groupBy([1, 2, 3], # % 2) }}.", want: `{"0":[2],"1":[1,3]}.`},
		{name: "string literal with braces", src: `a{{ "}}" }}b`, want: "a}}b"},
		{name: "literal opening braces", src: `{{ "{{" }} x }}`, want: "{{ x }}"},
		{name: "two expressions", src: "{{ 1 }}{{ 2 }}", want: "12"},
		{name: "member of a node that has not run", src: "{{ later.body.x }}", want: nil},
		{name: "secrets", src: "Bearer {{ secrets.K }}", want: "Bearer s3cret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl, err := ParseTemplate(tt.src)
			require.NoError(t, err)
			got, err := tmpl.Render(testScope())
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestRenderDataIsNotEvaluated proves that values are data: a node output
// that looks like a template is rendered as its literal text.
func TestRenderDataIsNotEvaluated(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		src  any
		want any
	}{
		{name: "single", src: "{{ a.text }}", want: "{{ secrets.K }}"},
		{name: "mixed", src: "x {{ a.text }} y", want: "x {{ secrets.K }} y"},
		{name: "in a value", src: map[string]any{"h": []any{"{{ a.text }}"}}, want: map[string]any{"h": []any{"{{ secrets.K }}"}}},
		{name: "in a string map", src: map[string]string{"h": "{{ a.text }}"}, want: map[string]string{"h": "{{ secrets.K }}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := RenderValue(tt.src, testScope())
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.NotContains(t, got, "s3cret")
		})
	}
}

func TestRenderErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		src        string
		wantMsg    string
		wantOffset int
	}{
		{name: "syntax, single", src: "{{ a +* b }}", wantMsg: "unexpected token", wantOffset: 6},
		{name: "syntax after text", src: "héllo {{ a +* b }}", wantMsg: "unexpected token", wantOffset: 13},
		{name: "runtime", src: "x {{ inputs.tags[5] }}", wantMsg: "index out of range", wantOffset: 16},
		{name: "unknown function", src: "x {{ uper(a) }}", wantMsg: "unknown function uper", wantOffset: 5},
		{name: "budget while writing text", src: `x {{ map(1..400, vars.big) }}`, wantMsg: "rendered text would be longer", wantOffset: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl, err := ParseTemplate(tt.src)
			require.NoError(t, err)
			s := testScope()
			s.Vars = map[string]any{"big": strings.Repeat("<", 100_000)}
			_, err = tmpl.Render(s)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Contains(t, e.Msg, tt.wantMsg)
			require.Equal(t, tt.wantOffset, e.Offset)
			require.Equal(t, tt.src, e.Expr)

			// A second render fails the same way.
			_, err2 := tmpl.Render(s)
			require.Equal(t, err.Error(), err2.Error())
		})
	}
}

func TestTemplateReferences(t *testing.T) {
	t.Parallel()

	tmpl, err := ParseTemplate("Hi {{ inputs.name }}, {{ fetch.body.x + n }}")
	require.NoError(t, err)
	refs, err := tmpl.References()
	require.NoError(t, err)
	require.Equal(t, []Ref{
		{Root: "inputs", Path: []string{"name"}, Offset: 6},
		{Root: "fetch", Path: []string{"body", "x"}, Offset: 25},
		{Root: "n", Offset: 40},
	}, refs)

	tmpl, err = ParseTemplate("Hi {{ a + }}")
	require.NoError(t, err)
	_, err = tmpl.References()
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "Hi {{ a + }}", e.Expr)
	require.Equal(t, 9, e.Offset) // the end of " a + "
}

func TestRenderValue(t *testing.T) {
	t.Parallel()

	in := map[string]any{
		"url":     "https://x/?city={{ inputs.city }}",
		"days":    "{{ inputs.days }}",
		"headers": map[string]string{"X-Days": "{{ inputs.days }}", "Plain": "p"},
		"command": []string{"echo", "{{ inputs.tags }}"},
		"list":    []any{"{{ inputs.tags }}", 1, true, nil},
		"n":       42,
		"nested":  map[string]any{"deep": []any{map[string]any{"c": "{{ execution.id }}"}}},
	}
	got, err := RenderValue(in, testScope())
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"url":     "https://x/?city=Paris",
		"days":    3,
		"headers": map[string]string{"X-Days": "3", "Plain": "p"},
		"command": []string{"echo", `["a","b"]`},
		"list":    []any{[]any{"a", "b"}, 1, true, nil},
		"n":       42,
		"nested":  map[string]any{"deep": []any{map[string]any{"c": "run-1"}}},
	}, got)
	require.Equal(t, "{{ inputs.days }}", in["days"], "RenderValue must not modify its argument")

	_, err = RenderValue(map[string]any{"a": map[string]any{"b": []any{"ok", "{{ uper(x) }}"}}}, testScope())
	require.ErrorContains(t, err, "a.b[1]: template")
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, 3, e.Offset)

	_, err = RenderValue(map[string]string{"h": "{{ x"}, testScope())
	require.ErrorContains(t, err, "h: template")
}

func TestHasTemplate(t *testing.T) {
	t.Parallel()

	require.True(t, HasTemplate("a {{ b }}"))
	require.True(t, HasTemplate("{{"))
	require.False(t, HasTemplate("a { b }"))
	require.False(t, HasTemplate(""))
}

func TestRenderConcurrently(t *testing.T) {
	t.Parallel()

	tmpl, err := ParseTemplate("{{ inputs.city }}: {{ len(fetch.body.items) }} {{ any(fetch.body.items, .rain > 0.5) }}")
	require.NoError(t, err)
	done := make(chan error)
	for range 8 {
		go func() {
			for range 50 {
				out, err := tmpl.Render(testScope())
				if err == nil && out != "Paris: 2 true" {
					err = errors.New("unexpected " + out.(string))
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		require.NoError(t, <-done)
	}
}
