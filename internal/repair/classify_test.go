package repair_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	mcpclient "github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/repair"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
	"github.com/skeinhq/skein/workflow"
)

func TestRepairable(t *testing.T) {
	t.Parallel()
	httpErr := func(status int) *node.Error {
		return &node.Error{Category: node.CategoryHTTPStatus, Code: "http_x", Details: map[string]any{"status": status}}
	}
	tests := []struct {
		name string
		err  *node.Error
		want bool
		why  string
	}{
		{"template", &node.Error{Category: node.CategoryTemplate}, true, ""},
		{"validation", &node.Error{Category: node.CategoryValidation}, true, ""},
		{"execution failure", &node.Error{Category: node.CategoryExecution}, true, ""},
		{"mcp tool error", &node.Error{Category: mcpclient.CategoryToolError}, true, ""},
		{"400", httpErr(400), true, ""},
		{"404", httpErr(404), true, ""},
		{"422", httpErr(422), true, ""},
		{"status from the code", &node.Error{Category: node.CategoryHTTPStatus, Code: "http_409"}, true, ""},
		{"no status", httpErr(0), false, "not a bad request"},
		{"401", httpErr(401), false, "authentication"},
		{"403", httpErr(403), false, "authentication"},
		{"408", httpErr(408), false, "wait and try again"},
		{"429", httpErr(429), false, "wait and try again"},
		{"500", httpErr(500), false, "server error"},
		{"llm authentication", &node.Error{Category: "authentication"}, false, "never repaired"},
		{"budget", &node.Error{Category: "budget_exceeded"}, false, "never repaired"},
		{"timeout", &node.Error{Category: node.CategoryTimeout}, false, "timeout errors are not repaired"},
		{"connection", &node.Error{Category: node.CategoryConnection}, false, "connection errors are not repaired"},
		{"none", nil, false, "no error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, why := repair.Repairable(tc.err)
			require.Equal(t, tc.want, got, why)
			require.Contains(t, why, tc.why)
			require.Equal(t, tc.want, record.Fixable(tc.err), "a recorded error's fixable field is what repair decides")
		})
	}
	t.Run("status from JSON", func(t *testing.T) {
		t.Parallel()
		ok, why := repair.Repairable(&node.Error{Category: node.CategoryHTTPStatus, Details: map[string]any{"status": float64(403)}})
		require.False(t, ok)
		require.Contains(t, why, "HTTP 403")
	})
}

func TestBusinessError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		output map[string]any
		want   string // "" for none
	}{
		{"ok false in a body", map[string]any{"status": 200, "body": map[string]any{"ok": false, "error": "channel_not_found"}},
			`the API answered "ok": false (error: channel_not_found)`},
		{"success false in a body", map[string]any{"body": map[string]any{"success": false, "message": "quota"}},
			`the API answered "success": false (message: quota)`},
		{"an error object", map[string]any{"body": map[string]any{"ok": false, "error": map[string]any{"message": "nope"}}},
			`the API answered "ok": false (error: nope)`},
		{"no reason given", map[string]any{"body": map[string]any{"ok": false}}, `the API answered "ok": false`},
		{"status 500 in a 200's body", map[string]any{"status": 200, "body": map[string]any{"status": 500, "message": "db down"}},
			`the API answered "status": 500 (message: db down)`},
		{"status 404 as a JSON float", map[string]any{"body": map[string]any{"status": float64(404)}}, `the API answered "status": 404`},
		{"status 200 in a body", map[string]any{"body": map[string]any{"status": 200}}, ""},
		{"a status that is text", map[string]any{"body": map[string]any{"status": "error"}}, ""},
		{"the HTTP status of an output", map[string]any{"status": 500, "body": map[string]any{}}, ""},
		{"GraphQL errors", map[string]any{"body": map[string]any{"data": nil, "errors": []any{
			map[string]any{"message": "Cannot query field \"nme\""}, map[string]any{"message": "x"}}}},
			`the API answered GraphQL errors: Cannot query field "nme" (and 1 more)`},
		{"an mcp output", map[string]any{"ok": false, "error": "locked", "success": true}, `the API answered "ok": false (error: locked)`},
		{"the scheduler's success", map[string]any{"success": false, "error": "boom"}, ""},
		{"ok true", map[string]any{"body": map[string]any{"ok": true}}, ""},
		{"no errors", map[string]any{"body": map[string]any{"data": 1, "errors": []any{}}}, ""},
		{"a text body", map[string]any{"body": "ok: false"}, ""},
		{"nothing", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := repair.BusinessError(tc.output)
			require.Equal(t, tc.want != "", ok, got)
			require.Equal(t, tc.want, got)
		})
	}
}

const chainFlow = `version: 1
name: chain
nodes:
  - {id: a, type: http, url: "http://127.0.0.1:1/a"}
  - {id: b, type: set, values: {key: "{{ a.body.k }}"}}
  - {id: c, type: http, url: "http://127.0.0.1:1/c", query: {key: "{{ b.key }}"}}
edges:
  - {from: a, to: b}
  - {from: b, to: c}
`

func decodeFlow(t *testing.T, src string) *workflow.Workflow {
	t.Helper()
	w, ds := workflow.Decode("flow.yaml", []byte(src))
	require.NotNil(t, w, ds.Error())
	require.False(t, workflow.Validate(w, node.Default).HasErrors())
	return w
}

func TestAssess(t *testing.T) {
	t.Parallel()
	w := decodeFlow(t, chainFlow)
	ok := func(id, typ string, out map[string]any) *engine.StepRecord {
		return &engine.StepRecord{Node: id, Type: typ, Status: engine.StatusSuccess, Visit: 1, Output: out}
	}
	failed := func(id, typ string, e *node.Error) *engine.StepRecord {
		return &engine.StepRecord{Node: id, Type: typ, Status: engine.StatusFailed, Visit: 1, Error: e,
			Params: map[string]any{"url": "http://127.0.0.1:1/c"}}
	}
	bad := &node.Error{Category: node.CategoryHTTPStatus, Code: "http_400", Message: "GET /c answered 400",
		Details: map[string]any{"status": 400, "body": map[string]any{"error": "bad key"}}}
	aOut := map[string]any{"status": 200, "body": map[string]any{"k": "v", "items": []any{map[string]any{"id": 1}}}, "success": true}
	tests := []struct {
		name     string
		res      *engine.Result
		problems []repair.Problem
		warnings []repair.Warning
		blocked  string
	}{
		{
			name: "a bad request is repaired",
			res: &engine.Result{Status: engine.RunFailed, Steps: []*engine.StepRecord{
				ok("a", "http", aOut), ok("b", "set", map[string]any{"key": "v", "success": true}), failed("c", "http", bad),
			}},
			problems: []repair.Problem{{
				Phase: repair.PhaseRuntime, Node: "c", Type: "http", Category: "http_status", Code: "http_400",
				Message: "GET /c answered 400", Status: 400, Body: `{"error":"bad key"}`,
				Params: map[string]any{"url": "http://127.0.0.1:1/c"},
				Upstream: []repair.Fields{
					{Node: "b", Type: "set", Fields: []string{"key (string)"}},
					{Node: "a", Type: "http", Fields: []string{"body (map)", "body.items (list of 1)", "body.items[0].id (number)", "body.k (string)", "status (number)"}},
				},
			}},
		},
		{
			name: "authentication is not",
			res: &engine.Result{Status: engine.RunFailed, Steps: []*engine.StepRecord{
				ok("a", "http", aOut), ok("b", "set", nil),
				failed("c", "http", &node.Error{Category: node.CategoryHTTPStatus, Code: "http_401", Message: "401", Details: map[string]any{"status": 401}}),
			}},
			blocked: "node c failed (http_status: 401); HTTP 401 is an authentication error",
		},
		{
			name: "a failure after a business error is not",
			res: &engine.Result{Status: engine.RunFailed, Steps: []*engine.StepRecord{
				ok("a", "http", map[string]any{"body": map[string]any{"ok": false, "error": "denied"}}),
				ok("b", "set", nil), failed("c", "http", bad),
			}},
			warnings: []repair.Warning{{Node: "a", Visit: 1, Message: `the API answered "ok": false (error: denied)`}},
			blocked:  "node c failed after node a, whose API refused the request",
		},
		{
			name: "a 200 whose body says status 500 is a warning, and what fails after it is not repaired",
			res: &engine.Result{Status: engine.RunFailed, Steps: []*engine.StepRecord{
				ok("a", "http", map[string]any{"status": 200, "body": map[string]any{"status": 500, "message": "db down"}, "success": true}),
				ok("b", "set", nil), failed("c", "http", bad),
			}},
			warnings: []repair.Warning{{Node: "a", Visit: 1, Message: `the API answered "status": 500 (message: db down)`}},
			blocked:  "node c failed after node a, whose API refused the request",
		},
		{
			name: "a template's missing key comes with the fields its object had",
			res: &engine.Result{Status: engine.RunFailed, Steps: []*engine.StepRecord{
				ok("a", "http", aOut),
				{Node: "b", Type: "set", Status: engine.StatusFailed, Visit: 1, Error: &node.Error{
					Category: node.CategoryTemplate, Code: "template", Message: "a.body.key is missing",
					Details: map[string]any{"missing": "a.body.key", "available_fields": []any{"items", "k"}}}},
			}},
			problems: []repair.Problem{{
				Phase: repair.PhaseRuntime, Node: "b", Type: "set", Category: "template", Code: "template",
				Message: "a.body.key is missing", Missing: "a.body.key", AvailableFields: []string{"items", "k"},
				Upstream: []repair.Fields{
					{Node: "a", Type: "http", Fields: []string{"body (map)", "body.items (list of 1)", "body.items[0].id (number)", "body.k (string)", "status (number)"}},
				},
			}},
		},
		{
			name: "a business error in a run that completed is a warning",
			res: &engine.Result{Status: engine.RunCompleted, Steps: []*engine.StepRecord{
				ok("a", "http", map[string]any{"body": map[string]any{"success": false}}), ok("b", "set", nil), ok("c", "http", nil),
			}},
			warnings: []repair.Warning{{Node: "a", Visit: 1, Message: `the API answered "success": false`}},
		},
		{
			name: "a reused step is not warned about again",
			res: &engine.Result{Status: engine.RunCompleted, Steps: []*engine.StepRecord{
				{Node: "a", Type: "http", Status: engine.StatusSuccess, Cached: true, Output: map[string]any{"body": map[string]any{"ok": false}}},
			}},
		},
		{
			name: "a run error outside the steps",
			res: &engine.Result{Status: engine.RunFailed, Error: &node.Error{Category: node.CategoryTemplate, Code: "template", Message: "outputs.x: no field"},
				Steps: []*engine.StepRecord{ok("a", "http", nil)}},
			problems: []repair.Problem{{Phase: repair.PhaseRuntime, Category: "template", Code: "template", Message: "outputs.x: no field"}},
		},
		{
			name:    "a spent budget",
			res:     &engine.Result{Status: engine.RunFailed, Error: &node.Error{Category: "budget_exceeded", Message: "limits.max_tokens spent"}},
			blocked: "the run failed (budget_exceeded: limits.max_tokens spent); budget errors are never repaired",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := repair.Assess(w, node.Default, tc.res)
			require.Equal(t, tc.problems, a.Problems)
			require.Equal(t, tc.warnings, a.Warnings)
			require.Contains(t, a.Blocked, tc.blocked)
			if tc.blocked == "" {
				require.Empty(t, a.Blocked)
			}
		})
	}
}

func TestFromDiagnostics(t *testing.T) {
	t.Parallel()
	src := `version: 1
name: typo
nodes:
  - {id: fetch, type: http, url: "http://127.0.0.1:1"}
  - {id: shout, type: template, text: "{{ fetch.bdy }}"}
edges:
  - {from: fetch, to: shout}
`
	w, ds := workflow.Decode("typo.yaml", []byte(src))
	require.NotNil(t, w)
	ds = append(ds, workflow.Validate(w, node.Default)...)

	ps := repair.FromDiagnostics(w, node.Default, ds)

	require.Len(t, ps, 1)
	p := ps[0]
	require.Equal(t, repair.PhaseValidation, p.Phase)
	require.Equal(t, "shout", p.Node)
	require.Equal(t, "template", p.Type)
	require.Equal(t, "validation", p.Category)
	require.Contains(t, p.Message, `has no output "bdy"`)
	require.Equal(t, 5, p.Line)
	require.Equal(t, []repair.Fields{{Node: "fetch", Type: "http", Fields: []string{"status", "headers", "body", "truncated"}}}, p.Upstream)
}

func TestOutputFields(t *testing.T) {
	t.Parallel()
	got := repair.OutputFields(map[string]any{
		"success": true,
		"stdout":  "x",
		"json":    map[string]any{"a": map[string]any{"b": map[string]any{"c": 1}}},
		"items":   []any{map[string]any{"id": 1.0}, map[string]any{"id": 2.0}},
		"none":    nil,
	})
	require.Equal(t, []string{
		"items (list of 2)", "items[0].id (number)",
		"json (map)", "json.a (map)", "json.a.b (map)",
		"none (null)", "stdout (string)",
	}, got)
}

// TestCommandStderr: a failed command's problem carries the end of its
// stderr; the prompt shows it, and two failures with different stderr
// are different errors (every failed command says "exited with status
// 1", so repair stopped after one attempt as if nothing had changed).
func TestCommandStderr(t *testing.T) {
	t.Parallel()
	w := decodeFlow(t, chainFlow)
	failed := func(stderr string) *engine.Result {
		return commandFailed(`command "jq" exited with status 1`, map[string]any{"exit_code": 1, "stderr": stderr})
	}
	long := strings.Repeat("noise line\n", 400) + "jq: error: .itemz is not defined"
	a := repair.Assess(w, node.Default, failed(long))
	require.Len(t, a.Problems, 1)
	p := a.Problems[0]
	require.LessOrEqual(t, len(p.Stderr), repair.MaxBody+len("…"), "the end of a long stderr, not all of it")
	require.True(t, strings.HasSuffix(p.Stderr, "jq: error: .itemz is not defined"), p.Stderr)

	msgs := repair.Prompt(repair.Case{Problems: a.Problems})
	require.Contains(t, msgs[len(msgs)-1].Content, "jq: error: .itemz is not defined")

	b := repair.Assess(w, node.Default, failed("jq: error: .items[0].nme is null"))
	require.NotEqual(t, repair.Signature(a.Problems), repair.Signature(b.Problems), "a new stderr is a new error")
	again := repair.Assess(w, node.Default, failed(long))
	require.Equal(t, repair.Signature(a.Problems), repair.Signature(again.Problems))
}

// TestCommandStdout: a command that says what went wrong on stdout, with
// nothing on stderr, gives the repair the end of its stdout, and a new
// stdout is a new error.
func TestCommandStdout(t *testing.T) {
	t.Parallel()
	w := decodeFlow(t, chainFlow)
	failed := func(stdout string) *engine.Result {
		return commandFailed(`command "npm" exited with status 1`, map[string]any{"exit_code": 1, "stderr": "", "stdout": stdout})
	}
	long := strings.Repeat("ok test\n", 600) + "FAIL src/parse.test.js: expected 3 items"
	a := repair.Assess(w, node.Default, failed(long))
	require.Len(t, a.Problems, 1)
	p := a.Problems[0]
	require.Empty(t, p.Stderr)
	require.LessOrEqual(t, len(p.Stdout), repair.MaxBody+len("…"), "the end of a long stdout, not all of it")
	require.True(t, strings.HasSuffix(p.Stdout, "FAIL src/parse.test.js: expected 3 items"), p.Stdout)

	msgs := repair.Prompt(repair.Case{Problems: a.Problems})
	require.Contains(t, msgs[len(msgs)-1].Content, "the command's stdout (its end):")
	require.Contains(t, msgs[len(msgs)-1].Content, "FAIL src/parse.test.js: expected 3 items")

	b := repair.Assess(w, node.Default, failed("FAIL src/parse.test.js: expected a list"))
	require.NotEqual(t, repair.Signature(a.Problems), repair.Signature(b.Problems), "a new stdout is a new error")
}

// commandFailed is a run whose shell node c failed with message and
// details.
func commandFailed(message string, details map[string]any) *engine.Result {
	return &engine.Result{Status: engine.RunFailed, Steps: []*engine.StepRecord{{
		Node: "c", Type: "shell", Status: engine.StatusFailed, Visit: 1,
		Error: &node.Error{Category: node.CategoryExecution, Code: "exit_code", Message: message, Details: details},
	}}}
}
