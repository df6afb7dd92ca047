package workflow_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/workflow"
)

// TestYAMLMistakesSayWhereAndWhatToDo: the common YAML slips point at the
// line that holds them — not at the line the enclosing block starts on,
// which is the line the YAML library names — and say what to write.
func TestYAMLMistakesSayWhereAndWhatToDo(t *testing.T) {
	t.Parallel()
	head := "version: 1\nname: x\nnodes:\n  - id: a\n    type: set\n"
	tests := []struct {
		name, src, want string
	}{
		{"a key indented less than its siblings", head + "    values: {x: 1}\n   on_error: continue\n",
			"w.yaml:7:4: error: YAML: this line is indented by 3 spaces, which lines it up with no block above it (those are indented by 0, 2 or 4): indent it as the lines it belongs with"},
		{"a list item indented by one space", head + " - id: b\n",
			"w.yaml:6:2: error: YAML: this line is indented by 1 space, which lines it up with no block above it (those are indented by 0, 2 or 4): indent it as the lines it belongs with"},
		{"a key indented under a key with a value", head + "      values: {x: 1}\n",
			"w.yaml:6:7: error: YAML: this line is indented further than line 5, whose key already has its value (type: set): indent it as that line's key (4 spaces)"},
		{"a template not quoted", head + "    values:\n      x: {{ inputs.n }}\n",
			`w.yaml:7:10: error: YAML: a value that starts with {{ is read by YAML as a map: quote it, x: "{{ inputs.n }}"`},
		{"a template not quoted, text after it", head + "    values:\n      x: {{ inputs.n }} items\n",
			`w.yaml:7:7: error: YAML: a value that starts with {{ is read by YAML as a map: quote it, x: "{{ inputs.n }} items"`},
		{"a template as a list item", head + "    values:\n      x:\n        - {{ inputs.n }}\n",
			`w.yaml:8:11: error: YAML: a value that starts with {{ is read by YAML as a map: quote it, - "{{ inputs.n }}"`},
		{"a colon in a value", head + "    values:\n      x: a: b\n",
			`w.yaml:7:7: error: YAML: a value holds ": " and is not quoted, so YAML reads a second key in it: quote the value, x: "a: b"`},
		{"a value that starts with @", head + "    values:\n      x: @me\n",
			`w.yaml:7:7: error: YAML: a value may not start with @ in YAML: quote it, x: "@me"`},
		{"a quoted value followed by text", head + "    values:\n      x: \"a\" b\n",
			`w.yaml:7:7: error: YAML: the quoted text "a" is followed by more text on its line: quote the whole value`},
		{"a quote never closed", head + "    values:\n      x: \"a\n  - id: b\n    type: set\n",
			"w.yaml:7:7: error: YAML: a quoted value on this line is never closed: end it with the quote it starts with"},
		{"a flow map never closed", head + "    values: {x: 1\n  - id: b\n    type: set\n",
			"w.yaml:6:5: error: YAML: a map written { … } is not closed: end it with }, and put a comma between its entries"},
		{"a flow list never closed", head + "    values: {x: [1, 2}\n",
			"w.yaml:6:5: error: YAML: a list written [ … ] is not closed: end it with ], and put a comma between its items"},
		{"a list on its key's line", head + "    values: - x\n",
			"w.yaml:6:5: error: YAML: a list item (- …) on its key's line: start the list on the next line, indented, or write it [a, b]"},
		{"a list item where a key belongs", head + "    values:\n      x: 1\n    - id: b\n",
			"w.yaml:8:5: error: YAML: a list item (- …) where the map that starts on line 4 expects a key: put the list under a key of its own, indented below it"},
		{"a tab after spaces", head + "    values:\n\tx: 1\n",
			"w.yaml:7:1: error: YAML: this line is indented with a tab; YAML indents with spaces only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, ds := workflow.Decode("w.yaml", []byte(tc.src))
			require.Equal(t, tc.want, strings.TrimSpace(ds.Error()), "in:\n%s", tc.src)
		})
	}
}

// BenchmarkYAMLSyntaxErrorInABigFile: a mistake at the end of a file of
// 20,000 nodes, which the library reports at the line its list starts on:
// finding the line that holds it parses the file's beginning a few times
// (against a plain parse, BenchmarkDecodeYAML10k).
func BenchmarkYAMLSyntaxErrorInABigFile(b *testing.B) {
	var src strings.Builder
	src.WriteString("version: 1\nname: big\nnodes:\n")
	for i := range 20000 {
		fmt.Fprintf(&src, "  - id: n%d\n    type: set\n    values: {x: %d}\n", i, i)
	}
	src.WriteString("   on_error: continue\n")
	data := []byte(src.String())
	want := fmt.Sprintf("w.yaml:%d:4:", 3+3*20000+1)
	for b.Loop() {
		_, ds := workflow.Decode("w.yaml", data)
		if !strings.HasPrefix(ds.Error(), want) {
			b.Fatal(ds.Error())
		}
	}
}
