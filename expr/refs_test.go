package expr

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReferences(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		code string
		want []Ref
	}{
		{
			name: "member chain",
			code: "fetch.body.x",
			want: []Ref{{Root: "fetch", Path: []string{"body", "x"}, Offset: 0}},
		},
		{
			name: "bare name",
			code: "  fetch",
			want: []Ref{{Root: "fetch", Offset: 2}},
		},
		{
			name: "index with a string literal",
			code: `fetch["body"]`,
			want: []Ref{{Root: "fetch", Path: []string{"body"}}},
		},
		{
			name: "path stops at a number index",
			code: "fetch.body.items[0].name",
			want: []Ref{{Root: "fetch", Path: []string{"body", "items"}}},
		},
		{
			name: "dynamic index is a reference too",
			code: "a.b[inputs.key].c",
			want: []Ref{
				{Root: "a", Path: []string{"b"}},
				{Root: "inputs", Path: []string{"key"}, Offset: 4},
			},
		},
		{
			name: "optional chain",
			code: "a?.b?.c",
			want: []Ref{{Root: "a", Path: []string{"b", "c"}}},
		},
		{
			name: "slice",
			code: "a.list[1:n]",
			want: []Ref{{Root: "a", Path: []string{"list"}}, {Root: "n", Offset: 9}},
		},
		{
			name: "several, in source order",
			code: `inputs.city + " " + vars.x == secrets.K`,
			want: []Ref{
				{Root: "inputs", Path: []string{"city"}},
				{Root: "vars", Path: []string{"x"}, Offset: 20},
				{Root: "secrets", Path: []string{"K"}, Offset: 30},
			},
		},
		{
			name: "every occurrence",
			code: "a.x + a.y",
			want: []Ref{{Root: "a", Path: []string{"x"}}, {Root: "a", Path: []string{"y"}, Offset: 6}},
		},
		{
			name: "predicate pointers are not references",
			code: "any(forecast.body.days, .rain > 0.5 && #.wind < limit)",
			want: []Ref{
				{Root: "forecast", Path: []string{"body", "days"}, Offset: 4},
				{Root: "limit", Offset: 48},
			},
		},
		{
			name: "closure with #acc and #index",
			code: "reduce(xs, #acc + # * #index, 0)",
			want: []Ref{{Root: "xs", Offset: 7}},
		},
		{
			name: "map with a pointer path",
			code: "map(fetch.items, .name)",
			want: []Ref{{Root: "fetch", Path: []string{"items"}, Offset: 4}},
		},
		{
			name: "predicate in braces with let",
			code: "filter(xs, {let y = #; y > min})",
			want: []Ref{{Root: "xs", Offset: 7}, {Root: "min", Offset: 27}},
		},
		{
			name: "builtins are not references",
			code: "len(upper(trim(a))) + count(b, # > 1) + abs(c)",
			want: []Ref{{Root: "a", Offset: 15}, {Root: "b", Offset: 28}, {Root: "c", Offset: 44}},
		},
		{
			name: "pipe",
			code: "a.text | lower() | trim()",
			want: []Ref{{Root: "a", Path: []string{"text"}}},
		},
		{
			name: "let binds in its body only",
			code: "let x = fetch.body; x.name + y",
			want: []Ref{{Root: "fetch", Path: []string{"body"}, Offset: 8}, {Root: "y", Offset: 29}},
		},
		{
			name: "let shadows a node id",
			code: "let fetch = 1; fetch",
			want: nil,
		},
		{
			name: "let value sees the outer name",
			code: "let fetch = fetch.x; fetch",
			want: []Ref{{Root: "fetch", Path: []string{"x"}, Offset: 12}},
		},
		{
			name: "env reads name its first member",
			code: `$env.fetch.body + $env["vars"]`,
			want: []Ref{
				{Root: "fetch", Path: []string{"body"}, Offset: 5},
				{Root: "vars", Offset: 23},
			},
		},
		{
			name: "map literal keys are not references",
			code: `{name: a, "b": b, (c): 1}`,
			want: []Ref{{Root: "a", Offset: 7}, {Root: "b", Offset: 15}, {Root: "c", Offset: 19}},
		},
		{
			name: "literals and keywords",
			code: `true && nil == nil || "x" in ["x"] && 1..3 != []`,
			want: nil,
		},
		{
			name: "conditional",
			code: "a ? b : c",
			want: []Ref{{Root: "a"}, {Root: "b", Offset: 4}, {Root: "c", Offset: 8}},
		},
		{
			name: "if else",
			code: "if a { b } else { c }",
			want: []Ref{{Root: "a", Offset: 3}, {Root: "b", Offset: 7}, {Root: "c", Offset: 18}},
		},
		{
			name: "method call keeps the receiver path",
			code: "now().Year() + a.b.c()",
			want: []Ref{{Root: "a", Path: []string{"b"}, Offset: 15}},
		},
		{
			name: "byte offsets after multibyte text",
			code: `"héllo" + fetch.x`,
			want: []Ref{{Root: "fetch", Path: []string{"x"}, Offset: 11}},
		},
		{
			name: "guarded builtins overridden are still not references",
			code: `repeat(a, 2) + join(b) + ::upper(c)`,
			want: []Ref{{Root: "a", Offset: 7}, {Root: "b", Offset: 20}, {Root: "c", Offset: 33}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			refs, err := References(tt.code)
			require.NoError(t, err)
			require.Equal(t, tt.want, refs)
			for _, r := range refs {
				require.True(t, strings.HasPrefix(tt.code[r.Offset:], r.Root) ||
					strings.HasPrefix(tt.code[r.Offset:], `"`+r.Root),
					"offset %d of %q does not point at %q", r.Offset, tt.code, r.Root)
			}
		})
	}
}

func TestReferencesErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		code       string
		wantMsg    string
		wantOffset int
		wantBudget bool
	}{
		{name: "syntax", code: "a +* b", wantMsg: "unexpected token", wantOffset: 3},
		{name: "syntax after multibyte text", code: `"日本" + )`, wantMsg: "unexpected token", wantOffset: 11},
		{name: "unterminated string", code: `a == "x`, wantMsg: "literal not terminated", wantOffset: 7},
		{name: "empty", code: "", wantMsg: "unexpected token EOF", wantOffset: 0},
		{name: "unknown function", code: "a + uper(b)", wantMsg: "unknown function uper", wantOffset: 4},
		{name: "reserved name", code: "$__guard", wantMsg: "the name $__guard is reserved", wantOffset: 0},
		{name: "reserved function", code: "1 + $__tick(1, 2)", wantMsg: "reserved", wantOffset: 4},
		{
			name:       "too long",
			code:       strings.Repeat("a", MaxExprLen+1),
			wantMsg:    "expression is 8193 bytes; the limit is 8192",
			wantOffset: MaxExprLen,
			wantBudget: true,
		},
		{
			name:       "too many nodes",
			code:       strings.Repeat("1+", MaxNodes) + "1",
			wantMsg:    "expression has more than 2000 nodes; the limit is 2000",
			wantBudget: true,
			wantOffset: -2, // somewhere; checked below
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := References(tt.code)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Contains(t, e.Msg, tt.wantMsg)
			require.Equal(t, tt.code, e.Expr)
			if tt.wantOffset == -2 {
				require.Positive(t, e.Offset)
			} else {
				require.Equal(t, tt.wantOffset, e.Offset)
			}
			require.Equal(t, tt.wantBudget, errors.Is(err, ErrBudget))
		})
	}
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()

	e := &Error{Expr: "fetch.bdy + 1", Offset: 6, Msg: "unknown name bdy"}
	require.Equal(t, `expression "fetch.bdy + 1": unknown name bdy (at offset 6)`, e.Error())

	e = &Error{Expr: "x", Offset: -1, Msg: "boom"}
	require.Equal(t, `expression "x": boom`, e.Error())

	long := strings.Repeat("a", 100) + " +* " + strings.Repeat("b", 100)
	_, err := References(long)
	require.ErrorContains(t, err, `expression "…aaa`)
	require.ErrorContains(t, err, `aaa +* bbb`)
	require.ErrorContains(t, err, `bbb…": unexpected token`)
	require.ErrorContains(t, err, "(at offset 102)")
}

func TestIsKeyword(t *testing.T) {
	t.Parallel()

	for kw := range keywords {
		require.True(t, IsKeyword(kw))
		_, err := References(kw + ".x")
		require.Error(t, err, "%s.x should not parse as a reference", kw)
	}
	for _, name := range []string{"fetch", "map", "len", "filter", "inputs", "node_1", "notes", "iff"} {
		require.False(t, IsKeyword(name))
		refs, err := References(name + ".x")
		require.NoError(t, err)
		require.Equal(t, []Ref{{Root: name, Path: []string{"x"}}}, refs)
	}
}
