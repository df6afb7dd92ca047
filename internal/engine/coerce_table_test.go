package engine_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
	"github.com/skeinhq/skein/workflow"
)

// The values every parameter of every kind is fed, one of each JSON type.
var coerceValues = []struct {
	name string
	v    any
}{
	{"string", "7"},
	{"number", 7},
	{"bool", true},
	{"null", nil},
	{"object", map[string]any{"a": 1}},
	{"list", []any{"x", 2}},
}

// documented is the coercion table of docs/workflows.md, restated:
// what a parameter of type typ gets for each value, or errBad when the
// value is refused. null is absent (the default applies).
var errBad = fmt.Errorf("refused")

func documented(typ node.Type, value string) any {
	table := map[node.Type]map[string]any{
		node.String:   {"string": "7", "number": "7", "bool": "true", "object": `{"a":1}`, "list": `["x",2]`},
		node.Int:      {"string": 7, "number": 7, "bool": errBad, "object": errBad, "list": errBad},
		node.Number:   {"string": 7, "number": 7, "bool": errBad, "object": errBad, "list": errBad},
		node.Bool:     {"string": errBad, "number": errBad, "bool": true, "object": errBad, "list": errBad},
		node.Duration: {"string": "7", "number": 7, "bool": errBad, "object": errBad, "list": errBad},
		node.Strings:  {"string": []any{"7"}, "number": []any{"7"}, "bool": []any{"true"}, "object": errBad, "list": []any{"x", "2"}},
		node.List:     {"string": errBad, "number": errBad, "bool": errBad, "object": errBad, "list": []any{"x", 2}},
		node.Map:      {"string": errBad, "number": errBad, "bool": errBad, "object": map[string]any{"a": 1}, "list": errBad},
		node.Any:      {"string": "7", "number": 7, "bool": true, "object": map[string]any{"a": 1}, "list": []any{"x", 2}},
	}
	return table[typ][value]
}

// TestEveryKindEveryParamEveryType feeds every parameter of every standard
// kind a value of each JSON type, written in the workflow and rendered from
// a template, and checks that the kind gets the documented coercion, that
// validation refuses what the kind would not get, and that no value is
// silently blanked.
func TestEveryKindEveryParamEveryType(t *testing.T) {
	t.Parallel()
	specs := node.Default.Specs()
	require.Greater(t, len(specs), 15, "the standard kinds are registered")
	cells := 0
	for _, spec := range specs {
		for _, p := range spec.Params {
			for _, val := range coerceValues {
				cells++
				t.Run(spec.Kind+"/"+p.Name+"/"+val.name, func(t *testing.T) {
					t.Parallel()
					checkCell(t, spec, p, val.name, val.v)
				})
			}
		}
	}
	require.Greater(t, cells, 300)
}

func checkCell(t *testing.T, spec *node.Spec, p node.Param, valueName string, v any) {
	want := documented(p.Type, valueName)
	switch {
	case p.Expr:
		want = errBad // a condition is an expression, written as text
		if valueName == "string" {
			want = "7"
		}
	case p.Type == node.List && len(p.Items) > 0:
		want = errBad // entries of a fixed shape: neither value fits
	case len(p.Enum) > 0:
		want = errBad // no value tried is one of the allowed ones
	case p.Type == node.Int && p.Max != 0 && (valueName == "string" || valueName == "number"):
		want = 7 // within every bound declared
	}
	if valueName == "null" {
		want = nil
	}

	// Written in the workflow: validation decides.
	problems := validateParam(t, spec, p, v)
	if want == errBad {
		require.NotEmpty(t, problems, "validation must refuse %s: %s", p.Name, valueName)
		_, err := engine.RenderParams(planNode(spec, p, v), &expr.Scope{})
		if !p.Expr && !(p.Type == node.List && len(p.Items) > 0) {
			require.NotNil(t, err, "the run refuses what validation refuses")
		}
		return
	}
	if valueName == "null" && p.Required {
		require.NotEmpty(t, problems, "a required parameter needs a value")
		return
	}
	if p.Expr || p.Type == node.List && len(p.Items) > 0 {
		return // passed to the kind as written
	}
	// Whatever validation accepts, the run accepts and coerces as
	// documented (a kind's own Check may still refuse "7" as, say, a cron
	// expression).
	params, err := engine.RenderParams(planNode(spec, p, v), &expr.Scope{})
	require.Nil(t, err, "written %s: %v", valueName, err)
	got, ok := params[p.Name]
	if want == nil {
		require.Equal(t, p.Default, got, "null leaves the default")
		return
	}
	require.True(t, ok)
	require.Equal(t, want, got, "written %s", valueName)
	require.NotEqual(t, "", got, "never a silent blank")

	// Rendered from a template: the same value, or a clear error when
	// the parameter is read before the run.
	if p.NoTemplate {
		return
	}
	scope := &expr.Scope{Nodes: map[string]any{"src": map[string]any{"v": v}}}
	params, err = engine.RenderParams(planNode(spec, p, "{{ src.v }}"), scope)
	require.Nil(t, err, "templated %s: %v", valueName, err)
	require.Equal(t, want, params[p.Name], "templated %s", valueName)
}

// validateParam validates a workflow whose one node sets p to v and
// returns the problems about p.
func validateParam(t *testing.T, spec *node.Spec, p node.Param, v any) []string {
	t.Helper()
	n := map[string]any{"id": "n", "type": spec.Kind, p.Name: v}
	doc := map[string]any{"version": 1, "name": "t", "nodes": []any{n}}
	src, err := json.Marshal(doc)
	require.NoError(t, err)
	w, ds := workflow.Decode("t.json", src)
	if w != nil {
		ds = append(ds, workflow.Validate(w, node.Default)...)
	}
	var out []string
	for _, d := range ds {
		if d.Severity == workflow.Error && (strings.HasSuffix(d.Path, "."+p.Name) || strings.Contains(d.Path, "."+p.Name+"[") ||
			strings.Contains(d.Path, "."+p.Name+".") || strings.Contains(d.Message, fmt.Sprintf("%q", p.Name))) {
			out = append(out, d.Message)
		}
	}
	return out
}

func planNode(spec *node.Spec, p node.Param, v any) *engine.PlanNode {
	return &engine.PlanNode{ID: "n", Type: spec.Kind, Spec: spec,
		Node: &workflow.Node{ID: "n", Type: spec.Kind, Params: map[string]any{p.Name: v}}}
}

// The reproductions of the issue: nothing is blanked, durations read alike.
func TestTemplatesAreNotBlanked(t *testing.T) {
	t.Parallel()
	tmpl, _ := node.Default.Lookup("template")
	text, _ := tmpl.Param("text")
	params, err := engine.RenderParams(planNode(tmpl, text, "{{ 1 + 2 }}"), &expr.Scope{})
	require.Nil(t, err)
	require.Equal(t, "3", params["text"])

	fail, _ := node.Default.Lookup("fail")
	msg, _ := fail.Param("message")
	params, err = engine.RenderParams(planNode(fail, msg, "{{ inputs.n }}"), &expr.Scope{Inputs: map[string]any{"n": 3}})
	require.Nil(t, err)
	require.Equal(t, "3", params["message"])

	wait, _ := node.Default.Lookup("wait")
	dur, _ := wait.Param("duration")
	require.Empty(t, validateParam(t, wait, dur, "0d"))
	params, err = engine.RenderParams(planNode(wait, dur, "0d"), &expr.Scope{})
	require.Nil(t, err)
	call := &node.Call{Params: params}
	require.Zero(t, call.Duration("duration"))
	params, err = engine.RenderParams(planNode(wait, dur, "{{ '1d' }}"), &expr.Scope{})
	require.Nil(t, err)
	require.Equal(t, "24h0m0s", (&node.Call{Params: params}).Duration("duration").String())

	_, err = engine.RenderParams(planNode(wait, dur, "{{ 'soon' }}"), &expr.Scope{})
	require.NotNil(t, err)
	require.Equal(t, "param_type", err.Code)
	require.Contains(t, err.Message, `parameter duration`)
	require.Contains(t, err.Message, `"soon" is not a duration`)
}
