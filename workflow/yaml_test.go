package workflow_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// textWorkflow is a small workflow whose template on line 8 reads a node
// that does not exist, so Validate reports exactly one error at a known
// place: line 8, the "n" of "nope" at column 21.
const textWorkflow = `version: 1
name: lines
nodes:
  - id: start
    type: trigger.manual
  - id: greet
    type: template
    text: "hello {{ nope.text }}"
edges:
  - {from: start, to: greet}
`

// Files saved by other editors: a byte order mark, Windows line endings,
// tabs where YAML allows them. They validate, and diagnostics keep their
// line and column.
func TestYAMLEncodingsKeepPositions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		col  int
	}{
		{"plain", textWorkflow, 21},
		{"byte order mark", "\ufeff" + textWorkflow, 21},
		{"CRLF line endings", strings.ReplaceAll(textWorkflow, "\n", "\r\n"), 21},
		{"byte order mark and CRLF", "\ufeff" + strings.ReplaceAll(textWorkflow, "\n", "\r\n"), 21},
		{"tabs after colons and in flow maps", strings.NewReplacer("text: ", "text:\t", "{from: start, to: greet}", "{from:\tstart,\tto: greet}").Replace(textWorkflow), 21},
		{"comment with tabs", strings.Replace(textWorkflow, "name: lines\n", "name: lines\t\t# a\tcomment\n", 1), 21},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, ds := workflow.Decode("lines.yaml", []byte(tc.src))
			require.Empty(t, ds, "decoding should be clean")
			require.Equal(t, "hello {{ nope.text }}", w.Nodes[1].Params["text"])
			require.Len(t, w.Edges, 1)
			require.Equal(t, "greet", w.Edges[0].To)
			errs := workflow.Validate(w, node.Default).Errors()
			require.Len(t, errs, 1, "want only the unknown reference")
			require.Contains(t, errs[0].Message, "nope")
			require.Equal(t, 8, errs[0].Line, errs[0].String())
			require.Equal(t, tc.col, errs[0].Col, errs[0].String())
		})
	}
}

// A number YAML reads as infinite or not a number is refused where it is
// written: a run records its values as JSON, which has neither, so such a
// value would fail the run when it is saved. Quoted, it is text.
func TestYAMLNonFiniteNumbersRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, line  string
		lineNo, col int
		word        string
	}{
		{"a parameter", "  - {id: a, type: set, values: {y: .inf}}", 6, 36, ".inf"},
		{"a negative one", "  - {id: a, type: set, values: {y: -.Inf}}", 6, 36, "-.Inf"},
		{"not a number", "  - {id: a, type: set, values: {y: [1, .NaN]}}", 6, 40, ".NaN"},
		{"an input's default", "  - {id: a, type: set, values: {y: 1}}\ninputs:\n  x: {type: number, default: .inf}", 8, 30, ".inf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := "version: 1\nname: x\nnodes:\n  - {id: start, type: trigger.manual}\n# a set node\n" + tc.line + "\n"
			_, ds := workflow.Decode("nums.yaml", []byte(src))
			require.True(t, ds.HasErrors(), "a non-finite number decodes")
			d := ds.Errors()[0]
			require.Equal(t, tc.lineNo, d.Line, d.String())
			require.Equal(t, tc.col, d.Col, d.String())
			require.Equal(t, "YAML: "+tc.word+" is not a number a run can record (JSON has no infinity or NaN); write a finite number, or quote it to mean the text", d.Message)
		})
	}
	w, ds := workflow.Decode("nums.yaml", []byte("version: 1\nname: x\nnodes:\n  - {id: a, type: set, values: {y: \".inf\", z: 1.5e300}}\n"))
	require.False(t, ds.HasErrors(), ds.Error())
	require.Equal(t, map[string]any{"y": ".inf", "z": 1.5e300}, w.Nodes[0].Params["values"])
}

// A YAML syntax error in a CRLF file names the line of the mistake.
func TestYAMLSyntaxErrorLineWithCRLF(t *testing.T) {
	t.Parallel()
	src := strings.ReplaceAll("version: 1\nname: x\nnodes:\n  - {id: a, type: set\n", "\n", "\r\n")
	_, ds := workflow.Decode("crlf.yaml", []byte(src))
	require.True(t, ds.HasErrors())
	require.Equal(t, 4, ds[0].Line, ds.Error())
	require.Contains(t, ds[0].Message, "YAML:")
}

// Anchors, aliases and merge keys used the ordinary way decode to the
// values they stand for, and a key written beside a merge overrides it.
func TestYAMLAnchorsAndMerges(t *testing.T) {
	t.Parallel()
	src := `version: 1
name: anchors
nodes:
  - id: start
    type: trigger.manual
  - &shell
    id: build_a
    type: shell
    command: &cmd [echo, hi]
    timeout: 5s
  - <<: *shell
    id: build_b
    command: *cmd
  - id: build_c
    type: shell
    command: *cmd
edges:
  - {from: start, to: build_a}
  - {from: build_a, to: build_b}
  - {from: build_b, to: build_c}
`
	w, ds := workflow.Decode("anchors.yaml", []byte(src))
	require.Empty(t, ds)
	require.Empty(t, workflow.Validate(w, node.Default).Errors())
	require.Len(t, w.Nodes, 4)
	for _, n := range w.Nodes[1:] {
		require.Equal(t, "shell", n.Type, n.ID)
		require.Equal(t, []any{"echo", "hi"}, n.Params["command"], n.ID)
	}
	require.Equal(t, "build_b", w.Nodes[2].ID, "the explicit id overrides the merged one")
	require.Equal(t, 5*time.Second, *w.Nodes[2].Timeout, "the merged timeout")
	require.Nil(t, w.Nodes[3].Timeout)
}

// A top-level key that starts with x- is the workflow's own: Skein reads
// none of it, so it holds the anchors the nodes merge, whatever its value;
// another unknown key is still refused.
func TestExtensionKeysHoldAnchors(t *testing.T) {
	t.Parallel()
	src := `version: 1
name: anchors
x-retried: &retried
  retries: 2
  timeout: 30s
x-notes: [whatever, {it: holds}]
x-: 1
nodes:
  - {id: start, type: trigger.manual}
  - id: fetch
    type: shell
    command: [echo, hi]
    <<: *retried
  - id: other
    type: shell
    command: [echo, there]
    <<: *retried
    timeout: 5s
edges:
  - {from: start, to: fetch}
  - {from: fetch, to: other}
`
	w, ds := workflow.Decode("anchors.yaml", []byte(src))
	require.Empty(t, ds)
	require.Empty(t, workflow.Validate(w, node.Default).Errors())
	require.Equal(t, 2, *w.Nodes[1].Retries)
	require.Equal(t, 30*time.Second, *w.Nodes[1].Timeout)
	require.Equal(t, 2, *w.Nodes[2].Retries)
	require.Equal(t, 5*time.Second, *w.Nodes[2].Timeout, "a key beside the merge overrides it")

	_, ds = workflow.Decode("own.yaml", []byte(strings.Replace(src, "x-notes", "my_notes", 1)))
	require.Len(t, ds, 1)
	require.Equal(t, 6, ds[0].Line)
	require.Contains(t, ds[0].Message, `unknown key "my_notes" in the workflow`)
	// A node's keys are its own: x- there is an unknown parameter.
	_, ds = workflow.Decode("node.yaml", []byte(strings.Replace(src, "    command: [echo, hi]\n", "    command: [echo, hi]\n    x-note: 1\n", 1)))
	w, _ = workflow.Decode("node.yaml", []byte(strings.Replace(src, "    command: [echo, hi]\n", "    command: [echo, hi]\n    x-note: 1\n", 1)))
	require.NotEmpty(t, append(ds, workflow.Validate(w, node.Default)...).Errors())
}

// aliasBomb is a file of about 2 MB of aliases of a "billion laughs"
// anchor, one a line: with lines of 16 bytes, 130,000
// aliases that would expand to 10^14 strings.
func aliasBomb(line string) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nname: bomb\nnodes:\n  - id: start\n    type: trigger.manual\n  - id: lol\n    type: set\n    values:\n")
	b.WriteString("      lol0: &lol0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "      lol%d: &lol%d [*lol%d, *lol%d, *lol%d, *lol%d, *lol%d, *lol%d, *lol%d, *lol%d, *lol%d, *lol%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	b.WriteString("      all:\n")
	for b.Len() < 2<<20 {
		b.WriteString(line)
	}
	return []byte(b.String())
}

// TestYAMLBombsRefusedQuickly checks that hostile files are refused fast
// and in bounded memory: an alias bomb, and values nested 10,000 levels
// deep in each way YAML can nest. Time is bounded by a deadline, memory by
// the bytes the refusal allocated (the test does not run in parallel, so
// the allocation it measures is its own).
func TestYAMLBombsRefusedQuickly(t *testing.T) {
	const levels = 10_000
	var blockMaps, blockSeqs strings.Builder
	blockMaps.WriteString("version: 1\nname: deep\nnodes:\n")
	for i := 0; i < 3000; i++ { // 10,000 would pass the 8 MiB limit
		fmt.Fprintf(&blockMaps, "%sk%d:\n", strings.Repeat(" ", i+2), i)
	}
	blockSeqs.WriteString("version: 1\nname: deep\nnodes:\n  " + strings.Repeat("- ", levels) + "x\n")
	tests := []struct {
		name string
		src  []byte
		want string
	}{
		{"alias bomb, 2 MB, 120,000 aliases", aliasBomb("        - *lol8\n"), "more than 100000 aliases"},
		{"alias bomb, 2 MB, 65,000 aliases and comments", aliasBomb("        - *lol8 # lol lol lol lol\n"), "aliases expand to more than 100000 values"},
		{"10,000 nested flow lists", []byte("version: 1\nname: deep\nnodes: " + strings.Repeat("[", levels) + strings.Repeat("]", levels) + "\n"), "nesting is deeper than"},
		{"10,000 nested flow maps", []byte("version: 1\nname: deep\nnodes: " + strings.Repeat("{a: ", levels) + "1" + strings.Repeat("}", levels) + "\n"), "nesting is deeper than"},
		{"3,000 nested block maps", []byte(blockMaps.String()), "nesting is too deep"},
		{"10,000 nested block lists on one line", []byte(blockSeqs.String()), "nesting is too deep"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			w, ds := workflow.Decode("bomb.yaml", tc.src)
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d KiB refused in %v after allocating %d MiB", len(tc.src)>>10, elapsed, allocated>>20)

			require.Nil(t, w, "the file must not decode")
			require.Len(t, ds, 1)
			require.Contains(t, ds[0].Message, tc.want)
			require.Equal(t, "bomb.yaml", ds[0].File)
			require.NotZero(t, ds[0].Line, "the error names a line")
			// The allocation bound is the guard: an expanded bomb would
			// allocate gigabytes. Time is left to the benchmarks: a
			// loaded machine makes any wall-clock bound flaky.
			require.Less(t, allocated, uint64(100<<20), "refusing allocated %d MiB", allocated>>20)
		})
	}
}
