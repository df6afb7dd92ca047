package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/cli"
	_ "github.com/skeinhq/skein/node/standard"
)

type result struct {
	code   int
	stdout string
	stderr string
}

func skein(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return result{code, out.String(), errb.String()}
}

func runJSON(t *testing.T, args ...string) (result, map[string]any) {
	t.Helper()
	r := skein(t, append([]string{"run", "--output", "json", "--dir", t.TempDir()}, args...)...)
	var m map[string]any
	if r.stdout != "" {
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &m), r.stdout)
	}
	return r, m
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := skein(t, "version")
	require.Equal(t, 0, r.code)
	require.True(t, strings.HasPrefix(r.stdout, "skein "), r.stdout)
}

func TestRunInputs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		code     int
		stderr   string
		wantText string
	}{
		{"ok", []string{"testdata/ok.yaml", "-i", "city=Paris"}, 0, "", "Paris for 3 days"},
		{"typed", []string{"testdata/ok.yaml", "-i", "city=Oslo", "-i", "days=5"}, 0, "", "Oslo for 5 days"},
		{"missing required", []string{"testdata/ok.yaml"}, 2, "missing required input city (pass -i city=…)", ""},
		{"wrong type", []string{"testdata/ok.yaml", "-i", "city=Rome", "-i", "days=many"}, 2, `input days: expected an integer, got "many"`, ""},
		{"unknown input", []string{"testdata/ok.yaml", "-i", "city=Rome", "-i", "cty=x"}, 2, `input cty: not declared; did you mean "city"?`, ""},
		{"bad pair", []string{"testdata/ok.yaml", "-i", "city"}, 2, "write inputs as name=value", ""},
		// Numbers are read as JSON writes them, as the API and
		// --input-file read them: a whole one is an integer however written.
		{"whole in exponent form", []string{"testdata/ok.yaml", "-i", "city=Oslo", "-i", "days=1e1"}, 0, "", "Oslo for 10 days"},
		{"whole with a point", []string{"testdata/ok.yaml", "-i", "city=Oslo", "-i", "days=3.0"}, 0, "", "Oslo for 3 days"},
		{"a fraction", []string{"testdata/ok.yaml", "-i", "city=Oslo", "-i", "days=2.5"}, 2, `input days: expected an integer, got "2.5"`, ""},
		{"hexadecimal", []string{"testdata/ok.yaml", "-i", "city=Oslo", "-i", "days=0x10"}, 2, `input days: expected an integer, got "0x10"`, ""},
		{"infinity", []string{"testdata/ok.yaml", "-i", "city=Oslo", "-i", "days=inf"}, 2, `input days: expected an integer, got "inf" (a run records its values as JSON, which has no infinity or NaN)`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, m := runJSON(t, tc.args...)
			require.Equal(t, tc.code, r.code, r.stderr)
			require.Contains(t, r.stderr, tc.stderr)
			if tc.wantText != "" {
				require.Equal(t, "completed", m["status"])
				require.Equal(t, tc.wantText, m["outputs"].(map[string]any)["text"])
			}
		})
	}
}

// A number input takes the numbers a run can record, written as JSON
// writes them; Go's own spellings that JSON has not (infinity, NaN,
// hexadecimal, digits grouped by _) are refused before any run is made.
func TestRunNumberInputs(t *testing.T) {
	t.Parallel()
	wf := filepath.Join(t.TempDir(), "num.yaml")
	require.NoError(t, os.WriteFile(wf, []byte(`version: 1
name: num
inputs:
  x: {type: number}
nodes:
  - {id: start, type: trigger.manual}
  - {id: double, type: set, values: {y: "{{ inputs.x * 2 }}"}}
edges:
  - {from: start, to: double}
outputs:
  y: "{{ double.y }}"
`), 0o644))
	for text, want := range map[string]float64{"2.5": 5, "1e3": 2000, "+5": 10, "-0.25": -0.5, " 7 ": 14} {
		r, m := runJSON(t, wf, "-i", "x="+text)
		require.Equal(t, 0, r.code, "%q: %s", text, r.stderr)
		require.InDelta(t, want, m["outputs"].(map[string]any)["y"], 0, text)
	}
	for _, text := range []string{"inf", "-Inf", "NaN", "0x1p3", "1_000", "1e400", "", "null", `"3"`} {
		dir := t.TempDir()
		r := skein(t, "run", "--dir", dir, wf, "-i", "x="+text)
		require.Equal(t, 2, r.code, "%q: %s", text, r.stderr)
		require.Contains(t, r.stderr, fmt.Sprintf("input x: expected a number, got %q", text))
		_, err := os.Stat(filepath.Join(dir, "runs"))
		require.ErrorIs(t, err, fs.ErrNotExist, "%q: a refused input makes no run folder", text)
	}
}

// A list or map input takes JSON text: its numbers as the API takes them
// (one no run can hold is refused, said so), and its null as the API
// takes it, as no value (the input's default).
func TestRunJSONInputs(t *testing.T) {
	t.Parallel()
	wf := filepath.Join(t.TempDir(), "list.yaml")
	require.NoError(t, os.WriteFile(wf, []byte(`version: 1
name: list
inputs:
  l: {type: list, default: [1, 2]}
  m: {type: map, default: {k: 3}}
nodes:
  - {id: start, type: trigger.manual}
  - {id: count, type: set, values: {n: "{{ len(inputs.l) + inputs.m.k }}"}}
edges:
  - {from: start, to: count}
outputs:
  n: "{{ count.n }}"
`), 0o644))
	for _, args := range [][]string{{"-i", "l=null"}, {"-i", "m=null"}, {"-i", "l=[0, 0.0]", "-i", "m={\"k\": 3.0}"}} {
		r, m := runJSON(t, append([]string{wf}, args...)...)
		require.Equal(t, 0, r.code, "%q: %s", args, r.stderr)
		require.Equal(t, float64(5), m["outputs"].(map[string]any)["n"], args)
	}
	for text, want := range map[string]string{
		"l=[1e400]":        "input l: the number 1e400 is beyond what a run holds (a 64-bit float)",
		"m={\"k\": 1e999}": "input m: the number 1e999 is beyond what a run holds (a 64-bit float)",
		"l=[1, 2] [3]":     `input l: expected a JSON list, got "[1, 2] [3]"`,
		"l={}":             "input l: expected a list, got a map",
	} {
		r := skein(t, "run", "--dir", t.TempDir(), wf, "-i", text)
		require.Equal(t, 2, r.code, "%q: %s", text, r.stderr)
		require.Contains(t, r.stderr, want, text)
	}
}

// --input-file takes one JSON object of the inputs, its numbers as the
// API takes them; anything else is a usage error that says what the file
// holds.
func TestRunInputFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := 0
	file := func(text string) string {
		files++
		p := filepath.Join(dir, fmt.Sprintf("in-%d.json", files))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	r, m := runJSON(t, "testdata/ok.yaml", "--input-file", file(`{"city": "Oslo", "days": 1e1}`))
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Oslo for 10 days", m["outputs"].(map[string]any)["text"])
	for text, want := range map[string]string{
		`{"city": "Oslo", "days": 1e400}`: ": the number 1e400 is beyond what a run holds (a 64-bit float)",
		`["Oslo"]`:                        ` holds a JSON array, not an object of the inputs ({"name": value, …})`,
		`{"city": "Oslo"} {"days": 2}`:    " holds more than one JSON value; give one object of the inputs",
		`{"city": "Oslo", "days": 2.5}`:   `input days: expected an integer, got number 2.5`,
	} {
		p := file(text)
		r, _ := runJSON(t, "testdata/ok.yaml", "--input-file", p)
		require.Equal(t, 2, r.code, "%s: %s", text, r.stderr)
		if strings.HasPrefix(want, "input ") {
			require.Contains(t, r.stderr, want, text)
		} else {
			require.Contains(t, r.stderr, "--input-file "+p+want, text)
		}
	}
}

func TestRunExpressionErrorFailsNode(t *testing.T) {
	t.Parallel()
	r, m := runJSON(t, "testdata/typed.yaml", "-i", "city=Paris")
	require.Equal(t, 1, r.code, r.stderr)
	require.Equal(t, "failed", m["status"])
	msg := m["error"].(map[string]any)["message"].(string)
	require.Contains(t, msg, "node bad")
	require.Contains(t, msg, "values")
	require.Contains(t, msg, "line 9")
}

func TestRunInvalidWorkflowExits2(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(file, []byte("version: 1\nname: bad\nnodes:\n  - {id: a, type: shel}\n"), 0o644))
	r := skein(t, "run", "--dir", dir, file)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, file+`:4:19: error: unknown node type "shel"; did you mean "shell"?`)
}

func TestRunReadOnlyRunFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(blocker, []byte("x"), 0o644))
	r := skein(t, "run", "--dir", filepath.Join(blocker, "runs"), "testdata/ok.yaml", "-i", "city=Paris")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "run from a writable folder or set --dir")
}

func TestSubworkflowChain(t *testing.T) {
	t.Parallel()
	r, m := runJSON(t, "testdata/sub/parent.yaml", "-i", "n=1")
	require.Equal(t, 0, r.code, r.stderr+r.stdout)
	require.Equal(t, "child 2 > grandchild 3", m["outputs"].(map[string]any)["trail"])
}

// A workflow that runs itself as a child is refused before it runs,
// with the file and line of the node.
func TestSubworkflowRecursionFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := skein(t, "run", "--dir", dir, "testdata/sub/self.yaml")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, `testdata/sub/self.yaml:5:46: error: child workflow "self.yaml" is a workflow that runs this one (self.yaml → self.yaml)`)
	require.NoDirExists(t, filepath.Join(dir, "runs"), "no run is made")
}

func TestValidateJSONOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(file, []byte("version: 1\nname: bad\nnodes:\n  - {id: a, type: template, text: '{{ b.text }}'}\n"), 0o644))
	r := skein(t, "validate", "--output", "json", file)
	require.Equal(t, 2, r.code)
	var doc struct {
		Valid       bool             `json:"valid"`
		Diagnostics []map[string]any `json:"diagnostics"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.False(t, doc.Valid)
	ds := doc.Diagnostics
	require.Len(t, ds, 1)
	require.Equal(t, "a", ds[0]["node"])
	require.Equal(t, float64(4), ds[0]["line"])
	require.Contains(t, ds[0]["message"], `no node "b"`)
}

// TestRunsShowSaysWhySkipped: skein runs show names the reason of each
// skipped step beside its status, as the JSON document's skip_reason.
func TestRunsShowSaysWhySkipped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := filepath.Join(dir, "why.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: why
nodes:
  - {id: gate, type: if, condition: "false"}
  - {id: taken, type: set, values: {x: 1}}
  - {id: not_taken, type: set, values: {x: 2}}
  - {id: off, type: set, values: {x: 3}, disabled: true}
edges:
  - {from: gate, to: not_taken, on: "true"}
  - {from: gate, to: taken, on: "false"}
  - {from: taken, to: off}
`), 0o644))
	r, doc := runJSON(t, "--dir", dir, flow)
	require.Equal(t, 0, r.code, r.stderr)
	show := skein(t, "runs", "show", "--dir", dir, doc["execution_id"].(string))
	require.Equal(t, 0, show.code, show.stderr)
	require.Regexp(t, `not_taken\s+set\s+1\s+0\s+– skipped \(branch_not_taken: took false\)\s+0\s+-\s+-`, show.stdout)
	require.Regexp(t, `off\s+set\s+1\s+0\s+– skipped \(disabled\)\s+0\s+-\s+-`, show.stdout)
	require.Regexp(t, `taken\s+set\s+1\s+0\s+✓ success\s`, show.stdout)

	// A run without a folder (skein serve makes one only for a run that
	// keeps files) is not shown a folder that does not exist.
	require.NoError(t, os.RemoveAll(doc["dir"].(string)))
	show = skein(t, "runs", "show", "--dir", dir, doc["execution_id"].(string))
	require.Equal(t, 0, show.code, show.stderr)
	require.Contains(t, show.stdout, "\nfolder none (the run kept no files: its record is in the database)\n")
}

// TestRunsShowStepLog: skein runs show lists the whole plan: each step
// by its step_order, with its mark, why it was skipped and where it ran;
// a run that waits for a signal shows the nodes after the wait pending.
func TestRunsShowStepLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := filepath.Join(dir, "log.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: log
nodes:
  - {id: start, type: trigger.manual}
  - {id: fetch, type: shell, command: ["false"], on_error: route}
  - {id: use, type: set, values: {x: 1}}
  - {id: after_use, type: set, values: {x: 2}}
  - {id: recover, type: set, values: {x: 3}}
  - {id: approve, type: wait, until: signal, timeout: 24h}
  - {id: send, type: set, values: {x: 4}}
edges:
  - {from: start, to: fetch}
  - {from: fetch, to: use}
  - {from: use, to: after_use}
  - {from: fetch, to: recover, on: error}
  - {from: recover, to: approve}
  - {from: approve, to: send}
`), 0o644))
	r, doc := runJSONIn(t, dir, flow)
	require.Equal(t, 4, r.code, "waiting: exit 4\n%s", r.stderr)
	require.Equal(t, "waiting", doc["status"], r.stdout)
	show := skein(t, "runs", "show", "--dir", dir, doc["execution_id"].(string))
	require.Equal(t, 0, show.code, show.stderr)
	host, err := os.Hostname()
	require.NoError(t, err)
	here := regexp.QuoteMeta(host) + ` pid \d+`
	orders := map[string]string{}
	for _, line := range strings.Split(show.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 2 && regexp.MustCompile(`^\d+$`).MatchString(f[0]) {
			orders[f[1]] = f[0]
		}
	}
	require.Equal(t, map[string]string{"start": "1", "fetch": "2", "use": "3", "recover": "4", "after_use": "5", "approve": "6", "send": "7"},
		orders, "steps are numbered in the order of the plan (topological):\n%s", show.stdout)
	require.Regexp(t, `fetch\s+shell\s+1\s+0\s+✗ failed\s+1\s+\S+\s+`+here, show.stdout)
	require.Regexp(t, `use\s+set\s+1\s+0\s+– skipped \(upstream_failed\)\s+0\s+-\s+-`, show.stdout)
	require.Regexp(t, `after_use\s+set\s+1\s+0\s+– skipped \(dead_path\)\s+0\s+-\s+-`, show.stdout)
	require.Regexp(t, `recover\s+set\s+1\s+0\s+✓ success\s+1\s+\S+\s+`+here, show.stdout)
	require.Regexp(t, `approve\s+wait\s+1\s+0\s+⏸ waiting\s+1\s+\S+\s+`+here, show.stdout)
	require.Regexp(t, `send\s+set\s+1\s+0\s+· pending\s+0\s+-\s+-`, show.stdout)

	plan := skein(t, "resume", "--plan", "--dir", dir, doc["execution_id"].(string))
	require.Equal(t, 0, plan.code, plan.stderr)
	require.Regexp(t, `depends\s+send\s+after fetch, which runs again`, plan.stdout, "a planned step that never started comes after the step that runs again")

	cancel := skein(t, "cancel", "--dir", dir, doc["execution_id"].(string))
	require.Equal(t, 0, cancel.code, cancel.stderr)
	show = skein(t, "runs", "show", "--dir", dir, doc["execution_id"].(string))
	require.Regexp(t, `send\s+set\s+1\s+0\s+⊘ cancelled\s+0\s+-\s+-`, show.stdout, "a planned step a cancel stopped is cancelled")
	require.NotContains(t, show.stdout, "pending")
}

// writeCounter counts the writes made to it: each is a system call on a
// terminal or a pipe.
type writeCounter struct {
	bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// skein runs show and skein runs events write a run of many steps in a
// few writes, not one a table cell or an event line: the same text.
func TestRunsShowAndEventsWriteInFewWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := filepath.Join(dir, "many.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: many
nodes:
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ 1..200 }}"}
  - {id: item, type: set, values: {i: "{{ loop.item }}"}}
  - {id: next, type: endloop, loop: each}
edges:
  - {from: start, to: each}
  - {from: each, to: item, on: body}
  - {from: item, to: next}
`), 0o644))
	r, doc := runJSON(t, "--dir", dir, flow)
	require.Equal(t, 0, r.code, r.stderr)
	id := doc["execution_id"].(string)
	for _, args := range [][]string{{"runs", "show", "--dir", dir, id}, {"runs", "events", "--dir", dir, id}, {"runs", "events", "-o", "text", "--dir", dir, id}} {
		var out writeCounter
		var errb bytes.Buffer
		require.Equal(t, 0, cli.Main(context.Background(), args, strings.NewReader(""), &out, &errb), errb.String())
		lines := strings.Count(out.String(), "\n")
		require.Greater(t, lines, 400, "%v prints every step", args)
		require.Less(t, out.writes, 12, "%v: %d writes for %d lines", args, out.writes, lines)
		require.Equal(t, skein(t, args...).stdout, out.String())
	}
}
