package workflow_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
	"github.com/skeinhq/skein/workflow"
)

// bigWorkflow generates a workflow of n nodes: a manual trigger, then a
// chain of shell, template, set and if nodes in which every node reads the
// output of the one before it, so validation checks n references.
func bigWorkflow(n int) map[string]any {
	nodes := []any{map[string]any{"id": "n0", "type": "trigger.manual"}}
	var edges []any
	for i := 1; i < n; i++ {
		id, prev := fmt.Sprintf("n%d", i), fmt.Sprintf("n%d", i-1)
		var nd map[string]any
		switch i % 3 {
		case 0:
			nd = map[string]any{"id": id, "type": "shell", "command": []any{"echo", "{{ " + prev + ".success }}"}, "timeout": "5s"}
		case 1:
			nd = map[string]any{"id": id, "type": "template", "text": "step " + id + " after {{ " + prev + ".success }}"}
		case 2:
			nd = map[string]any{"id": id, "type": "set", "values": map[string]any{"v": "{{ " + prev + ".text }}", "n": i}}
		}
		nodes = append(nodes, nd)
		edges = append(edges, map[string]any{"from": prev, "to": id})
	}
	return map[string]any{"version": 1, "name": "big", "nodes": nodes, "edges": edges}
}

func benchLoad(b *testing.B, file string, src []byte) {
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		w, ds := workflow.Decode(file, src)
		if w == nil {
			b.Fatal(ds.Error())
		}
		ds = append(ds, workflow.Validate(w, node.Default)...)
		if ds.HasErrors() {
			b.Fatal(ds.Error())
		}
	}
}

// BenchmarkLoad10k decodes and validates a generated 10,000-node workflow.
func BenchmarkLoad10k(b *testing.B) {
	b.Run("json", func(b *testing.B) {
		src, _ := json.Marshal(bigWorkflow(10000))
		benchLoad(b, "big.json", src)
	})
	b.Run("yaml", func(b *testing.B) {
		benchLoad(b, "big.yaml", workflow.BigYAML(10000))
	})
}

func BenchmarkValidate10k(b *testing.B) {
	src, _ := json.Marshal(bigWorkflow(10000))
	w, _ := workflow.Decode("big.json", src)
	b.ReportAllocs()
	for b.Loop() {
		if ds := workflow.Validate(w, node.Default); ds.HasErrors() {
			b.Fatal(ds.Error())
		}
	}
}

func BenchmarkDecodeYAML10k(b *testing.B) {
	src := workflow.BigYAML(10000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if w, ds := workflow.Decode("big.yaml", src); w == nil {
			b.Fatal(ds.Error())
		}
	}
}

// bigValues generates a workflow whose one set node, big, has n values.
// With aliased, every value is an alias (*v) of one anchored string, so the
// file holds n aliases; else each value is written out. With refs > 0, a
// second set node, use, reads refs of big's outputs, one a value.
func bigValues(n int, aliased bool, refs int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nname: big-values\nnodes:\n  - {id: start, type: trigger.manual}\n  - id: big\n    type: set\n    values:\n")
	if aliased {
		b.WriteString("      base: &v some text\n")
	}
	for i := range n {
		if aliased {
			fmt.Fprintf(&b, "      k%d: *v\n", i)
		} else {
			fmt.Fprintf(&b, "      k%d: value %d\n", i, i)
		}
	}
	if refs > 0 {
		b.WriteString("  - id: use\n    type: set\n    values:\n")
		for i := range refs {
			fmt.Fprintf(&b, "      r%d: \"{{ big.k%d }}\"\n", i, i%n)
		}
	}
	b.WriteString("edges:\n  - {from: start, to: big}\n")
	if refs > 0 {
		b.WriteString("  - {from: big, to: use}\n")
	}
	return []byte(b.String())
}

// BenchmarkValidateBigValues loads (decodes and validates) a set node with
// 10k, 40k and 160k values: written out, as aliases, and written out with
// a second set node reading as many of its outputs (10k and 40k: 160k
// would pass workflow.MaxFileSize). 160k aliases are more
// than workflow.MaxAliasValues: that file is refused, and the figure is
// the cost of refusing it.
func BenchmarkValidateBigValues(b *testing.B) {
	for _, kind := range []string{"values", "aliases", "references"} {
		for _, n := range []int{10_000, 40_000, 160_000} {
			aliased, refs := kind == "aliases", 0
			if kind == "references" {
				if n > 40_000 {
					continue // past workflow.MaxFileSize
				}
				refs = n
			}
			b.Run(fmt.Sprintf("%s/%dk", kind, n/1000), func(b *testing.B) {
				src := bigValues(n, aliased, refs)
				b.SetBytes(int64(len(src)))
				b.ReportAllocs()
				for b.Loop() {
					w, ds := workflow.Decode("big.yaml", src)
					if w != nil {
						ds = append(ds, workflow.Validate(w, node.Default)...)
					}
					if refused := aliased && n > workflow.MaxAliasValues; ds.HasErrors() != refused {
						b.Fatalf("errors: %v, want %v: %s", ds.HasErrors(), refused, ds.Error())
					}
				}
			})
		}
	}
}
