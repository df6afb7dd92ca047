package schema_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/skeinhq/skein/internal/schema"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// TestSchemaAgreesWithValidator feeds the same documents to the schema and
// to workflow.Validate. A file the validator accepts must pass the schema
// (an editor must never flag a good file); the rejections listed here are
// ones both make.
func TestSchemaAgreesWithValidator(t *testing.T) {
	t.Parallel()

	raw, err := schema.Generate(node.Default)
	require.NoError(t, err)
	sch := compile(t, raw)

	wf := func(nodes, edges string) string {
		return `{"version": 1, "name": "t", "nodes": ` + nodes + `, "edges": ` + edges + `}`
	}
	tests := []struct {
		name  string
		doc   string
		valid bool
	}{
		{"minimal", wf(`[{"id": "start", "type": "trigger.manual"}]`, `[]`), true},
		{"shell argv", wf(`[{"id": "s", "type": "shell", "command": ["echo", "hi"], "timeout": "5s", "retries": 2}]`, `[]`), true},
		{"if with boolean edge labels", wf(`[{"id": "c", "type": "if", "condition": "1 > 0"}, {"id": "a", "type": "template", "text": "y"}, {"id": "b", "type": "template", "text": "n"}]`,
			`[{"from": "c", "to": "a", "on": true}, {"from": "c", "to": "b", "on": false}]`), true},
		{"templated enum and integer", `{"version": 1, "name": "t", "inputs": {"m": {"type": "string", "default": "GET"}, "n": "integer"},
			"nodes": [{"id": "h", "type": "http", "url": "https://example.com", "method": "{{ inputs.m }}", "max_body": "{{ inputs.n }}"}]}`, true},
		{"unknown top-level key", `{"version": 1, "name": "t", "nodes": [{"id": "a", "type": "trigger.manual"}], "stages": []}`, false},
		{"unknown parameter", wf(`[{"id": "s", "type": "shell", "command": ["echo"], "comand": ["echo"]}]`, `[]`), false},
		{"bad node id", wf(`[{"id": "Bad-Id", "type": "trigger.manual"}]`, `[]`), false},
		{"missing required parameter", wf(`[{"id": "h", "type": "http"}]`, `[]`), false},
		{"value outside an enum", wf(`[{"id": "m", "type": "merge", "wait": "some"}]`, `[]`), false},
		{"bad duration", wf(`[{"id": "s", "type": "shell", "command": ["a"], "timeout": "soon"}]`, `[]`), false},
		{"bad workflow name", `{"version": 1, "name": "My Flow", "nodes": [{"id": "a", "type": "trigger.manual"}]}`, false},
		{"integer given text", wf(`[{"id": "l", "type": "loop", "max_iterations": "ten"}]`, `[]`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, ds := workflow.Decode("t.json", []byte(tt.doc))
			if w != nil {
				ds = append(ds, workflow.Validate(w, node.Default)...)
			}
			require.Equal(t, tt.valid, !ds.HasErrors(), "workflow.Validate: %v", ds)
			err := validate(t, sch, tt.doc)
			if tt.valid {
				require.NoError(t, err, "the validator accepts the document; the schema must too")
			} else {
				require.Error(t, err, "the validator rejects the document; so should the schema")
			}
		})
	}
}

// TestSchemaAcceptsExamples checks every example workflow the validator
// accepts against the schema.
func TestSchemaAcceptsExamples(t *testing.T) {
	t.Parallel()

	raw, err := schema.Generate(node.Default)
	require.NoError(t, err)
	sch := compile(t, raw)

	files, err := filepath.Glob(filepath.Join(repoRoot, "examples", "*.yaml"))
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, ".test.yaml") {
			continue // a workflow's tests (skein test), not a workflow
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			if _, ds := workflow.Load(f, node.Default); ds.HasErrors() {
				t.Skipf("the validator rejects %s: %v", f, ds)
			}
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			var doc any
			require.NoError(t, yaml.Unmarshal(src, &doc))
			js, err := json.Marshal(doc)
			require.NoError(t, err)
			require.NoError(t, validate(t, sch, string(js)), "%s passes workflow.Validate but not the schema", f)
		})
	}
}
