package edit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinhq/skein/workflow"
)

// TestSpansStartWhereTheDecoderSaysValuesStart checks, over the example
// workflows, that every node and parameter span starts at the line and
// column workflow.Decode reports for it: the editor writes where the
// decoder reads.
func TestSpansStartWhereTheDecoderSaysValuesStart(t *testing.T) {
	t.Parallel()
	var files []string
	for _, pattern := range []string{"*.yaml", "*.json", "sub/*.json", "tour/*.yaml"} {
		m, _ := filepath.Glob(filepath.Join("../../examples", pattern))
		files = append(files, m...)
	}
	checked := 0
	for _, file := range files {
		if strings.HasSuffix(file, ".test.yaml") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		w, ds := workflow.Decode(file, src)
		if w == nil {
			t.Fatalf("%s: %v", file, ds)
		}
		d, err := parse(src, file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		// The decoder places a YAML map at its first key.
		pos := func(t *tnode) workflow.Pos {
			off := t.start
			if t.kind == 'm' && len(t.entries) > 0 && !d.json {
				off = t.entries[0].kstart
			}
			return workflow.Pos{Line: d.lineOf(off) + 1, Col: d.colOf(off) + 1}
		}
		for _, it := range d.nodeList().items {
			id, _ := idOf(it.val)
			n := w.Node(id)
			if n == nil {
				t.Fatalf("%s: the decoder has no node %q", file, id)
			}
			if got := pos(it.val); got != n.Pos {
				t.Errorf("%s: node %s starts at %v, the decoder says %v", file, id, got, n.Pos)
			}
			for _, e := range it.val.entries {
				if _, ok := n.Params[e.key]; !ok || e.val.empty {
					continue
				}
				if got := pos(e.val); got != n.ParamPos(e.key) {
					t.Errorf("%s: %s.%s starts at %v, the decoder says %v", file, id, e.key, got, n.ParamPos(e.key))
				}
				checked++
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d parameters", checked)
	}
}
