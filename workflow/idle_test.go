package workflow_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// validateText decodes and validates a workflow held in a string.
func validateText(t *testing.T, src string) (*workflow.Workflow, workflow.Diagnostics) {
	t.Helper()
	w, ds := workflow.Decode("flow.yaml", []byte(src))
	require.NotNil(t, w, "%v", ds)
	ds = append(ds, workflow.Validate(w, node.Default)...)
	ds.Sort()
	return w, ds
}

// diagnosticOf returns the one diagnostic of node id whose message holds
// part.
func diagnosticOf(t *testing.T, ds workflow.Diagnostics, id, part string) workflow.Diagnostic {
	t.Helper()
	var found []workflow.Diagnostic
	for _, d := range ds {
		if d.Node == id && strings.Contains(d.Message, part) {
			found = append(found, d)
		}
	}
	require.Len(t, found, 1, "diagnostics of node %s with %q in:\n%s", id, part, diagLines(ds))
	return found[0]
}

// The problems of a node no run reaches, or of a disabled node, are
// warnings that say why they are ignored, at the same line:col; the same
// node reached and enabled has them as errors.
func TestIdleNodeProblemsAreWarnings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		node string
		part string // of the problem's message
		sev  workflow.Severity
		why  string // what the warning adds; "" for an error
		at   string // line:col
	}{
		{
			name: "unreachable node with a missing parameter",
			src: `version: 1
name: half
nodes:
  - {id: start, type: trigger.manual}
  - {id: done, type: set, values: {ok: true}}
  - id: later
    type: http
edges:
  - {from: start, to: done}
`,
			node: "later", part: `needs parameter "url"`, sev: workflow.Warning,
			why: "; ignored because no run reaches the node from any trigger", at: "6:5",
		},
		{
			name: "the same node reached",
			src: `version: 1
name: half
nodes:
  - {id: start, type: trigger.manual}
  - {id: done, type: set, values: {ok: true}}
  - id: later
    type: http
edges:
  - {from: start, to: done}
  - {from: done, to: later}
`,
			node: "later", part: `needs parameter "url"`, sev: workflow.Error, at: "6:5",
		},
		{
			name: "disabled node with a bad expression",
			src: `version: 1
name: half
nodes:
  - {id: start, type: trigger.manual}
  - id: gate
    type: if
    disabled: true
    condition: "start.x >"
  - {id: done, type: set, values: {ok: true}}
edges:
  - {from: start, to: gate}
  - {from: gate, to: done, on: "false"}
`,
			node: "gate", part: "condition does not parse", sev: workflow.Warning,
			why: "; ignored because the node is disabled", at: "8:25",
		},
		{
			name: "the same node enabled",
			src: `version: 1
name: half
nodes:
  - {id: start, type: trigger.manual}
  - id: gate
    type: if
    condition: "start.x >"
  - {id: done, type: set, values: {ok: true}}
edges:
  - {from: start, to: gate}
  - {from: gate, to: done, on: "false"}
`,
			node: "gate", part: "condition does not parse", sev: workflow.Error, at: "7:25",
		},
		{
			name: "disabled node reading a node that does not exist",
			src: `version: 1
name: half
nodes:
  - {id: start, type: trigger.manual}
  - {id: draft, type: template, text: "{{ nosuch.text }}", disabled: true}
edges:
  - {from: start, to: draft}
`,
			node: "draft", part: `there is no node "nosuch"`, sev: workflow.Warning,
			why: "; ignored because the node is disabled", at: "5:43",
		},
		{
			// A run flows through a disabled node by its fall-through
			// handle, so what comes after it runs.
			name: "node after a disabled node",
			src: `version: 1
name: half
nodes:
  - {id: start, type: trigger.manual}
  - {id: off, type: set, values: {x: 1}, disabled: true}
  - id: fetch
    type: http
edges:
  - {from: start, to: off}
  - {from: off, to: fetch}
`,
			node: "fetch", part: `needs parameter "url"`, sev: workflow.Error, at: "6:5",
		},
		{
			// A disabled if follows only its false handle.
			name: "node past a disabled node's other handle",
			src: `version: 1
name: half
nodes:
  - {id: start, type: trigger.manual}
  - {id: gate, type: if, condition: "true", disabled: true}
  - id: fetch
    type: http
  - {id: done, type: set, values: {ok: true}}
edges:
  - {from: start, to: gate}
  - {from: gate, to: fetch, on: "true"}
  - {from: gate, to: done, on: "false"}
`,
			node: "fetch", part: `needs parameter "url"`, sev: workflow.Warning,
			why: `; ignored because the node is reached only past disabled node "gate", which follows only its "false" handle`, at: "6:5",
		},
		{
			name: "disabled node naming an undeclared model",
			src: `version: 1
name: half
llm:
  fast: {provider: openai, model: gpt-4o-mini}
nodes:
  - {id: start, type: trigger.manual}
  - {id: ask, type: llm, prompt: hi, model: slow, disabled: true}
edges:
  - {from: start, to: ask}
`,
			node: "ask", part: `model "slow" is not declared`, sev: workflow.Warning,
			why: "; ignored because the node is disabled", at: "7:45",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, ds := validateText(t, tc.src)
			d := diagnosticOf(t, ds, tc.node, tc.part)
			require.Equal(t, string(tc.sev), string(d.Severity), d.String())
			require.Equal(t, tc.at, workflow.Pos{Line: d.Line, Col: d.Col}.String(), d.String())
			if tc.sev == workflow.Error {
				require.True(t, ds.HasErrors())
				require.NotContains(t, d.Message, "ignored")
				require.Empty(t, w.Ignored())
				return
			}
			require.False(t, ds.HasErrors(), "%s", diagLines(ds))
			require.True(t, strings.HasSuffix(d.Message, tc.why), d.Message)
			require.Equal(t, workflow.Diagnostics{d}, w.Ignored())
		})
	}
}

// Every problem of an unreachable node's own settings is a warning: an
// unknown key, a mistyped parameter, an undeclared input or MCP server.
func TestIdleNodeEveryOwnProblemIsAWarning(t *testing.T) {
	t.Parallel()
	w, ds := validateText(t, `version: 1
name: half
nodes:
  - {id: start, type: trigger.manual}
  - {id: done, type: set, values: {ok: true}}
  - id: later
    type: mcp
    server: nosuch
    tool: "{{ inputs.tool }}"
    argz: {}
  - {id: pause, type: wait, duration: often}
edges:
  - {from: start, to: done}
  - {from: later, to: pause}
`)
	require.False(t, ds.HasErrors(), "%s", diagLines(ds))
	const why = "; ignored because no run reaches the node from any trigger"
	for _, c := range []struct{ node, part, at string }{
		{"later", `node uses MCP server "nosuch", which mcp_servers does not declare`, "8:13"},
		{"later", `tool reads inputs.tool, but no input "tool" is declared`, "9:15"},
		{"later", `unknown key "argz" for node type mcp`, "10:5"},
		{"pause", `parameter "duration" of wait`, "11:39"},
	} {
		d := diagnosticOf(t, ds, c.node, c.part)
		require.Equal(t, string(workflow.Warning), string(d.Severity), d.String())
		require.Equal(t, c.at, workflow.Pos{Line: d.Line, Col: d.Col}.String(), d.String())
		require.True(t, strings.HasSuffix(d.Message, why), d.Message)
		require.Contains(t, w.Ignored(), d)
	}
}

// Problems that shape the graph stay errors in a node that never runs.
func TestIdleNodeStructuralProblemsStayErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, part string
	}{
		{
			name: "unknown node type",
			src: `version: 1
name: half
nodes:
  - {id: start, type: trigger.manual}
  - {id: later, type: htpp, disabled: true}
`,
			part: `unknown node type "htpp"`,
		},
		{
			name: "duplicate id",
			src: `version: 1
name: half
nodes:
  - {id: start, type: trigger.manual}
  - {id: start, type: set, values: {x: 1}, disabled: true}
`,
			part: `duplicate node id "start"`,
		},
		{
			name: "edge to an unknown node",
			src: `version: 1
name: half
nodes:
  - {id: start, type: trigger.manual}
  - {id: later, type: set, values: {x: 1}, disabled: true}
edges:
  - {from: later, to: nowhere}
`,
			part: `edge to unknown node "nowhere"`,
		},
		{
			name: "a handle the node does not have",
			src: `version: 1
name: half
nodes:
  - {id: start, type: trigger.manual}
  - {id: later, type: if, condition: "true"}
  - {id: next, type: set, values: {x: 2}}
edges:
  - {from: later, to: next, on: maybe}
`,
			part: `has no handle "maybe"`,
		},
		{
			name: "a disabled trigger's parameter",
			src: `version: 1
name: half
nodes:
  - {id: tick, type: trigger.schedule, disabled: true}
  - {id: later, type: set, values: {x: 1}}
edges:
  - {from: tick, to: later}
`,
			part: `needs parameter "cron"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, ds := validateText(t, tc.src)
			var found bool
			for _, d := range ds.Errors() {
				found = found || strings.Contains(d.Message, tc.part)
			}
			require.True(t, found, "no error with %q in:\n%s", tc.part, diagLines(ds))
		})
	}
}
