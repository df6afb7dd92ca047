package check_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/workflow"
)

// fetchOutput is the output of the node every deterministic case checks.
var fetchOutput = map[string]any{
	"status": 200,
	"stdout": "Welcome, Ada\nbuild ok",
	"body": map[string]any{
		"items": []any{
			map[string]any{"id": 1, "name": "first"},
			map[string]any{"id": 2, "name": "second"},
		},
		"tags":  []any{"alpha", "beta", 3},
		"title": `He said "hi" <b>`,
	},
}

func TestDeterministicChecks(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report.txt"), []byte("done"), 0o644))
	absent := filepath.Join(dir, "absent.txt")

	schema := map[string]any{
		"type":     "object",
		"required": []any{"id", "name"},
		"properties": map[string]any{
			"id":   map[string]any{"type": "integer"},
			"name": map[string]any{"type": "string"},
		},
	}

	cases := []struct {
		name      string
		check     *workflow.Check
		want      check.Verdict
		reasoning string // a part of the reasoning
		evidence  map[string]any
	}{
		// expr
		{name: "expr true", check: exprChk("ok", "fetch.status == 200 && fetch.success"), want: check.Pass, reasoning: "is true"},
		{name: "expr false", check: exprChk("ok", "fetch.status == 404"), want: check.Fail, reasoning: "`fetch.status == 404` is false"},
		{name: "expr reads another node", check: exprChk("ok", "other.count == 7 && other.success"), want: check.Pass},
		{name: "expr reads a failed node", check: exprChk("ok", "!broken.success && broken.error == 'boom'"), want: check.Pass},
		{name: "expr not a bool", check: exprChk("ok", "fetch.status"), want: check.Error, reasoning: "must be a bool"},
		{name: "expr does not compile", check: exprChk("ok", "fetch.status =="), want: check.Error},
		{name: "expr empty", check: exprChk("ok", ""), want: check.Error, reasoning: "no expr"},

		// contains
		{name: "contains substring of target", check: chk("contains", "hi", map[string]any{"value": "Welcome", "target": "stdout"}), want: check.Pass, evidence: map[string]any{"target": "stdout"}},
		{name: "contains missing substring", check: chk("contains", "hi", map[string]any{"value": "Goodbye", "target": "stdout"}), want: check.Fail, reasoning: `stdout does not contain "Goodbye"`},
		{name: "contains list element", check: chk("contains", "tag", map[string]any{"value": "beta", "target": "body.tags"}), want: check.Pass, reasoning: "item 1"},
		{name: "contains list number", check: chk("contains", "tag", map[string]any{"value": 3, "target": "body.tags"}), want: check.Pass},
		{name: "contains list map element", check: chk("contains", "item", map[string]any{"value": map[string]any{"name": "second", "id": 2}, "target": "body.items"}), want: check.Pass},
		{name: "contains list is not substring", check: chk("contains", "tag", map[string]any{"value": "alp", "target": "body.tags"}), want: check.Fail, reasoning: "among 3 items"},
		{name: "contains whole output", check: chk("contains", "any", map[string]any{"value": "second"}), want: check.Pass, reasoning: "the output contains"},
		{name: "contains whole output, escaped text", check: chk("contains", "any", map[string]any{"value": `"hi" <b>`}), want: check.Pass},
		{name: "contains whole output misses", check: chk("contains", "any", map[string]any{"value": "third"}), want: check.Fail},
		{name: "contains does not see success", check: chk("contains", "any", map[string]any{"value": "success"}), want: check.Fail},
		{name: "contains list index path", check: chk("contains", "name", map[string]any{"value": "sec", "target": "body.items.1.name"}), want: check.Pass},
		{name: "contains missing target", check: chk("contains", "hi", map[string]any{"value": "x", "target": "body.nope"}), want: check.Error, reasoning: `body has no field "nope" (available fields: items, tags, title)`},
		{name: "contains index out of range", check: chk("contains", "hi", map[string]any{"value": "x", "target": "body.items.5"}), want: check.Error, reasoning: "list of 2 items"},
		{name: "contains into a string", check: chk("contains", "hi", map[string]any{"value": "x", "target": "stdout.first"}), want: check.Error, reasoning: "a string"},
		{name: "contains template target", check: chk("contains", "hi", map[string]any{"value": "x", "target": "{{ fetch.stdout }}"}), want: check.Error, reasoning: "template"},
		{name: "contains no value", check: chk("contains", "hi", map[string]any{"target": "stdout"}), want: check.Error, reasoning: "needs value"},

		// not_contains
		{name: "not_contains absent", check: chk("not_contains", "no err", map[string]any{"value": "ERROR", "target": "stdout"}), want: check.Pass, reasoning: "does not contain"},
		{name: "not_contains present", check: chk("not_contains", "no err", map[string]any{"value": "build", "target": "stdout"}), want: check.Fail, reasoning: `stdout contains "build"`},
		{name: "not_contains list", check: chk("not_contains", "no gamma", map[string]any{"value": "gamma", "target": "body.tags"}), want: check.Pass},

		// regex
		{name: "regex matches", check: chk("regex", "greets", map[string]any{"pattern": `^Welcome, \w+`, "target": "stdout"}), want: check.Pass, reasoning: `"Welcome, Ada"`, evidence: map[string]any{"target": "stdout", "pattern": `^Welcome, \w+`}},
		{name: "regex does not match", check: chk("regex", "greets", map[string]any{"pattern": `^Goodbye`, "target": "stdout"}), want: check.Fail, reasoning: "does not match /^Goodbye/"},
		{name: "regex on JSON text", check: chk("regex", "ids", map[string]any{"pattern": `"id":2`, "target": "body.items"}), want: check.Pass},
		{name: "regex whole output", check: chk("regex", "any", map[string]any{"pattern": `"status":200`}), want: check.Pass},
		{name: "regex invalid", check: chk("regex", "bad", map[string]any{"pattern": `(`}), want: check.Error, reasoning: "not a valid regular expression"},

		// json_schema
		{name: "json_schema valid item", check: chk("json_schema", "item", map[string]any{"schema": schema, "target": "body.items.0"}), want: check.Pass, reasoning: "body.items.0 matches the schema"},
		{name: "json_schema whole output", check: chk("json_schema", "shape", map[string]any{"schema": map[string]any{
			"type": "object", "required": []any{"status", "body"}, "additionalProperties": false,
			"properties": map[string]any{"status": map[string]any{"const": 200}, "stdout": map[string]any{}, "body": map[string]any{"type": "object"}},
		}}), want: check.Pass},
		{name: "json_schema invalid item", check: chk("json_schema", "items", map[string]any{"schema": map[string]any{
			"type": "array", "items": map[string]any{"properties": map[string]any{"id": map[string]any{"type": "string"}}},
		}, "target": "body.items"}), want: check.Fail, reasoning: "at /0/id"},
		{name: "json_schema not a schema", check: chk("json_schema", "bad", map[string]any{"schema": map[string]any{"type": 5}}), want: check.Error, reasoning: "schema is not valid"},
		{name: "json_schema schema of the wrong type", check: chk("json_schema", "bad", map[string]any{"schema": "object"}), want: check.Error, reasoning: "must be a map"},
		{name: "json_schema remote ref refused", check: chk("json_schema", "remote", map[string]any{"schema": map[string]any{"$ref": "https://example.com/s.json"}}), want: check.Error, reasoning: "schema is not valid"},
		{name: "json_schema file ref refused", check: chk("json_schema", "file", map[string]any{"schema": map[string]any{"$ref": "file:///etc/passwd"}}), want: check.Error},

		// http_status
		{name: "http_status code", check: chk("http_status", "ok", map[string]any{"status": 200}), want: check.Pass, evidence: map[string]any{"status": 200}},
		{name: "http_status other code", check: chk("http_status", "ok", map[string]any{"status": 201}), want: check.Fail, reasoning: "status 200, expected 201"},
		{name: "http_status list", check: chk("http_status", "ok", map[string]any{"status": []any{201, 200}}), want: check.Pass, reasoning: "201 or 200"},
		{name: "http_status list misses", check: chk("http_status", "ok", map[string]any{"status": []any{301, 302}}), want: check.Fail},
		{name: "http_status class", check: chk("http_status", "ok", map[string]any{"status": "2xx"}), want: check.Pass, reasoning: "matches 2xx"},
		{name: "http_status other class", check: chk("http_status", "ok", map[string]any{"status": "4XX"}), want: check.Fail, reasoning: "expected 4xx"},
		{name: "http_status code as text", check: chk("http_status", "ok", map[string]any{"status": "200"}), want: check.Pass},
		{name: "http_status bad param", check: chk("http_status", "ok", map[string]any{"status": "ok"}), want: check.Error, reasoning: "status must be"},
		{name: "http_status empty list", check: chk("http_status", "ok", map[string]any{"status": []any{}}), want: check.Error},

		// file_exists
		{name: "file_exists relative", check: chk("file_exists", "report", map[string]any{"path": "report.txt"}), want: check.Pass, evidence: map[string]any{"path": filepath.Join(dir, "report.txt")}},
		{name: "file_exists folder", check: chk("file_exists", "dir", map[string]any{"path": "."}), want: check.Pass, reasoning: "a folder"},
		{name: "file_exists absolute missing", check: chk("file_exists", "absent", map[string]any{"path": absent}), want: check.Fail, reasoning: "does not exist"},
		{name: "file_exists relative missing", check: chk("file_exists", "absent", map[string]any{"path": "out/absent.txt"}), want: check.Fail},
		{name: "file_exists template", check: chk("file_exists", "tpl", map[string]any{"path": "{{ fetch.stdout }}"}), want: check.Error, reasoning: "not rendered"},

		// on_fail: warn
		{name: "warn demotes fail", check: warn(chk("http_status", "ok", map[string]any{"status": 404})), want: check.Warn, reasoning: "expected 404"},
		{name: "warn keeps pass", check: warn(chk("http_status", "ok", map[string]any{"status": 200})), want: check.Pass},
		{name: "warn keeps error", check: warn(exprChk("ok", "fetch.status")), want: check.Error},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := &workflow.Workflow{
				File:  filepath.Join(dir, "flow.yaml"),
				Nodes: []*workflow.Node{nd("other"), nd("broken"), nd("fetch", tc.check)},
			}
			res := result(ok("other", 1, 1, map[string]any{"count": 7}), failed("broken", 2, 1, "boom"), ok("fetch", 3, 1, fetchOutput))
			v := check.Evaluate(context.Background(), check.Input{Workflow: w, Result: res})

			r := only(t, v)
			require.Equal(t, tc.want, r.Verdict, "verdict; reasoning: %s", r.Reasoning)
			require.Contains(t, r.Reasoning, tc.reasoning)
			require.NotEmpty(t, r.Reasoning, "every verdict says why")
			require.Equal(t, "fetch", r.Node)
			require.Equal(t, tc.check.Name, r.Check)
			require.Equal(t, tc.check.Type, r.Type)
			require.Equal(t, tc.check.OnFail, r.OnFail)
			for k, want := range tc.evidence {
				require.Equal(t, want, r.Evidence[k], "evidence %s", k)
			}
		})
	}
}

func TestRunStatus(t *testing.T) {
	t.Parallel()

	pass := exprChk("pass", "true")
	fail := exprChk("fail", "false")
	bad := exprChk("bad", "1")
	cases := []struct {
		name    string
		checks  []*workflow.Check
		status  string
		node    check.Verdict
		stopped string
	}{
		{name: "all pass", checks: []*workflow.Check{pass, pass}, status: check.StatusPassed, node: check.Pass},
		{name: "a warning", checks: []*workflow.Check{pass, warn(exprChk("w", "false"))}, status: check.StatusWarnings, node: check.Warn},
		{name: "a soft error", checks: []*workflow.Check{pass, warn(exprChk("w", "1"))}, status: check.StatusWarnings, node: check.Error},
		{name: "a hard fail", checks: []*workflow.Check{pass, fail, warn(exprChk("w", "false"))}, status: check.StatusFailed, node: check.Fail, stopped: "a"},
		{name: "a hard error", checks: []*workflow.Check{bad, pass}, status: check.StatusFailed, node: check.Error, stopped: "a"},
		{name: "fail outranks error", checks: []*workflow.Check{bad, fail}, status: check.StatusFailed, node: check.Fail, stopped: "a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := &workflow.Workflow{Nodes: []*workflow.Node{nd("a", tc.checks...)}}
			v := check.Evaluate(context.Background(), check.Input{Workflow: w, Result: result(ok("a", 1, 1, nil))})
			require.Equal(t, tc.status, v.Status)
			require.Equal(t, tc.node, v.Nodes[0].Verdict)
			require.Equal(t, tc.stopped, v.Stopped)
		})
	}

	t.Run("no checks", func(t *testing.T) {
		t.Parallel()
		w := &workflow.Workflow{Nodes: []*workflow.Node{nd("a"), nd("b")}}
		v := check.Evaluate(context.Background(), check.Input{Workflow: w, Result: result(ok("a", 1, 1, nil))})
		require.Equal(t, "", v.Status, "a workflow without checks or expect has no status")
		require.Empty(t, v.Nodes)
		require.Empty(t, v.Stopped)
	})

	t.Run("no workflow", func(t *testing.T) {
		t.Parallel()
		v := check.Evaluate(context.Background(), check.Input{})
		require.Equal(t, "", v.Status)
		require.Empty(t, v.Nodes)
	})
}

func TestFirstHardFailureStopsThePass(t *testing.T) {
	t.Parallel()

	type bundle struct {
		judge *fakeJudge
		w     *workflow.Workflow
	}
	// The workflow lists the nodes in another order than they ran: the
	// pass follows the order of their last visits.
	setup := func(t *testing.T, second *workflow.Check) *bundle {
		t.Helper()
		return &bundle{
			judge: &fakeJudge{},
			w: &workflow.Workflow{Nodes: []*workflow.Node{
				withExpect(nd("third", exprChk("late", "true")), "it worked"),
				nd("second", second),
				nd("first", exprChk("early", "true")),
				nd("never", exprChk("unrun", "true")),
			}},
		}
	}
	res := result(ok("first", 1, 1, nil), ok("second", 2, 1, nil), ok("third", 3, 1, nil))

	cases := []struct {
		name     string
		second   *workflow.Check
		stopped  string
		verdicts []string
		judged   int
	}{
		{
			name: "hard fail stops", second: exprChk("mid", "false"), stopped: "second",
			verdicts: []string{"first:early=pass", "second:mid=fail", "third:late=skipped", "third:expect=skipped", "never:unrun=skipped"},
		},
		{
			name: "hard error stops", second: exprChk("mid", "'x'"), stopped: "second",
			verdicts: []string{"first:early=pass", "second:mid=error", "third:late=skipped", "third:expect=skipped", "never:unrun=skipped"},
		},
		{
			name: "warning goes on", second: warn(exprChk("mid", "false")),
			verdicts: []string{"first:early=pass", "second:mid=warn", "third:late=pass", "third:expect=pass", "never:unrun=skipped"},
			judged:   1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.second)
			v := check.Evaluate(context.Background(), check.Input{Workflow: b.w, Result: res, Judge: b.judge})
			require.Equal(t, tc.verdicts, verdicts(v))
			require.Equal(t, tc.stopped, v.Stopped)
			require.Len(t, b.judge.calls(), tc.judged, "nodes after the stop are not judged")
			if tc.stopped == "" {
				require.Equal(t, "the node did not run", nodeVerdict(t, v, "never").Checks[0].Reasoning)
				return
			}
			require.Equal(t, check.StatusFailed, v.Status)
			for _, id := range []string{"third", "never"} {
				nv := nodeVerdict(t, v, id)
				require.Equal(t, check.Skipped, nv.Verdict)
				for _, r := range nv.Checks {
					require.Equal(t, "evaluation stopped at node second", r.Reasoning)
				}
			}
		})
	}
}

func TestLastVisit(t *testing.T) {
	t.Parallel()

	poll := func() *workflow.Node {
		return withExpect(nd("poll", exprChk("done", "poll.count == 3")), "the job finished")
	}
	cases := []struct {
		name      string
		steps     []*engine.StepRecord
		visit     int
		verdicts  []string
		reasoning string // of every check, when not judged
		judged    int
		status    string // when not PASSED
	}{
		{
			name:     "judged once on the last visit",
			steps:    []*engine.StepRecord{ok("poll", 1, 1, map[string]any{"count": 1}), ok("poll", 3, 2, map[string]any{"count": 2}), ok("poll", 5, 3, map[string]any{"count": 3})},
			visit:    3,
			verdicts: []string{"poll:done=pass", "poll:expect=pass"},
			judged:   1,
		},
		{
			name:     "visits out of order in the result",
			steps:    []*engine.StepRecord{ok("poll", 5, 3, map[string]any{"count": 3}), ok("poll", 1, 1, map[string]any{"count": 1}), ok("poll", 3, 2, map[string]any{"count": 2})},
			visit:    3,
			verdicts: []string{"poll:done=pass", "poll:expect=pass"},
			judged:   1,
		},
		{
			name:      "last visit failed: its checks are not run",
			steps:     []*engine.StepRecord{ok("poll", 1, 1, map[string]any{"count": 3}), failed("poll", 2, 2, "timed out")},
			visit:     2,
			verdicts:  []string{"poll:done=not_run", "poll:expect=not_run"},
			reasoning: "the node's last visit (visit 2) failed: timed out",
			status:    check.StatusIncomplete,
		},
		{
			name:      "last visit skipped",
			steps:     []*engine.StepRecord{ok("poll", 1, 1, map[string]any{"count": 3}), skipped("poll", 2, 2)},
			visit:     2,
			verdicts:  []string{"poll:done=skipped", "poll:expect=skipped"},
			reasoning: "the node's last visit (visit 2) was skipped",
		},
		{
			name:      "never ran",
			verdicts:  []string{"poll:done=skipped", "poll:expect=skipped"},
			reasoning: "the node did not run",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := &fakeJudge{}
			w := &workflow.Workflow{Nodes: []*workflow.Node{poll()}}
			v := check.Evaluate(context.Background(), check.Input{Workflow: w, Result: result(tc.steps...), Judge: j})
			require.Equal(t, tc.verdicts, verdicts(v))
			nv := nodeVerdict(t, v, "poll")
			require.Equal(t, tc.visit, nv.Visit)
			calls := j.calls()
			require.Len(t, calls, tc.judged)
			if tc.judged > 0 {
				require.Equal(t, map[string]any{"count": 3}, calls[0].Output, "the judge sees the last visit's output")
				require.Equal(t, check.StatusPassed, v.Status)
			}
			if tc.status != "" {
				require.Equal(t, tc.status, v.Status)
			}
			if tc.reasoning != "" && tc.status == "" {
				require.Equal(t, check.Skipped, nv.Verdict)
			}
			if tc.reasoning != "" {
				for _, r := range nv.Checks {
					require.Equal(t, tc.reasoning, r.Reasoning)
				}
			}
		})
	}
}

// A run that did not complete never passes: its verdict is INCOMPLETE
// unless a check failed.
func TestIncompleteRun(t *testing.T) {
	t.Parallel()
	w := &workflow.Workflow{Nodes: []*workflow.Node{nd("poll", exprChk("done", "poll.count == 3")), nd("later", exprChk("ok", "true"))}}
	for _, st := range []engine.RunStatus{engine.RunFailed, engine.RunCancelled} {
		res := result(ok("poll", 1, 1, map[string]any{"count": 3}))
		res.Status = st
		v := check.Evaluate(context.Background(), check.Input{Workflow: w, Result: res})
		require.Equal(t, check.StatusIncomplete, v.Status, "a %s run", st)
		require.Equal(t, []string{"poll:done=pass", "later:ok=skipped"}, verdicts(v))
	}
}

// An expr check reads the run's inputs and what its trigger fired with,
// as the node's templates did: a check of an output against an input
// passes when they agree and fails when they do not.
func TestExprChecksReadTheRunsInputsAndTrigger(t *testing.T) {
	t.Parallel()
	w := &workflow.Workflow{Name: "demo", Nodes: []*workflow.Node{nd("order",
		exprChk("total", "order.total == inputs.quantity * 2.5"),
		exprChk("from", "trigger.body.customer == order.customer"),
		exprChk("run", "execution.workflow == 'demo'"))}}
	res := result(ok("order", 1, 1, map[string]any{"total": 10.0, "customer": "ada"}))
	for _, tc := range []struct {
		quantity float64
		customer string
		want     []string
	}{
		{4, "ada", []string{"pass", "pass", "pass"}},
		{3, "bob", []string{"fail", "fail", "pass"}},
	} {
		v := check.Evaluate(t.Context(), check.Input{Workflow: w, Result: res, Run: &expr.Scope{
			Inputs:    map[string]any{"quantity": tc.quantity},
			Trigger:   map[string]any{"body": map[string]any{"customer": tc.customer}},
			Execution: map[string]any{"workflow": "demo"}}})
		var got []string
		for _, c := range nodeVerdict(t, v, "order").Checks {
			got = append(got, string(c.Verdict))
		}
		require.Equal(t, tc.want, got, "quantity %v, customer %s", tc.quantity, tc.customer)
	}
}
