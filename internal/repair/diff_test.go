package repair_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/repair"
	"github.com/skeinhq/skein/workflow"
)

const diffBase = `version: 1
name: api
inputs:
  base: {type: string, default: "http://127.0.0.1:1"}
nodes:
  - id: fetch
    type: http
    url: "{{ inputs.base }}/items"
    query: {region: eu-west, page: 1}
  - id: run
    type: shell
    command: [echo, "{{ fetch.body }}"]
  - id: done
    type: template
    text: ok
edges:
  - {from: fetch, to: run}
  - {from: run, to: done}
outputs:
  result: "{{ done.text }}"
`

func mustDecode(t *testing.T, src string) *workflow.Workflow {
	t.Helper()
	w, ds := workflow.Decode("api.yaml", []byte(src))
	require.NotNil(t, w, ds.Error())
	require.False(t, ds.HasErrors(), ds.Error())
	return w
}

func TestDiff(t *testing.T) {
	t.Parallel()
	edit := func(pairs ...string) string {
		s := diffBase
		for i := 0; i < len(pairs); i += 2 {
			require.Contains(t, s, pairs[i])
			s = strings.Replace(s, pairs[i], pairs[i+1], 1)
		}
		return s
	}
	tests := []struct {
		name string
		new  string
		want []string
	}{
		{"nothing", diffBase, []string{}},
		{"layout and comments only", strings.Replace(diffBase, "nodes:\n", "# the nodes\nnodes:\n", 1), []string{}},
		{"a parameter", edit(`url: "{{ inputs.base }}/items"`, `url: "{{ inputs.base }}/v2/items"`),
			[]string{`node fetch: url: "{{ inputs.base }}/items" → "{{ inputs.base }}/v2/items"`}},
		{"nested parameters", edit("query: {region: eu-west, page: 1}", "query: {region: eu, limit: 10}"), []string{
			`node fetch: query.limit: added 10`,
			`node fetch: query.page: removed (was 1)`,
			`node fetch: query.region: "eu-west" → "eu"`,
		}},
		{"a list element", edit(`command: [echo, "{{ fetch.body }}"]`, `command: [echo, "{{ fetch.body.items }}"]`),
			[]string{`node run: command[1]: "{{ fetch.body }}" → "{{ fetch.body.items }}"`}},
		{"a longer list", edit(`command: [echo, "{{ fetch.body }}"]`, `command: [echo, -n, "{{ fetch.body }}"]`),
			[]string{`node run: command: ["echo","{{ fetch.body }}"] → ["echo","-n","{{ fetch.body }}"]`}},
		{"a common field", edit("    text: ok\n", "    text: ok\n    retries: 2\n"), []string{`node done: retries: added 2`}},
		{"the type", edit("type: template\n    text: ok", "type: set\n    values: {text: ok}"), []string{
			`node done: text: removed (was "ok")`,
			`node done: type: "template" → "set"`,
			`node done: values: added {"text":"ok"}`,
		}},
		{"a node and its edge added", edit(
			"edges:\n", "  - {id: note, type: template, text: hi}\nedges:\n  - {from: done, to: note}\n"),
			[]string{"node note: added (template)", "edge done → note: added"}},
		{"a node removed, edges rewired", edit(
			"  - id: run\n    type: shell\n    command: [echo, \"{{ fetch.body }}\"]\n", "",
			"  - {from: fetch, to: run}\n  - {from: run, to: done}\n", "  - {from: fetch, to: done, on: error}\n"),
			[]string{"node run: removed (shell)", "edge fetch → done (on error): added", "edge fetch → run: removed", "edge run → done: removed"}},
		{"outputs and inputs", edit(`result: "{{ done.text }}"`, `result: "{{ run.stdout }}"`,
			`base: {type: string, default: "http://127.0.0.1:1"}`, "base: {type: string, required: true}"), []string{
			`inputs.base.default: removed (was "http://127.0.0.1:1")`,
			`inputs.base.required: false → true`,
			`outputs.result: "{{ done.text }}" → "{{ run.stdout }}"`,
		}},
	}
	old := mustDecode(t, diffBase)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := repair.Lines(repair.Diff(old, mustDecode(t, tc.new)))
			require.Equal(t, tc.want, got)
		})
	}
}

func TestDiffFromNothing(t *testing.T) {
	t.Parallel()
	got := repair.Diff(nil, mustDecode(t, diffBase))
	lines := repair.Lines(got)
	require.Contains(t, lines, "node fetch: added (http)")
	require.Contains(t, lines, "edge run → done: added")
	require.Contains(t, lines, `name: added "api"`)
}

func TestChangeClipsLongValues(t *testing.T) {
	t.Parallel()
	c := repair.Change{Node: "n", Field: "text", Op: repair.OpChanged, From: strings.Repeat("é", 100), To: "x"}
	s := c.String()
	require.True(t, strings.HasPrefix(s, `node n: text: "éé`), s)
	require.Contains(t, s, `…`)
	require.True(t, strings.HasSuffix(s, ` → "x"`), s)
}
