package workflow

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// bigWorkflow is a workflow of n nodes in a chain, written the ways people
// write YAML: block and flow maps, comments between and inside items, block
// scalars with lines that look like items, quoted strings over several
// lines, a flow map over several lines, a key after the lists.
func bigWorkflow(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: big\n# the nodes\nnodes:\n  - {id: start, type: trigger.manual}\n")
	for i := range n {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "  - {id: n%d, type: set, values: {i: %d}}\n", i, i)
		case 1:
			fmt.Fprintf(&b, "  # node %d\n  - id: n%d\n    type: set\n    values:\n      text: |\n        line one\n        - not an item\n\n      i: %d\n", i, i, i)
		case 2:
			fmt.Fprintf(&b, "  - id: n%d\n    type: template\n    text: \"two\n      lines {{ n%d.i }}\"\n", i, i-1)
		case 3:
			fmt.Fprintf(&b, "  -   id: n%d\n      type: set\n      values: {a: [1, 2,\n        3], b: 'it''s'}  # a comment\n", i)
		case 4:
			fmt.Fprintf(&b, "  - id: n%d\n    type: set\n    values:\n      l:\n        - x\n        - - y\n", i)
		}
	}
	b.WriteString("\nedges:\n  - {from: start, to: n0}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  - from: n%d\n    to: n%d\n", i-1, i)
	}
	b.WriteString("outputs:\n  last: \"{{ n0.i }}\"\n")
	return b.String()
}

func TestPiecesGiveTheWholeParse(t *testing.T) {
	t.Parallel()
	src := []byte(bigWorkflow(600))
	want, perr := parseWhole(src)
	require.Nil(t, perr)
	for _, s := range []splitting{bigFiles(), {min: 0, piece: 8 << 10, most: 2}, {min: 0, piece: 1 << 10, most: 7}, tinyPieces} {
		got, ok := parseInPieces(src, s)
		require.True(t, ok, "the pieces declined a file they can cut (%+v)", s)
		require.True(t, reflect.DeepEqual(got, want), "the pieces disagree with the whole parse (%+v)", s)
	}
	got, perr := parseYAML(src)
	require.Nil(t, perr)
	require.True(t, reflect.DeepEqual(got, want))
}

// Where the pieces cannot give the whole parse's answer, they decline, and
// the whole parse gives it (its values, or its error at its place).
func TestPiecesDecline(t *testing.T) {
	t.Parallel()
	items := func(n int, item string) string { return strings.Repeat(item, n) }
	tests := []struct{ name, src string }{
		{"an alias of an anchor in another piece", "version: 1\nnodes:\n  - &a {id: a, type: set}\n" + items(40, "  - {id: b, type: set}\n") + "  - *a\n"},
		{"an alias of an anchor above the list", "defaults: &d {type: set}\nnodes:\n" + items(40, "  - {id: b, <<: *d}\n")},
		{"a quote open across items", "nodes:\n  - id: \"a\n" + items(40, "  - b\n") + "  \"\n"},
		{"a bracket open across items", "nodes: \n  - [a,\n" + items(40, "  - b,\n") + "  ]\n"},
		{"Windows line ends", strings.ReplaceAll("nodes:\n"+items(40, "  - {id: b}\n"), "\n", "\r\n")},
		{"a tab", "nodes:\n" + items(40, "  - {id: b}\n") + "\t- c\n"},
		{"a flow map around the lists", "{\nnodes:\n" + items(40, "  - b\n") + "}\n"},
		{"a second document", "nodes:\n" + items(40, "  - b\n") + "---\nnodes:\n" + items(40, "  - c\n")},
		{"two lists under one key", "nodes:\n" + items(40, "  - b\n") + "nodes:\n" + items(40, "  - c\n")},
		{"a line less indented than the items", "nodes:\n" + items(40, "    - b\n") + "  - c\n"},
		{"a value on the key's line", "nodes: &n\n" + items(40, "  - b\n")},
		{"a map, not a list", "nodes:\n" + items(40, "  b: 1\n")},
		{"a syntax error in a piece", "nodes:\n" + items(40, "  - b\n") + "  - c: d: e\n" + items(40, "  - b\n")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := []byte(tc.src)
			_, ok := parseInPieces(src, tinyPieces)
			require.False(t, ok)
			got, gerr := parseYAML(src)
			want, werr := parseWhole(src)
			require.Equal(t, werr, gerr)
			require.True(t, reflect.DeepEqual(got, want))
		})
	}
}

// An error in a big file names the line it is on, whichever piece holds it.
func TestBigFileErrorsKeepTheirLines(t *testing.T) {
	t.Parallel()
	src := bigWorkflow(600)
	line := strings.Count(src[:strings.Index(src, "id: n550,")], "\n") + 1
	src = strings.Replace(src, "id: n550, type: set", "id: n550, type: sett", 1)
	require.Greater(t, len(src), bigFiles().min)
	_, diags := LoadSource("big.yaml", []byte(src), nil)
	require.Error(t, diags.Err())
	require.Equal(t, line, diags[0].Line, "%v", diags)
	require.Equal(t, "n550", diags[0].Node)
}

// BenchmarkParseYAML parses the 1,000-node workflow of the YAML
// benchmarks (bigYAML) whole, then in pieces.
func BenchmarkParseYAML(b *testing.B) {
	src := bigYAML(1000)
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			if _, perr := parseWhole(src); perr != nil {
				b.Fatal(perr.msg)
			}
		}
	})
	b.Run("pieces", func(b *testing.B) {
		for b.Loop() {
			if _, ok := parseInPieces(src, bigFiles()); !ok {
				b.Fatal("declined")
			}
		}
	})
}
