package schema_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/schema"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
)

var update = flag.Bool("update", false, "rewrite schema/workflow.schema.json and docs/nodes.md from the node kinds")

// repoRoot is where the generated files live, seen from this package.
const repoRoot = "../.."

func TestGeneratedFilesUpToDate(t *testing.T) {
	t.Parallel()

	js, err := schema.Generate(node.Default)
	require.NoError(t, err)
	md := schema.Markdown(node.Default)

	tests := []struct {
		name string
		path string
		got  []byte
	}{
		{"schema", filepath.Join(repoRoot, "schema", "workflow.schema.json"), js},
		{"docs", filepath.Join(repoRoot, "docs", "nodes.md"), []byte(md)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(tt.path), 0o755))
				require.NoError(t, os.WriteFile(tt.path, tt.got, 0o644))
				return
			}
			want, err := os.ReadFile(tt.path)
			require.NoError(t, err, "reading %s; create it with: go test ./internal/schema -update", tt.path)
			if !bytes.Equal(want, tt.got) {
				require.Failf(t, "generated file out of date",
					"%s does not match the node kinds (%s); refresh it with: go test ./internal/schema -update",
					tt.path, firstDiff(string(want), string(tt.got)))
			}
		})
	}
}

// firstDiff describes the first line where the committed text and the
// generated text part.
func firstDiff(committed, generated string) string {
	a, b := strings.Split(committed, "\n"), strings.Split(generated, "\n")
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y || i >= len(a) || i >= len(b) {
			return fmt.Sprintf("first difference at line %d: committed %q, generated %q", i+1, x, y)
		}
	}
	return "no difference"
}

func TestGenerateIsDeterministic(t *testing.T) {
	t.Parallel()

	first, err := schema.Generate(node.Default)
	require.NoError(t, err)
	for range 5 {
		again, err := schema.Generate(node.Default)
		require.NoError(t, err)
		require.True(t, bytes.Equal(first, again), "Generate gave different bytes for the same registry")
		require.Equal(t, schema.Markdown(node.Default), schema.Markdown(node.Default))
	}
}

// compile compiles a generated schema the way a consumer would.
func compile(t *testing.T, raw []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err, "the generated schema is not JSON")
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("https://skein.invalid/workflow.schema.json", doc))
	sch, err := c.Compile("https://skein.invalid/workflow.schema.json")
	require.NoError(t, err, "the generated schema does not compile")
	return sch
}

// validate checks one JSON document against sch.
func validate(t *testing.T, sch *jsonschema.Schema, src string) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(src))
	require.NoError(t, err, "test document is not JSON: %s", src)
	return sch.Validate(inst)
}

func TestSchemaValidatesWorkflows(t *testing.T) {
	t.Parallel()

	raw, err := schema.Generate(node.Default)
	require.NoError(t, err)
	sch := compile(t, raw)

	// wf wraps nodes and edges (JSON lists) into a workflow document.
	wf := func(nodes, edges string) string {
		return `{"version": 1, "name": "t", "nodes": ` + nodes + `, "edges": ` + edges + `}`
	}
	tests := []struct {
		name    string
		doc     string
		wantErr string // a part of the error; "" when the document is valid
	}{
		{"minimal", wf(`[{"id": "start", "type": "trigger.manual"}]`, `[]`), ""},
		{"unknown top-level key", `{"version": 1, "name": "t", "nodes": [{"id": "a", "type": "trigger.manual"}], "stages": []}`, "additional properties 'stages' not allowed"},
		{"an extension key holds anything", `{"version": 1, "name": "t", "x-defaults": {"retries": 2}, "x-notes": [1, "two"], "nodes": [{"id": "a", "type": "trigger.manual"}]}`, ""},
		{"missing version", `{"name": "t", "nodes": [{"id": "a", "type": "trigger.manual"}]}`, "missing property 'version'"},
		{"version 2", `{"version": 2, "name": "t", "nodes": [{"id": "a", "type": "trigger.manual"}]}`, "at '/version': value must be 1"},
		{"upper-case workflow name", `{"version": 1, "name": "Triage", "nodes": [{"id": "a", "type": "trigger.manual"}]}`, "'Triage' does not match pattern"},
		{"no nodes", `{"version": 1, "name": "t", "nodes": []}`, "at '/nodes': minItems"},
		{"full top level", `{
			"version": 1, "name": "triage-2", "description": "d",
			"inputs": {"city": {"type": "string", "required": true}, "days": {"type": "integer", "default": 3}, "note": "string", "any_one": null},
			"secrets": ["WEATHER_KEY"],
			"defaults": {"retries": 0, "retry_backoff": "1s", "timeout": "5m", "max_visits": 10, "on_error": "continue"},
			"mcp_servers": {"fs": {"command": "npx", "args": ["-y", "srv", 8080]}, "web": {"url": "http://127.0.0.1:8931/mcp"}},
			"llm": {"default": {"provider": "openai", "model": "gpt-4.1-mini", "api_key": "{{ secrets.K }}"}},
			"limits": {"max_tokens": 1000, "max_cost_usd": 0.5},
			"evidence": {"server": "fs", "tool": "shot", "arguments": {}},
			"delivery": {"url": "https://example.com/done", "secret": "{{ secrets.K }}", "events": ["completed", "failed"], "retries": 3, "retry_backoff": "2s", "timeout": "5s"},
			"nodes": [{"id": "a", "type": "trigger.manual"}],
			"edges": [],
			"outputs": {"summary": "{{ a.text }}", "n": 3}
		}`, ""},
		{"input with a bad type", `{"version": 1, "name": "t", "inputs": {"x": {"type": "float"}}, "nodes": [{"id": "a", "type": "trigger.manual"}]}`, "at '/inputs/x/type': value must be one of"},
		{"input with an unknown key", `{"version": 1, "name": "t", "inputs": {"x": {"type": "string", "optional": true}}, "nodes": [{"id": "a", "type": "trigger.manual"}]}`, "additional properties 'optional' not allowed"},
		{"input name not an identifier", `{"version": 1, "name": "t", "inputs": {"City": {"type": "string"}}, "nodes": [{"id": "a", "type": "trigger.manual"}]}`, "invalid propertyName 'City'"},
		{"mcp server with command and url", `{"version": 1, "name": "t", "mcp_servers": {"x": {"command": "a", "url": "http://b"}}, "nodes": [{"id": "a", "type": "trigger.manual"}]}`, "at '/mcp_servers/x': 'oneOf' failed"},
		{"mcp server with neither", `{"version": 1, "name": "t", "mcp_servers": {"x": {"args": ["a"]}}, "nodes": [{"id": "a", "type": "trigger.manual"}]}`, "at '/mcp_servers/x': 'oneOf' failed"},
		{"unknown provider", `{"version": 1, "name": "t", "llm": {"default": {"provider": "acme"}}, "nodes": [{"id": "a", "type": "trigger.manual"}]}`, "at '/llm/default/provider': value must be one of"},
		{"delivery without a secret", `{"version": 1, "name": "t", "delivery": {"url": "https://x"}, "nodes": [{"id": "a", "type": "trigger.manual"}]}`, "missing property 'secret'"},
		{"delivery of an unknown event", `{"version": 1, "name": "t", "delivery": {"url": "https://x", "secret": "whsec_x", "events": ["done"]}, "nodes": [{"id": "a", "type": "trigger.manual"}]}`, "at '/delivery/events/0': value must be one of"},
		{"defaults retries over 10", `{"version": 1, "name": "t", "defaults": {"retries": 11}, "nodes": [{"id": "a", "type": "trigger.manual"}]}`, "at '/defaults/retries': maximum"},

		{"shell with an argv list", wf(`[{"id": "s", "type": "shell", "command": ["echo", "hi"], "timeout": "5s"}]`, `[]`), ""},
		{"shell without command", wf(`[{"id": "s", "type": "shell"}]`, `[]`), "missing property 'command'"},
		{"unknown node parameter", wf(`[{"id": "s", "type": "shell", "command": ["echo"], "comand": ["echo"]}]`, `[]`), "additional properties 'comand' not allowed"},
		{"parameter of another kind", wf(`[{"id": "s", "type": "shell", "command": ["echo"], "url": "http://x"}]`, `[]`), "additional properties 'url' not allowed"},
		{"unknown node type", wf(`[{"id": "s", "type": "shel"}]`, `[]`), "at '/nodes/0/type': value must be one of"},
		{"node without type", wf(`[{"id": "s"}]`, `[]`), "missing property 'type'"},
		{"node id Bad-Id", wf(`[{"id": "Bad-Id", "type": "trigger.manual"}]`, `[]`), "'Bad-Id' does not match pattern '^[a-z_][a-z0-9_]*$'"},
		{"node id starting with a digit", wf(`[{"id": "1a", "type": "trigger.manual"}]`, `[]`), "'1a' does not match pattern"},
		{"node id of 65 characters", wf(`[{"id": "`+strings.Repeat("a", 65)+`", "type": "trigger.manual"}]`, `[]`), "at '/nodes/0/id': maxLength"},
		{"node id of 64 characters", wf(`[{"id": "`+strings.Repeat("a", 64)+`", "type": "trigger.manual"}]`, `[]`), ""},
		{"common fields", wf(`[{"id": "h", "type": "http", "url": "https://x", "name": "H", "description": "d", "disabled": false,
			"retries": 3, "retry_backoff": 2, "timeout": "1m30s", "on_error": "route", "max_visits": 5, "expect": "ok",
			"checks": [{"name": "c", "type": "expr", "expr": "h.status == 200", "on_fail": "warn"}, {"type": "contains", "value": "x"}]}]`, `[]`), ""},
		{"bad on_error", wf(`[{"id": "h", "type": "http", "url": "https://x", "on_error": "ignore"}]`, `[]`), "at '/nodes/0/on_error': value must be one of"},
		{"bad duration", wf(`[{"id": "h", "type": "http", "url": "https://x", "timeout": "soon"}]`, `[]`), "'soon' does not match pattern"},
		{"duration in days", wf(`[{"id": "w", "type": "wait", "duration": "2d"}]`, `[]`), ""},
		{"unknown check type", wf(`[{"id": "h", "type": "http", "url": "https://x", "checks": [{"type": "exprs", "expr": "true"}]}]`, `[]`), "at '/nodes/0/checks/0/type': value must be one of"},
		{"check key of another type", wf(`[{"id": "h", "type": "http", "url": "https://x", "checks": [{"type": "expr", "expr": "true", "pattern": "x"}]}]`, `[]`), "additional properties 'pattern' not allowed"},
		{"check without its key", wf(`[{"id": "h", "type": "http", "url": "https://x", "checks": [{"type": "regex"}]}]`, `[]`), "missing property 'pattern'"},

		{"http method from the enum", wf(`[{"id": "h", "type": "http", "url": "https://x", "method": "POST"}]`, `[]`), ""},
		{"http method outside the enum", wf(`[{"id": "h", "type": "http", "url": "https://x", "method": "FETCH"}]`, `[]`), "at '/nodes/0/method'"},
		{"http method as a template", wf(`[{"id": "h", "type": "http", "url": "https://x", "method": "{{ inputs.m }}"}]`, `[]`), ""},
		{"plain enum refuses a template", wf(`[{"id": "m", "type": "merge", "wait": "{{ inputs.w }}"}]`, `[]`), "at '/nodes/0/wait': value must be one of 'all', 'any'"},
		{"integer as a template", wf(`[{"id": "s", "type": "shell", "command": ["a"], "max_output": "{{ inputs.n }}"}]`, `[]`), ""},
		{"integer as its text", wf(`[{"id": "s", "type": "shell", "command": ["a"], "max_output": " 42 "}]`, `[]`), ""},
		{"integer as other text", wf(`[{"id": "s", "type": "shell", "command": ["a"], "max_output": "ten"}]`, `[]`), "at '/nodes/0/max_output'"},
		{"bounded integer refuses a template", wf(`[{"id": "l", "type": "loop", "max_iterations": "{{ inputs.n }}"}]`, `[]`), "at '/nodes/0/max_iterations'"},
		{"string parameter takes a number", wf(`[{"id": "t", "type": "template", "text": 3}]`, `[]`), ""},
		{"boolean as its text", wf(`[{"id": "s", "type": "shell", "command": ["a"], "shell": "True"}]`, `[]`), ""},
		{"boolean as a template", wf(`[{"id": "s", "type": "shell", "command": ["a"], "shell": "{{ inputs.sh }}"}]`, `[]`), ""},
		{"boolean as a number", wf(`[{"id": "s", "type": "shell", "command": ["a"], "shell": 1}]`, `[]`), "got number, want boolean"},
		{"switch cases", wf(`[{"id": "sw", "type": "switch", "cases": [{"name": "big", "condition": "inputs.n > 10"}]}]`, `[]`), ""},
		{"switch case with an unknown key", wf(`[{"id": "sw", "type": "switch", "cases": [{"name": "big", "condition": "true", "when": "x"}]}]`, `[]`), "additional properties 'when' not allowed"},
		{"switch case without condition", wf(`[{"id": "sw", "type": "switch", "cases": [{"name": "big"}]}]`, `[]`), "missing property 'condition'"},

		{"if edge with on: true", wf(`[{"id": "c", "type": "if", "condition": "true"}, {"id": "a", "type": "template", "text": "x"}]`,
			`[{"from": "c", "to": "a", "on": true}]`), ""},
		{"edge with on as a string", wf(`[{"id": "c", "type": "if", "condition": "true"}, {"id": "a", "type": "template", "text": "x"}]`,
			`[{"from": "c", "to": "a", "on": "false"}]`), ""},
		{"edge without to", wf(`[{"id": "c", "type": "trigger.manual"}]`, `[{"from": "c"}]`), "missing property 'to'"},
		{"edge with an unknown key", wf(`[{"id": "c", "type": "trigger.manual"}]`, `[{"from": "c", "to": "c", "when": "x"}]`), "additional properties 'when' not allowed"},
		{"edge with on as a list", wf(`[{"id": "c", "type": "trigger.manual"}]`, `[{"from": "c", "to": "c", "on": ["a"]}]`), "at '/edges/0/on': got array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := validate(t, sch, tt.doc)
			if tt.wantErr == "" {
				require.NoError(t, err, "expected the document to be valid")
				return
			}
			require.Error(t, err, "expected the document to be rejected")
			require.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// TestParamTypes checks how each declared parameter type appears in the
// schema, with a private registry holding one kind that has them all.
func TestParamTypes(t *testing.T) {
	t.Parallel()

	reg := node.NewRegistry()
	reg.MustRegister(node.Spec{
		Kind: "every", Category: node.Action,
		Params: []node.Param{
			{Name: "s", Type: node.String},
			{Name: "plain", Type: node.String, NoTemplate: true},
			{Name: "cond", Type: node.String, Expr: true},
			{Name: "i", Type: node.Int},
			{Name: "bounded", Type: node.Int, Min: 1, Max: 5},
			{Name: "n", Type: node.Number},
			{Name: "b", Type: node.Bool},
			{Name: "d", Type: node.Duration},
			{Name: "plain_d", Type: node.Duration, NoTemplate: true},
			{Name: "ss", Type: node.Strings},
			{Name: "l", Type: node.List},
			{Name: "m", Type: node.Map},
			{Name: "plain_m", Type: node.Map, NoTemplate: true},
			{Name: "a", Type: node.Any},
			{Name: "e", Type: node.String, Enum: []string{"x", "y"}},
			{Name: "objs", Type: node.List, Items: []node.Param{
				{Name: "k", Type: node.String, Required: true},
				{Name: "v", Type: node.Int},
			}},
		},
	}, nil)
	raw, err := schema.Generate(reg)
	require.NoError(t, err)
	sch := compile(t, raw)

	tests := []struct {
		name  string
		param string
		value string // JSON
		valid bool
	}{
		{"string", "s", `"hello"`, true},
		{"string template", "s", `"{{ a.b }}"`, true},
		{"string given a number", "s", `1`, true},
		{"string given an object", "s", `{"a": 1}`, true},
		{"string given null", "s", `null`, false},
		{"plain string", "plain", `"x"`, true},
		{"expression", "cond", `"a.b > 1"`, true},
		{"integer", "i", `3`, true},
		{"integer written as 3.0", "i", `3.0`, true},
		{"integer given a fraction", "i", `3.5`, false},
		{"integer template", "i", `"{{ inputs.n }}"`, true},
		{"integer given its text", "i", `"3"`, true},
		{"integer given other text", "i", `"three"`, false},
		{"bounded integer", "bounded", `5`, true},
		{"bounded integer below", "bounded", `0`, false},
		{"bounded integer above", "bounded", `6`, false},
		{"bounded integer template", "bounded", `"{{ inputs.n }}"`, true},
		{"number", "n", `0.5`, true},
		{"number template", "n", `"{{ x }}"`, true},
		{"boolean", "b", `true`, true},
		{"boolean template", "b", `"{{ x }}"`, true},
		{"boolean given text", "b", `"yes"`, false},
		{"duration text", "d", `"1h30m"`, true},
		{"duration milliseconds", "d", `"500ms"`, true},
		{"duration fraction", "d", `"1.5h"`, true},
		{"duration seconds", "d", `30`, true},
		{"duration seconds as text", "d", `"30"`, true},
		{"duration negative", "d", `-1`, false},
		{"duration template", "d", `"{{ inputs.wait }}"`, true},
		{"duration nonsense", "d", `"soon"`, false},
		{"plain duration refuses a template", "plain_d", `"{{ x }}"`, false},
		{"strings", "ss", `["a", "{{ b }}"]`, true},
		{"strings with a number", "ss", `["a", 1]`, true},
		{"strings given one string", "ss", `"a"`, true},
		{"strings given a map", "ss", `{"a": 1}`, false},
		{"strings template", "ss", `"{{ x.list }}"`, true},
		{"list", "l", `[1, "a", {}]`, true},
		{"list given a map", "l", `{}`, false},
		{"map", "m", `{"k": 1}`, true},
		{"map template", "m", `"{{ x }}"`, true},
		{"map given text", "m", `"k=1"`, false},
		{"plain map refuses a template", "plain_m", `"{{ x }}"`, false},
		{"any", "a", `[{"x": null}]`, true},
		{"enum", "e", `"y"`, true},
		{"enum miss", "e", `"z"`, false},
		{"enum template", "e", `"{{ x }}"`, true},
		{"items", "objs", `[{"k": "a", "v": 1}, {"k": "b"}]`, true},
		{"items missing a required field", "objs", `[{"v": 1}]`, false},
		{"items with an unknown field", "objs", `[{"k": "a", "w": 1}]`, false},
		{"items field typed", "objs", `[{"k": "a", "v": "x"}]`, false},
		{"items as a template", "objs", `"{{ x }}"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := `{"version": 1, "name": "t", "nodes": [{"id": "n", "type": "every", "` + tt.param + `": ` + tt.value + `}]}`
			err := validate(t, sch, doc)
			if tt.valid {
				require.NoError(t, err, "expected %s: %s to be valid", tt.param, tt.value)
			} else {
				require.Error(t, err, "expected %s: %s to be rejected", tt.param, tt.value)
			}
		})
	}
}

func TestGenerateRejectsUndescribableSpecs(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		param   node.Param
		wantErr string
	}{
		{"unknown type", node.Param{Name: "x", Type: "float"}, `parameter "x" has unknown type "float"`},
		{"enum on an integer", node.Param{Name: "x", Type: node.Int, Enum: []string{"1"}}, `an enum needs type string`},
		{"name of a common field", node.Param{Name: "timeout", Type: node.Duration}, `has the name of a common node field`},
		{"item of unknown type", node.Param{Name: "x", Type: node.List, Items: []node.Param{{Name: "y", Type: "date"}}}, `parameter "y" has unknown type "date"`},
		{"item field twice", node.Param{Name: "x", Type: node.List, Items: []node.Param{{Name: "y", Type: node.Int}, {Name: "y", Type: node.Int}}}, `item field "y" twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg := node.NewRegistry()
			reg.MustRegister(node.Spec{Kind: "bad", Category: node.Action, Params: []node.Param{tt.param}}, nil)
			_, err := schema.Generate(reg)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.wantErr)
			require.Contains(t, err.Error(), `kind "bad"`)
		})
	}
}

func TestMarkdown(t *testing.T) {
	t.Parallel()

	reg := node.NewRegistry()
	reg.MustRegister(node.Spec{
		Kind: "pick", Category: node.Control, Description: "Picks a way.",
		Params: []node.Param{
			{Name: "ways", Type: node.List, Required: true, Description: "The ways | in order.", Items: []node.Param{
				{Name: "name", Type: node.String, Required: true, NoTemplate: true},
			}},
			{Name: "mode", Type: node.String, Default: "fast", Enum: []string{"fast", "slow"}},
			{Name: "when", Type: node.String, Expr: true},
		},
		Handles: []string{"other"}, DynamicHandles: func(map[string]any) []string { return nil }, DynamicHandlesDoc: "one per case name", FallThrough: "other",
		Outputs: []string{"way"},
	}, nil)
	reg.MustRegister(node.Spec{Kind: "act", Category: node.Action, Routes: true}, nil)
	reg.MustRegister(node.Spec{Kind: "stop", Category: node.Control, Handles: []string{}, Outputs: []string{}}, nil)
	reg.MustRegister(node.Spec{Kind: "go", Category: node.Trigger}, nil)
	reg.MustRegister(node.Spec{Kind: "odd", Category: "custom"}, nil)

	md := schema.Markdown(reg)

	tests := []struct {
		name string
		want string
	}{
		{"generated note", "`go test ./internal/schema -update`"},
		{"common field", "| `retries` | integer (0–10) |"},
		{"kind heading", "### `pick`\n\nPicks a way.\n"},
		{"required list param with items", "| `ways` | list of {name} | yes |  | The ways \\| in order. |"},
		{"item row", "| `ways[].name` | string (plain) | yes |  |  |"},
		{"enum and default", "| `mode` | `fast` \\| `slow` |  | `\"fast\"` |  |"},
		{"expression", "| `when` | expression |"},
		{"dynamic handles", "**Handles:** one per case name, `other`."},
		{"fall-through", "**When disabled:** follows `other`."},
		{"outputs", "**Outputs:** `way`."},
		{"action handles", "**Handles:** default (an edge without `on`); `error` when `on_error: route`, or any handle the node returns as `_route`."},
		{"undeclared outputs", "**Outputs:** not declared; any port may be referenced."},
		{"no handles", "**Handles:** none: no edge leaves this node."},
		{"no outputs", "**Outputs:** none."},
		{"no parameters", "### `go`\n\nNo parameters.\n"},
		{"unknown category last", "\n## custom\n\n### `odd`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Contains(t, md, tt.want)
		})
	}

	t.Run("categories in order", func(t *testing.T) {
		t.Parallel()
		var at []int
		for _, h := range []string{"## Common fields", "## Triggers", "## Control", "## Actions", "## custom"} {
			i := strings.Index(md, "\n"+h+"\n")
			require.GreaterOrEqual(t, i, 0, "missing heading %q", h)
			at = append(at, i)
		}
		require.IsIncreasing(t, at, "sections out of order")
		require.NotContains(t, md, "## Data", "a category without kinds gets no section")
	})
}
