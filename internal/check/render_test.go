package check_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/check"
)

// run builds a verdict with one node holding checks of the given verdicts.
func run(status, stopped string, vs ...check.Verdict) *check.RunVerdict {
	nv := check.NodeVerdict{Node: "fetch", Visit: 1}
	for _, v := range vs {
		nv.Checks = append(nv.Checks, check.CheckResult{Node: "fetch", Check: string(v), Type: "expr", Verdict: v, OnFail: "fail"})
	}
	return &check.RunVerdict{Status: status, Stopped: stopped, Nodes: []check.NodeVerdict{nv}}
}

func TestBar(t *testing.T) {
	t.Parallel()
	P, W, F, E, S := check.Pass, check.Warn, check.Fail, check.Error, check.Skipped
	cases := []struct {
		name  string
		v     *check.RunVerdict
		color bool
		want  string
	}{
		{name: "passed", v: run(check.StatusPassed, "", P, P), want: "PASSED · 2 passed"},
		{name: "passed in green", v: run(check.StatusPassed, "", P), color: true, want: "\x1b[1m\x1b[32mPASSED\x1b[0m · 1 passed"},
		{name: "warnings", v: run(check.StatusWarnings, "", P, W, W), want: "PASSED WITH WARNINGS · 1 passed, 2 warnings"},
		{name: "warnings in yellow", v: run(check.StatusWarnings, "", W), color: true, want: "\x1b[1m\x1b[33mPASSED WITH WARNINGS\x1b[0m · 0 passed, 1 warning"},
		{
			name: "failed", v: run(check.StatusFailed, "fetch", P, P, P, W, F),
			want: "FAILED · 3 passed, 1 warning, 1 failed (fetch › fail) · stopped at fetch",
		},
		{
			name: "failed in red", v: run(check.StatusFailed, "fetch", P, E, E, S), color: true,
			want: "\x1b[1m\x1b[31mFAILED\x1b[0m · 1 passed, 2 errors (fetch › error, fetch › error), 1 skipped · stopped at fetch",
		},
		{
			name: "incomplete", v: run(check.StatusIncomplete, "", P, S),
			want: "INCOMPLETE · 1 passed, 1 skipped · the run did not complete",
		},
		{
			name: "many failed", v: run(check.StatusFailed, "fetch", F, F, F, F, F, F, F),
			want: "FAILED · 0 passed, 7 failed (fetch › fail, fetch › fail, fetch › fail, fetch › fail, fetch › fail, 2 more) · stopped at fetch",
		},
		{name: "no checks", v: &check.RunVerdict{}, want: "NO CHECKS"},
		{name: "no checks in color", v: &check.RunVerdict{}, color: true, want: "NO CHECKS"},
		{name: "nil", v: nil, want: "NO CHECKS"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, check.Bar(tc.v, tc.color))
		})
	}
}

func TestDetails(t *testing.T) {
	t.Parallel()
	v := &check.RunVerdict{Status: check.StatusFailed, Stopped: "fetch", Nodes: []check.NodeVerdict{
		{Node: "fetch", Visit: 1, Verdict: check.Fail, Checks: []check.CheckResult{
			{Check: "status ok", Type: "http_status", Verdict: check.Pass, Reasoning: "status 200 matches 2xx", OnFail: "fail"},
			{Check: "quick", Type: "expr", Verdict: check.Warn, Reasoning: "`fetch.ms < 100` is false", OnFail: "warn"},
			{Check: "shape", Type: "json_schema", Verdict: check.Fail, Reasoning: "the output does not match\nthe schema", OnFail: "fail"},
			{Check: "expect", Type: "expect", Verdict: check.Error, Reasoning: "no judge model configured", OnFail: "fail"},
			{Check: "soft", Type: "text_present", Verdict: check.Error, Reasoning: "no judge model configured", OnFail: "warn"},
		}},
		{Node: "poll", Visit: 4, Verdict: check.Skipped, Checks: []check.CheckResult{
			{Check: "done", Type: "expr", Verdict: check.Skipped, Reasoning: "evaluation stopped at node fetch", OnFail: "fail"},
		}},
	}}
	require.Equal(t, ""+
		"✓ fetch › status ok (http_status): status 200 matches 2xx\n"+
		"⚠ fetch › quick (expr): `fetch.ms < 100` is false\n"+
		"✗ fetch › shape (json_schema): the output does not match the schema\n"+
		"! fetch › expect: no judge model configured\n"+
		"! fetch › soft (text_present) [on_fail: warn]: no judge model configured\n"+
		"– poll (visit 4) › done (expr): evaluation stopped at node fetch\n",
		check.Details(v))
	require.Empty(t, check.Details(nil))
	require.Empty(t, check.Details(&check.RunVerdict{}))
	require.Equal(t, "warning: the judge's model m has no known price\n",
		check.Details(&check.RunVerdict{Warnings: []string{"the judge's model m has no known price"}}), "the pass's warnings follow the checks")
}

func TestCount(t *testing.T) {
	t.Parallel()
	v := run(check.StatusFailed, "", check.Pass, check.Pass, check.Warn, check.Fail, check.Error, check.Skipped, check.Skipped)
	require.Equal(t, check.Counts{Passed: 2, Warnings: 1, Failed: 1, Errors: 1, Skipped: 2}, check.Count(v))
	require.Equal(t, check.Counts{}, check.Count(nil))
}
