package cli_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// traceFlow has a branch (an if whose false side is skipped) and a loop
// whose body runs twice.
const traceFlow = `version: 1
name: traced
%TRACE%
nodes:
  - id: start
    type: trigger.manual
  - id: big
    type: if
    condition: "inputs.n >= 2"
  - id: yes
    type: set
    vars: {c: 0}
  - id: no
    type: set
    vars: {c: 0}
  - id: poll
    type: loop
    exit: "vars.c >= 2"
    max_iterations: 5
  - id: body
    type: set
    vars: {c: "{{ vars.c + 1 }}"}
  - id: back
    type: endloop
    loop: poll
  - id: report
    type: template
    text: "c={{ vars.c }}"
inputs:
  n: {type: integer, default: 3}
edges:
  - {from: start, to: big}
  - {from: big, to: yes, on: "true"}
  - {from: big, to: no, on: "false"}
  - {from: yes, to: poll}
  - {from: poll, to: body, on: body}
  - {from: body, to: back}
  - {from: poll, to: report, on: done}
`

// traceFile writes traceFlow with the given top-level trace line.
func traceFile(t *testing.T, traceLine string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "traced.yaml")
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(traceFlow, "%TRACE%", traceLine, 1)), 0o644))
	return file
}

// nodeRun is what a test reads of <node>/run.json.
type nodeRun struct {
	ExecutionID string `json:"execution_id"`
	Node        string `json:"node"`
	Type        string `json:"type"`
	Trace       string `json:"trace"`
	Status      string `json:"status"`
	StartedAt   string `json:"started_at"`
	FinishedAt  string `json:"finished_at"`
	Attempts    int    `json:"attempts"`
	Visits      []struct {
		Node       string `json:"node"`
		Status     string `json:"status"`
		Visit      int    `json:"visit"`
		Iteration  int    `json:"iteration"`
		Attempts   int    `json:"attempts"`
		SkipReason string `json:"skip_reason"`
		Cached     bool   `json:"cached"`
		StartedAt  string `json:"started_at"`
		FinishedAt string `json:"finished_at"`
	} `json:"visits"`
}

func readNodeRun(t *testing.T, runDir, node string) nodeRun {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(runDir, node, "run.json"))
	require.NoError(t, err)
	var n nodeRun
	require.NoError(t, json.Unmarshal(data, &n), string(data))
	return n
}

// eventKey is what a test compares of an event line.
type eventKey struct {
	Type      string `json:"type"`
	Node      string `json:"node"`
	Visit     int    `json:"visit"`
	Iteration int    `json:"iteration"`
}

func readEvents(t *testing.T, path string) []eventKey {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []eventKey
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e eventKey
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), sc.Text())
		out = append(out, e)
	}
	require.NoError(t, sc.Err())
	return out
}

// folderNames lists the names in a run folder.
func folderNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestRunTraceNodesWritesNodeFiles(t *testing.T) {
	t.Parallel()
	r, m := runJSON(t, "--trace", "nodes", traceFile(t, ""))
	require.Equal(t, 0, r.code, r.stderr)
	dir := m["dir"].(string)
	id := m["execution_id"].(string)

	nodes := []string{"start", "big", "yes", "no", "poll", "body", "back", "report"}
	require.ElementsMatch(t, append(slices.Clone(nodes), "run.json", "events.jsonl"), folderNames(t, dir),
		"every node with a step has a folder beside the run's files")
	runEvents := readEvents(t, filepath.Join(dir, "events.jsonl"))
	for _, n := range nodes {
		require.ElementsMatch(t, []string{"run.json", "events.jsonl"}, folderNames(t, filepath.Join(dir, n)), n)
		nr := readNodeRun(t, dir, n)
		require.Equal(t, id, nr.ExecutionID, n)
		require.Equal(t, n, nr.Node)
		require.Equal(t, "nodes", nr.Trace, n)
		// A node's events are the lines of the run's events.jsonl that
		// name it, in the same order.
		var want []eventKey
		for _, e := range runEvents {
			if e.Node == n {
				want = append(want, e)
			}
		}
		require.Equal(t, want, readEvents(t, filepath.Join(dir, n, "events.jsonl")), n)
	}

	no := readNodeRun(t, dir, "no")
	require.Equal(t, "skipped", no.Status, "the branch not taken")
	require.Len(t, no.Visits, 1)
	require.Equal(t, "branch_not_taken", no.Visits[0].SkipReason)
	require.Empty(t, no.StartedAt)
	require.Empty(t, readEvents(t, filepath.Join(dir, "no", "events.jsonl")), "a skipped node did not start")

	big := readNodeRun(t, dir, "big")
	require.Equal(t, "success", big.Status)
	require.Equal(t, 1, big.Attempts)
	require.NotEmpty(t, big.StartedAt)
	require.NotEmpty(t, big.FinishedAt)

	body := readNodeRun(t, dir, "body")
	require.Equal(t, "set", body.Type)
	require.Equal(t, "success", body.Status)
	require.Len(t, body.Visits, 2, "the loop's body ran twice: one run.json lists both visits")
	for i, v := range body.Visits {
		require.Equal(t, i+1, v.Visit)
		require.Equal(t, i, v.Iteration)
		require.Equal(t, "success", v.Status)
	}
	require.Equal(t, 2, body.Attempts, "the attempts of both visits")
	require.Equal(t, body.Visits[0].StartedAt, body.StartedAt, "the first visit's start")
	require.Equal(t, body.Visits[1].FinishedAt, body.FinishedAt, "the last visit's end")
	var started []int
	for _, e := range readEvents(t, filepath.Join(dir, "body", "events.jsonl")) {
		require.Equal(t, "body", e.Node)
		if e.Type == "node_started" {
			started = append(started, e.Visit)
		}
	}
	require.Equal(t, []int{1, 2}, started, "the events of both visits")
}

func TestRunTraceLevels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		traceLine string
		args      []string
		nodes     bool
	}{
		{name: "default", nodes: false},
		{name: "trace run flag", args: []string{"--trace", "run"}, nodes: false},
		{name: "workflow field", traceLine: "trace: nodes", nodes: true},
		{name: "workflow field run", traceLine: "trace: run", nodes: false},
		{name: "the flag wins over the field", traceLine: "trace: nodes", args: []string{"--trace", "run"}, nodes: false},
		{name: "the flag wins over the field run", traceLine: "trace: run", args: []string{"--trace", "nodes"}, nodes: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, m := runJSON(t, append(tc.args, traceFile(t, tc.traceLine))...)
			require.Equal(t, 0, r.code, r.stderr)
			names := folderNames(t, m["dir"].(string))
			if !tc.nodes {
				require.ElementsMatch(t, []string{"run.json", "events.jsonl"}, names, "the fast layout: no node files")
				return
			}
			require.Contains(t, names, "body")
			require.Equal(t, "success", readNodeRun(t, m["dir"].(string), "body").Status)
		})
	}
}

func TestRunTraceBadValues(t *testing.T) {
	t.Parallel()
	r := skein(t, "run", "--dir", t.TempDir(), "--trace", "node", traceFile(t, ""))
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `--trace must be run or nodes, not "node"; did you mean "nodes"?`)

	file := traceFile(t, "trace: all")
	r = skein(t, "run", "--dir", t.TempDir(), file)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, file+`:3:8: error: trace must be run or nodes, not "all"`)

	r = skein(t, "validate", file)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stdout+r.stderr, file+`:3:8: error: trace must be run or nodes, not "all"`)
}

func TestResumeTraceNodes(t *testing.T) {
	t.Parallel()
	sk := t.TempDir()
	r := skein(t, "run", "--dir", sk, "-o", "json", "testdata/fail.yaml")
	require.Equal(t, 1, r.code, r.stderr)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &m))
	dir := m["dir"].(string)
	require.ElementsMatch(t, []string{"run.json", "events.jsonl"}, folderNames(t, dir))

	fixed := filepath.Join(t.TempDir(), "fail.yaml")
	require.NoError(t, os.WriteFile(fixed, []byte(`version: 1
name: fail
nodes:
  - {id: ok, type: set, values: {x: 1}}
  - {id: boom, type: set, values: {y: 2}}
edges:
  - {from: ok, to: boom}
`), 0o644))
	r = skein(t, "resume", "--dir", sk, "-o", "json", "--trace", "nodes", "--file", fixed, m["execution_id"].(string))
	require.Equal(t, 0, r.code, r.stderr)

	ok := readNodeRun(t, dir, "ok")
	require.Equal(t, "success", ok.Status)
	require.Len(t, ok.Visits, 1)
	require.True(t, ok.Visits[0].Cached, "reused by the resume")
	boom := readNodeRun(t, dir, "boom")
	require.Equal(t, "success", boom.Status, "run again by the resume")
	var types []string
	for _, e := range readEvents(t, filepath.Join(dir, "boom", "events.jsonl")) {
		types = append(types, e.Type)
	}
	require.Equal(t, []string{"node_started", "node_finished", "node_started", "node_finished"}, types,
		"the node's events of both executions, as the database holds them")
}

// A run that waits for a signal has its node files when the command ends
// with it waiting; the signal that ends it rewrites them.
func TestRunTraceNodesOfAWaitingRun(t *testing.T) {
	t.Parallel()
	sk := t.TempDir()
	file := filepath.Join(t.TempDir(), "gate.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`version: 1
name: gate
trace: nodes
nodes:
  - {id: start, type: trigger.manual}
  - {id: approve, type: wait, until: signal}
  - {id: after, type: template, text: "by {{ approve.data.by }}"}
edges:
  - {from: start, to: approve}
  - {from: approve, to: after}
`), 0o644))
	r := skein(t, "run", "--dir", sk, "-o", "json", file)
	require.Equal(t, 4, r.code, r.stderr)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &m))
	dir, id := m["dir"].(string), m["execution_id"].(string)
	require.Equal(t, "waiting", readNodeRun(t, dir, "approve").Status)
	require.Equal(t, "success", readNodeRun(t, dir, "start").Status)

	r = skein(t, "signal", "--dir", sk, id, "approve", "--data", `{"by": "ada"}`)
	require.Equal(t, 0, r.code, r.stderr+r.stdout)
	require.Equal(t, "success", readNodeRun(t, dir, "approve").Status)
	require.Equal(t, "success", readNodeRun(t, dir, "after").Status)
}
