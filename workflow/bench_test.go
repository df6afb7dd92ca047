package workflow_test

import (
	"encoding/json"
	"fmt"
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
