package workflow_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// FuzzDecode feeds arbitrary bytes to the decoders and the validator: they
// must return diagnostics, never panic, and every error must carry the file
// name.
func FuzzDecode(f *testing.F) {
	for _, pattern := range []string{"../examples/*.yaml", "../examples/*.json", "testdata/invalid/*.yaml", "testdata/invalid/*.json"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if src, err := os.ReadFile(file); err == nil {
				f.Add(src, filepath.Ext(file) == ".json")
			}
		}
	}
	f.Add([]byte("version: 1\nname: x\nnodes: [{id: a, type: if, condition: 'a.b'}]\n"), false)
	f.Add([]byte(`{"version":1,"name":"x","nodes":[{"id":"a","type":"set","values":{"k":"{{ a }}"}}]}`), true)
	// YAML slips, whose errors are placed and explained (yamlerr.go).
	for _, src := range []string{
		"nodes:\n  - id: a\n    type: set\n   on_error: x\n",
		"nodes:\n  - id: a\n    values:\n      x: {{ a }} b\n",
		"nodes:\n  - id: a\n      type: set\n",
		"nodes:\n  - id: a\n    text: \"x\" y\n",
		"nodes: [{id: a\n",
		"a: @b\n- c\n",
	} {
		f.Add([]byte(src), false)
	}
	f.Fuzz(func(t *testing.T, src []byte, isJSON bool) {
		name := "fuzz.yaml"
		if isJSON {
			name = "fuzz.json"
		}
		w, ds := workflow.Decode(name, src)
		if w != nil {
			ds = append(ds, workflow.Validate(w, node.Default)...)
			_ = w.Graph()
		}
		for _, d := range ds {
			if d.File != name {
				t.Fatalf("diagnostic without the file name: %+v", d)
			}
			if d.Message == "" {
				t.Fatalf("diagnostic without a message: %+v", d)
			}
		}
	})
}
