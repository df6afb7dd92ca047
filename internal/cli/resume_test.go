package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// chain writes a five-node workflow whose nodes append their letter to a
// log file; node d succeeds only once the flag file exists.
func chain(t *testing.T, dir, bParam string) string {
	t.Helper()
	file := filepath.Join(dir, "chain.yaml")
	src := `version: 1
name: chain
inputs:
  log: {type: string, required: true}
  flag: {type: string, required: true}
nodes:
  - {id: a, type: shell, command: [sh, -c, 'echo a >> "$1"', x, "{{ inputs.log }}"]}
  - {id: b, type: shell, command: [sh, -c, 'echo b >> "$1"; echo ` + bParam + `', x, "{{ inputs.log }}"]}
  - {id: c, type: shell, command: [sh, -c, 'echo c >> "$1"; echo "$2"', x, "{{ inputs.log }}", "{{ b.stdout }}"]}
  - {id: d, type: shell, command: [sh, -c, 'test -f "$2" && echo d >> "$1"', x, "{{ inputs.log }}", "{{ inputs.flag }}"]}
  - {id: e, type: shell, command: [sh, -c, 'echo e >> "$1"', x, "{{ inputs.log }}"]}
edges:
  - {from: a, to: b}
  - {from: b, to: c}
  - {from: c, to: d}
  - {from: d, to: e}
`
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	return file
}

type runOut struct {
	ID     string `json:"execution_id"`
	Status string `json:"status"`
	Steps  []struct {
		Node   string `json:"node"`
		Status string `json:"status"`
		Cached bool   `json:"cached"`
		Pinned bool   `json:"pinned"`
		Output struct {
			Stdout string `json:"stdout"`
		} `json:"output"`
	} `json:"steps"`
}

func decode(t *testing.T, r result) runOut {
	t.Helper()
	var o runOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &o), r.stdout+r.stderr)
	return o
}

func (o runOut) cached() (cached, ran []string) {
	for _, s := range o.Steps {
		if s.Cached || s.Pinned {
			cached = append(cached, s.Node)
		} else if s.Status == "success" {
			ran = append(ran, s.Node)
		}
	}
	return cached, ran
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Join(strings.Fields(string(data)), "")
}

func TestResumeReusesSucceededSteps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := chain(t, dir, "one")
	log, flag := filepath.Join(dir, "log"), filepath.Join(dir, "flag")
	sk := filepath.Join(dir, ".skein")

	first := skein(t, "run", "--output", "json", "--dir", sk, file, "-i", "log="+log, "-i", "flag="+flag)
	require.Equal(t, 1, first.code, first.stderr)
	run := decode(t, first)
	require.Equal(t, "failed", string(run.Status))
	require.Equal(t, "abc", readLog(t, log))

	plan := skein(t, "resume", "--plan", "--dir", sk, run.ID)
	require.Equal(t, 0, plan.code, plan.stderr)
	require.Regexp(t, `reuse\s+a\s`, plan.stdout)
	require.Regexp(t, `run\s+d\s+was failed`, plan.stdout)
	require.Regexp(t, `depends\s+e\s+after d, which runs again; reused only if its inputs come out unchanged`, plan.stdout)
	require.Equal(t, "abc", readLog(t, log), "--plan changes nothing")

	require.NoError(t, os.WriteFile(flag, nil, 0o644))
	second := skein(t, "resume", "--output", "json", "--dir", sk, run.ID)
	require.Equal(t, 0, second.code, second.stderr)
	res := decode(t, second)
	require.Equal(t, run.ID, res.ID, "resume continues the same run")
	require.Equal(t, "completed", string(res.Status))
	cached, ran := res.cached()
	require.Equal(t, []string{"a", "b", "c"}, cached)
	require.Equal(t, []string{"d", "e"}, ran)
	require.Equal(t, "abcde", readLog(t, log), "a, b and c ran once")

	again := skein(t, "resume", "--dir", sk, run.ID)
	require.Equal(t, 2, again.code)
	require.Contains(t, again.stderr, "completed; there is nothing to resume")

	show := skein(t, "runs", "show", "--dir", sk, run.ID)
	require.Equal(t, 0, show.code, show.stderr)
	require.Contains(t, show.stdout, "success ↻ cached")
}

func TestResumeAfterEditRerunsChangedNodeAndDownstream(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := chain(t, dir, "one")
	log, flag := filepath.Join(dir, "log"), filepath.Join(dir, "flag")
	sk := filepath.Join(dir, ".skein")
	first := skein(t, "run", "--output", "json", "--dir", sk, file, "-i", "log="+log, "-i", "flag="+flag)
	require.Equal(t, 1, first.code, first.stderr)
	run := decode(t, first)

	chain(t, dir, "two") // node b changes
	require.NoError(t, os.WriteFile(flag, nil, 0o644))
	plan := skein(t, "resume", "--plan", "--dir", sk, run.ID)
	require.Regexp(t, `run\s+b\s+definition changed`, plan.stdout)
	require.Regexp(t, `reuse\s+a\s+succeeded, unchanged`, plan.stdout)
	require.Regexp(t, `depends\s+c\s+after b, which runs again`, plan.stdout)

	second := skein(t, "resume", "--output", "json", "--dir", sk, run.ID)
	require.Equal(t, 0, second.code, second.stderr)
	cached, ran := decode(t, second).cached()
	require.Equal(t, []string{"a"}, cached)
	require.Equal(t, []string{"b", "c", "d", "e"}, ran)
	require.Equal(t, "abc"+"bcde", readLog(t, log))
}

func TestRerunWithPin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sk := filepath.Join(dir, ".skein")
	counter := filepath.Join(dir, "n")
	file := filepath.Join(dir, "pin.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`version: 1
name: pin
inputs:
  counter: {type: string}
nodes:
  - {id: a, type: shell, command: [sh, -c, 'echo x >> "$1"; wc -l < "$1"', x, "{{ inputs.counter }}"]}
  - {id: b, type: template, text: "a said {{ trim(a.stdout) }}"}
edges:
  - {from: a, to: b}
outputs:
  said: "{{ b.text }}"
`), 0o644))
	first := skein(t, "run", "--output", "json", "--dir", sk, file, "-i", "counter="+counter)
	require.Equal(t, 0, first.code, first.stderr)
	id := decode(t, first).ID

	pinned := skein(t, "rerun", "--output", "json", "--dir", sk, "--pin", "a", id)
	require.Equal(t, 0, pinned.code, pinned.stderr)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(pinned.stdout), &res))
	require.NotEqual(t, id, res["execution_id"], "rerun is a new run")
	require.Equal(t, "a said 1", res["outputs"].(map[string]any)["said"], "a's output is reused although running it would print 2")
	steps := res["steps"].([]any)
	require.Equal(t, true, steps[0].(map[string]any)["pinned"])
	require.Equal(t, "x", readLog(t, counter), "a did not run again")

	fresh := skein(t, "rerun", "--output", "json", "--dir", sk, id)
	require.Equal(t, 0, fresh.code, fresh.stderr)
	require.NoError(t, json.Unmarshal([]byte(fresh.stdout), &res))
	require.Equal(t, "a said 2", res["outputs"].(map[string]any)["said"])

	bad := skein(t, "rerun", "--dir", sk, "--pin", "zz", id)
	require.Equal(t, 2, bad.code)
	require.Contains(t, bad.stderr, `no node "zz"`)
}

func TestResumeBadInputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sk := filepath.Join(dir, ".skein")
	file := chain(t, dir, "one")
	log, flag := filepath.Join(dir, "log"), filepath.Join(dir, "flag")
	first := skein(t, "run", "--output", "json", "--dir", sk, file, "-i", "log="+log, "-i", "flag="+flag)
	id := decode(t, first).ID

	r := skein(t, "resume", "--dir", sk, "nope")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `no run "nope"`)

	renamed := filepath.Join(dir, "renamed.yaml")
	src, _ := os.ReadFile(file)
	require.NoError(t, os.WriteFile(renamed, []byte(strings.ReplaceAll(string(src), "id: a,", "id: alpha,")), 0o644))
	src2, _ := os.ReadFile(renamed)
	require.NoError(t, os.WriteFile(renamed, []byte(strings.ReplaceAll(string(src2), "{from: a, to: b}", "{from: alpha, to: b}")), 0o644))
	r = skein(t, "resume", "--dir", sk, "--file", renamed, id)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "has steps for node(s) a, which")
}

func TestRunsListAndPrune(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sk := filepath.Join(dir, ".skein")
	for i := 0; i < 3; i++ {
		r := skein(t, "run", "--output", "json", "--dir", sk, "testdata/ok.yaml", "-i", "city=Paris")
		require.Equal(t, 0, r.code, r.stderr)
	}
	l := skein(t, "runs", "list", "--dir", sk)
	require.Equal(t, 0, l.code, l.stderr)
	require.Equal(t, 4, len(strings.Split(strings.TrimSpace(l.stdout), "\n")), l.stdout)
	require.Contains(t, l.stdout, "completed")

	ev := skein(t, "runs", "events", "--dir", sk, strings.Fields(strings.Split(l.stdout, "\n")[1])[0])
	require.Equal(t, 0, ev.code, ev.stderr)
	require.Contains(t, ev.stdout, `"type":"execution_finished"`)

	bare := skein(t, "runs", "prune", "--dir", sk, "--older-than", "30")
	require.Equal(t, 2, bare.code, "a number without a unit is refused")
	require.Contains(t, bare.stderr, "needs a unit: 30d")
	word := skein(t, "runs", "prune", "--dir", sk, "--older-than", "a month")
	require.Equal(t, 2, word.code, "a duration Skein cannot read is refused")
	require.Equal(t, "skein: --older-than: \"a month\" is not a duration (write e.g. 500ms, 30s, 5m, 1h30m or 2d)\n", word.stderr)

	dry := skein(t, "runs", "prune", "--dir", sk, "--older-than", "1ms", "--dry-run")
	require.Equal(t, 0, dry.code, dry.stderr)
	require.Contains(t, dry.stdout, "3 runs would be deleted (dry run: nothing was)")
	folders, _ := filepath.Glob(filepath.Join(sk, "runs", "ok", "*"))
	require.Len(t, folders, 3, "a dry run deletes nothing")

	p := skein(t, "runs", "prune", "--dir", sk, "--older-than", "1ms")
	require.Equal(t, 0, p.code, p.stderr)
	require.Contains(t, p.stdout, "deleted 3 runs and 3 run folders")
	require.NoDirExists(t, filepath.Join(sk, "runs", "ok"), "the emptied workflow folder goes too")
	l = skein(t, "runs", "list", "--dir", sk)
	require.Equal(t, 1, len(strings.Split(strings.TrimSpace(l.stdout), "\n")))
}

// TestResumePlanInLoops: the plan of a resume tells, pass by pass, what
// the resume reuses: the passes of a loop that completed, and the node
// after the loop; a node that failed in a pass runs again, and what comes
// after it depends on it.
func TestResumePlanInLoops(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := filepath.Join(dir, "loop.yaml")
	inPass, atGate := filepath.Join(dir, "pass"), filepath.Join(dir, "gate")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: passes
nodes:
  - {id: l, type: loop, exit: "false", max_iterations: 3}
  - {id: body, type: shell, command: [echo, "pass {{ loop.index }}"]}
  - {id: check, type: shell, command: [sh, -c, 'test "$1" != 1 || test -f "$2"', x, "{{ loop.index }}", "`+inPass+`"]}
  - {id: end, type: endloop, loop: l}
  - {id: after, type: shell, command: [echo, after]}
  - {id: gate, type: shell, command: [test, -f, "`+atGate+`"]}
edges:
  - {from: l, to: body, on: body}
  - {from: body, to: check}
  - {from: check, to: end}
  - {from: l, to: after, on: done}
  - {from: after, to: gate}
`), 0o644))
	sk := filepath.Join(dir, ".skein")
	first, doc := runJSONIn(t, sk, flow)
	require.Equal(t, 1, first.code, first.stderr)
	id := doc["execution_id"].(string)

	// check fails in the second pass: what comes after it depends on it.
	plan := skein(t, "resume", "--plan", "--dir", sk, id)
	require.Equal(t, 0, plan.code, plan.stderr)
	require.Regexp(t, `reuse\s+body \(pass 1\)\s+succeeded, unchanged`, plan.stdout)
	require.Regexp(t, `reuse\s+check \(pass 1\)\s+succeeded, unchanged`, plan.stdout)
	require.Regexp(t, `reuse\s+body \(pass 2\)\s+succeeded, unchanged`, plan.stdout)
	require.Regexp(t, `run\s+check \(pass 2\)\s+was failed`, plan.stdout)
	require.Regexp(t, `depends\s+after\s+after check, which runs again`, plan.stdout)
	require.NotContains(t, plan.stdout, "pass 3")

	require.NoError(t, os.WriteFile(inPass, nil, 0o644))
	second := skein(t, "resume", "--output", "json", "--dir", sk, id)
	require.Equal(t, 1, second.code, second.stderr) // the gate is still closed
	cached, ran := decode(t, second).cached()
	require.Equal(t, []string{"body", "check", "body"}, cached, "the plan's reused steps")
	require.Equal(t, []string{"l", "after", "end", "check", "end", "body", "check", "end"}, ran, "in step_order: the node after the loop is planned before the passes")

	// Only the gate failed: the plan reuses every pass and the node after
	// the loop, and so does the resume.
	plan = skein(t, "resume", "--plan", "--dir", sk, id)
	require.Equal(t, 0, plan.code, plan.stderr)
	for _, step := range []string{"body (pass 1)", "check (pass 1)", "body (pass 2)", "check (pass 2)", "body (pass 3)", "check (pass 3)", "after"} {
		require.Regexp(t, `reuse\s+`+regexp.QuoteMeta(step)+`\s+succeeded, unchanged`, plan.stdout)
	}
	require.Regexp(t, `run\s+l\s+evaluated again on each pass`, plan.stdout)
	require.Regexp(t, `run\s+gate\s+was failed`, plan.stdout)
	require.NotContains(t, plan.stdout, "depends")

	require.NoError(t, os.WriteFile(atGate, nil, 0o644))
	third := skein(t, "resume", "--output", "json", "--dir", sk, id)
	require.Equal(t, 0, third.code, third.stderr)
	cached, _ = decode(t, third).cached()
	require.Equal(t, []string{"after", "body", "check", "body", "check", "body", "check"}, cached, "in step_order")
}

// TestResumePlanInForEachAndChildRuns: the plan names a foreach item's
// steps (each[1]) and plans the child run of a subworkflow node that runs
// again (call1/inner): its completed steps are reused, as the resume then
// reuses them.
func TestResumePlanInForEachAndChildRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "child.yaml"), []byte(`version: 1
name: child
nodes:
  - {id: inner, type: shell, command: [echo, inner]}
  - {id: gate, type: shell, command: [test, -f, "`+open+`"]}
edges:
  - {from: inner, to: gate}
`), 0o644))
	flow := filepath.Join(dir, "parent.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: parent
nodes:
  - {id: items, type: foreach, items: "{{ [1, 2] }}"}
  - {id: each, type: shell, command: [echo, "{{ loop.item }}"]}
  - {id: done, type: endloop, loop: items}
  - {id: call, type: subworkflow, workflow: child.yaml}
edges:
  - {from: items, to: each, on: body}
  - {from: each, to: done}
  - {from: items, to: call, on: done}
`), 0o644))
	sk := filepath.Join(dir, ".skein")
	first, doc := runJSONIn(t, sk, flow)
	require.Equal(t, 1, first.code, first.stderr)
	id := doc["execution_id"].(string)

	plan := skein(t, "resume", "--plan", "--dir", sk, id)
	require.Equal(t, 0, plan.code, plan.stderr)
	require.Regexp(t, `run\s+items\s+evaluated again on each pass`, plan.stdout)
	require.Regexp(t, `reuse\s+each\[0\]\s+succeeded, unchanged`, plan.stdout)
	require.Regexp(t, `reuse\s+each\[1\]\s+succeeded, unchanged`, plan.stdout)
	require.Regexp(t, `run\s+call\s+was failed`, plan.stdout)
	require.Regexp(t, `reuse\s+call1/inner\s+succeeded, unchanged`, plan.stdout)
	require.Regexp(t, `run\s+call1/gate\s+was failed`, plan.stdout)

	var js struct {
		Nodes []struct {
			Node, Label, Run, Action string
			Visit                    int
		} `json:"nodes"`
	}
	planJSON := skein(t, "resume", "--plan", "-o", "json", "--dir", sk, id)
	require.NoError(t, json.Unmarshal([]byte(planJSON.stdout), &js), planJSON.stdout)
	var inner []string
	for _, n := range js.Nodes {
		if n.Run != "" {
			inner = append(inner, n.Run+" "+n.Node+" "+n.Action)
		}
	}
	require.Equal(t, []string{id + ".call1 inner reuse", id + ".call1 gate run"}, inner)

	require.NoError(t, os.WriteFile(open, nil, 0o644))
	second := skein(t, "resume", "--output", "json", "--dir", sk, id)
	require.Equal(t, 0, second.code, second.stderr)
	cached, _ := decode(t, second).cached()
	require.Equal(t, []string{"each", "each"}, cached)
	child := skein(t, "runs", "show", "-o", "json", "--dir", sk, id+".call1")
	require.Equal(t, 0, child.code, child.stderr)
	cached, ran := decode(t, child).cached()
	require.Equal(t, []string{"inner"}, cached, "the child reuses what its plan said")
	require.Equal(t, []string{"gate"}, ran)
}

// TestResumePlanOfAWaitingRun: a run left waiting for a signal goes on
// waiting when resumed: the plan reuses the wait and says what follows it
// waits for the signal.
func TestResumePlanOfAWaitingRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := filepath.Join(dir, "approve.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: approve
nodes:
  - {id: draft, type: shell, command: [echo, draft]}
  - {id: approval, type: wait, until: signal}
  - {id: publish, type: shell, command: [echo, "{{ approval.data.ok }}"]}
edges:
  - {from: draft, to: approval}
  - {from: approval, to: publish}
`), 0o644))
	sk := filepath.Join(dir, ".skein")
	first, doc := runJSONIn(t, sk, flow)
	require.Equal(t, 4, first.code, first.stderr)
	id := doc["execution_id"].(string)

	plan := skein(t, "resume", "--plan", "--dir", sk, id)
	require.Equal(t, 0, plan.code, plan.stderr)
	require.Regexp(t, `reuse\s+draft\s+succeeded, unchanged`, plan.stdout)
	require.Regexp(t, `reuse\s+approval\s+waiting, unchanged: waits on until its signal`, plan.stdout)
	require.Regexp(t, `depends\s+publish\s+after approval, which waits for its signal`, plan.stdout)

	second := skein(t, "resume", "--output", "json", "--dir", sk, id)
	require.Equal(t, 4, second.code, second.stderr)
	cached, ran := decode(t, second).cached()
	require.Empty(t, cached, "a waiting run goes on: its steps are kept as they were, not cached")
	require.Equal(t, []string{"draft"}, ran, "draft stays a success")
	var again map[string]any
	require.NoError(t, jsonUnmarshal(second.stdout, &again))
	startedAt := func(doc map[string]any, node string) any {
		for _, s := range doc["steps"].([]any) {
			if s := s.(map[string]any); s["node"] == node {
				return s["started_at"]
			}
		}
		return nil
	}
	require.NotNil(t, startedAt(doc, "draft"))
	require.Equal(t, startedAt(doc, "draft"), startedAt(again, "draft"),
		"draft did not run again, as the plan said: it keeps the time it ran at")
}
