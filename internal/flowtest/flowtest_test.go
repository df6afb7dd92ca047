package flowtest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/flowtest"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// probeKind counts its runs: a mocked probe node must never run.
type probeKind struct{ runs *atomic.Int32 }

func (p probeKind) Run(context.Context, *node.Call) (map[string]any, error) {
	p.runs.Add(1)
	return map[string]any{"ran": true}, nil
}

// registry is the standard kinds plus probe.
func registry(runs *atomic.Int32) *node.Registry {
	reg := node.NewRegistry()
	for _, s := range node.Default.Specs() {
		kind := s.Kind
		var ctor node.Constructor
		if _, ok := node.Default.New(kind); ok {
			ctor = func() node.Kind { k, _ := node.Default.New(kind); return k }
		}
		reg.MustRegister(*s, ctor)
	}
	reg.MustRegister(node.Spec{Kind: "probe", Category: node.Action, Description: "Counts its runs.",
		Outputs: []string{"ran", "n"}},
		func() node.Kind { return probeKind{runs} })
	return reg
}

const flow = `version: 1
name: flow
nodes:
  - {id: start, type: trigger.manual}
  - {id: fetch, type: probe}
  - {id: pick, type: if, condition: "fetch.n > 1"}
  - {id: big, type: template, text: "big {{ fetch.n }}"}
  - {id: small, type: template, text: "small {{ fetch.n }}"}
  - {id: joined, type: merge}
edges:
  - {from: start, to: fetch}
  - {from: fetch, to: pick}
  - {from: pick, to: big, on: "true"}
  - {from: pick, to: small, on: "false"}
  - {from: big, to: joined}
  - {from: small, to: joined}
outputs:
  text: "{{ big.text ?? small.text }}"
`

// write puts flow.yaml and flow.test.yaml holding test in a new folder
// and returns the test file's path.
func write(t *testing.T, test string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(flow), 0o644))
	p := filepath.Join(dir, "flow.test.yaml")
	require.NoError(t, os.WriteFile(p, []byte(test), 0o644))
	return p
}

// TestMockedNodesNeverRun: a mocked node's kind is never called, the run
// goes on with the mocked output, and the expectations are checked.
func TestMockedNodesNeverRun(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	reg := registry(&runs)
	p := write(t, `
cases:
  - name: big
    mocks:
      fetch: {output: {n: 5}}
    expect:
      status: completed
      outputs: {text: big 5}
      steps:
        pick: {branch: "true", visits: 1}
        small: {status: skipped, visits: 0}
  - name: wrong
    mocks:
      fetch: {output: {n: 0}}
    expect:
      outputs: {text: big 0}
      steps:
        pick: {branch: "true"}
        fetch: {status: failed}
  - name: failed
    mocks:
      fetch: {error: {message: down, category: connection}}
    expect:
      status: failed
      steps:
        fetch: {status: failed}
        joined: {status: skipped}
`)
	f, err := flowtest.Load(p, reg)
	require.NoError(t, err)
	rep := flowtest.Run(context.Background(), []*flowtest.File{f}, flowtest.Options{Registry: reg, Parallel: 2})
	require.Zero(t, runs.Load(), "a mocked node ran")
	require.Equal(t, 2, rep.Passed)
	require.Equal(t, 1, rep.Failed)
	require.True(t, rep.Cases[0].Passed, "%v", rep.Cases[0].Mismatches)
	require.True(t, rep.Cases[2].Passed, "%v %s", rep.Cases[2].Mismatches, rep.Cases[2].Error)
	var got []string
	for _, m := range rep.Cases[1].Mismatches {
		got = append(got, m.String())
	}
	require.Equal(t, []string{
		`outputs.text: want "big 0", got "small 0"`,
		`steps.fetch.status: want "failed", got "success"`,
		`steps.pick.branch: want "true", got "false"`,
	}, got)
}

// TestUnmockedNodesRun: a node without a mock runs for real, and a list
// of mocks answers visit by visit.
func TestUnmockedNodesRun(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	reg := registry(&runs)
	p := write(t, `
cases:
  - name: real
    expect:
      status: failed
`)
	f, err := flowtest.Load(p, reg)
	require.NoError(t, err)
	rep := flowtest.Run(context.Background(), []*flowtest.File{f}, flowtest.Options{Registry: reg})
	require.Equal(t, int32(1), runs.Load())
	// fetch.n is nil: the condition fails the run.
	require.True(t, rep.Cases[0].Passed, "%v", rep.Cases[0].Mismatches)
}

// TestLoadErrors: a test file that cannot run is refused with its file,
// the line of the problem and what to write instead.
func TestLoadErrors(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	reg := registry(&runs)
	tests := []struct {
		name, test, want string
	}{
		{"no cases", "cases: []\n", ":1: the file has no cases"},
		{"unknown key", "cases:\n  - name: a\n    expekt: {}\n", `:3: field expekt is not a key of a case (name, inputs, trigger, payload, mocks, cassette, judge, expect)`},
		{"unknown node", "cases:\n  - name: a\n    mocks:\n      fech: {output: {}}\n", `:4: case "a": mocks names node "fech", which`},
		{"did you mean", "cases:\n  - name: a\n    mocks:\n      fech: {output: {}}\n", `did you mean "fetch"?`},
		{"merge", "cases:\n  - name: a\n    mocks:\n      joined: {output: {}}\n", `:4: case "a": node "joined" is a merge (merge), which the engine settles without running it`},
		{"mock shape", "cases:\n  - name: a\n    mocks:\n      fetch: {outptu: {}}\n", `:4: case "a": mocks.fetch: unknown key "outptu" in a mock; a mock has output or error`},
		{"null mock", "cases:\n  - name: a\n    mocks:\n      fetch: null\n", `:4: case "a": mocks.fetch: a mock is {output: {...}} or {error: {message: ...}}, not empty (null)`},
		{"empty mock", "cases:\n  - name: a\n    mocks:\n      fetch:\n", `:4: case "a": mocks.fetch: a mock is {output: {...}} or {error: {message: ...}}, not empty (null)`},
		{"empty mock list", "cases:\n  - name: a\n    mocks:\n      fetch: []\n", `:4: case "a": mocks.fetch: a mock list needs at least one entry`},
		{"undeclared mock output", "cases:\n  - name: a\n    mocks:\n      fetch:\n        output: {rna: true}\n", `:5: case "a": mocks.fetch: output key "rna" is not an output of node "fetch"; did you mean "ran"?`},
		{"undeclared mock output, second visit", "cases:\n  - name: a\n    mocks:\n      fetch:\n        - output: {n: 1}\n        - output:\n            payload: 1\n", `:7: case "a": mocks.fetch: output key "payload" is not an output of node "fetch" (its outputs: ran, n)`},
		{"unknown directive", "cases:\n  - name: a\n    mocks:\n      fetch: {output: {_rout: \"true\"}}\n", `:4: case "a": mocks.fetch: output key "_rout" is not a directive Skein knows; did you mean "_route"?`},
		{"directive shape", "cases:\n  - name: a\n    mocks:\n      fetch: {output: {_token_usage: 7}}\n", `:4: case "a": mocks.fetch: the directive _token_usage cannot be 7`},
		{"route a map", "cases:\n  - name: a\n    mocks:\n      fetch: {output: {_route: {a: 1}}}\n", `the directive _route cannot be a map`},
		{"both", "cases:\n  - name: a\n    mocks:\n      fetch: {output: {}, error: {message: x}}\n", `a mock has either output or error`},
		{"category", "cases:\n  - name: a\n    mocks:\n      fetch: {error: {message: x, category: oops}}\n", `:4: case "a": mocks.fetch: unknown error category "oops"`},
		{"step status", "cases:\n  - name: a\n    expect:\n      steps:\n        fetch: {status: done}\n", `:5: case "a": unknown step status "done"; use one of`},
		{"run status", "cases:\n  - name: a\n    expect: {status: ok}\n", `:3: case "a": unknown run status "ok"`},
		{"verdict", "cases:\n  - name: a\n    expect: {verdict: passed}\n", `unknown verdict "passed"`},
		{"input", "cases:\n  - name: a\n    inputs: {nope: 1}\n", `:3: case "a": `},
		{"duplicate", "cases:\n  - name: a\n  - name: a\n", `:3: two cases are named "a"`},
		{"no name", "cases:\n  - expect: {}\n", `:2: a case needs a name`},
		{"not yaml", "cases: [\n", `(the format is in docs/testing.md)`},
		// A syntax error names the line that holds it, as a workflow's do.
		{"a key indented wrongly", "cases:\n  - name: a\n    inputs: {}\n   expect: {}\n", `:4: YAML: this line is indented by 3 spaces, which lines it up with no block above it (those are indented by 0, 2 or 4)`},
		{"a template not quoted", "cases:\n  - name: a\n    inputs:\n      n: {{ 1 }} x\n", `:4: YAML: a value that starts with {{ is read by YAML as a map: quote it, n: "{{ 1 }} x"`},
		{"infinite mock", "cases:\n  - name: a\n    mocks:\n      fetch: {output: {n: .inf}}\n", `:4: .inf is not a number a run can record (JSON has no infinity or NaN)`},
		{"NaN input", "cases:\n  - name: a\n    inputs: {n: .NaN}\n", `:3: .NaN is not a number a run can record`},
		// A value of the wrong kind is said in YAML's terms, not Go's.
		{"mock output a number", "cases:\n  - name: a\n    mocks:\n      fetch:\n        output: 1\n", `:5: case "a": mocks.fetch: output of a mock is a map of the node's outputs, not "1"`},
		{"inputs a list", "cases:\n  - name: a\n    inputs: [1]\n", `:3: expected a map, got a list`},
		{"status a list", "cases:\n  - name: a\n    expect:\n      status: [completed]\n", `:4: expected text, got a list`},
		{"undeclared output", "cases:\n  - name: a\n    expect:\n      outputs: {txt: 1}\n", `:4: case "a": expect.outputs names output "txt", which`},
		{"output did you mean", "cases:\n  - name: a\n    expect:\n      outputs: {txt: 1}\n", `does not declare; did you mean "text"?`},
		{"negative visits", "cases:\n  - name: a\n    expect:\n      steps:\n        fetch: {visits: -1}\n", `:5: case "a": expect.steps.fetch.visits is -1; a node is visited 0 or more times`},
		{"fractional visits", "cases:\n  - name: a\n    expect:\n      steps:\n        fetch: {visits: 1.5}\n", `:5: case "a": expect.steps.fetch.visits is "1.5"; a node is visited a whole number of times, 0 or more`},
		{"fractional max_tokens", "cases:\n  - name: a\n    expect: {max_tokens: 1.5}\n", `:3: case "a": expect.max_tokens is "1.5"; it is a whole number of tokens`},
		{"negative max_tokens", "cases:\n  - name: a\n    expect:\n      max_tokens: -5\n", `:4: case "a": expect.max_tokens is -5; no run could meet it`},
		{"negative max_cost_usd", "cases:\n  - name: a\n    expect:\n      max_cost_usd: -0.5\n", `:4: case "a": expect.max_cost_usd is -0.5; no run could meet it`},
		{"empty file", "", `: the file is empty; a test file has cases:`},
		{"visits text", "cases:\n  - name: a\n    expect:\n      steps:\n        fetch: {visits: two}\n", `:5: expected a number, got the text "two"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := write(t, tt.test)
			_, err := flowtest.Load(p, reg)
			require.Error(t, err)
			require.Contains(t, err.Error(), p)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestFind(t *testing.T) {
	t.Parallel()
	p := write(t, "cases: [{name: a}]\n")
	dir := filepath.Dir(p)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".skein"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".skein", "x.test.yaml"), nil, 0o644))
	got, err := flowtest.Find([]string{dir, p})
	require.NoError(t, err)
	require.Equal(t, []string{p}, got)
	// The same folder spelt another way, and through a symbolic link: its
	// file is taken once.
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(dir, link))
	got, err = flowtest.Find([]string{dir, filepath.Join(dir, "..", filepath.Base(dir)), link})
	require.NoError(t, err)
	require.Equal(t, []string{p}, got)
	_, err = flowtest.Find([]string{filepath.Join(dir, "flow.yaml")})
	require.ErrorContains(t, err, "flow.yaml is not a test file: test files are named *.test.yaml (the tests of ")
}

// FuzzLoad: no test file makes Load panic; it loads, or says what is
// wrong with the file's name in front.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("../../examples/*.test.yaml")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte("cases:\n  - name: a\n    mocks:\n      fetch: [{output: {n: 1}}, {error: {message: x}}]\n"))
	var runs atomic.Int32
	reg := registry(&runs)
	dir := f.TempDir()
	require.NoError(f, os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(flow), 0o644))
	f.Fuzz(func(t *testing.T, src []byte) {
		p := filepath.Join(dir, "flow.test.yaml")
		require.NoError(t, os.WriteFile(p, src, 0o644))
		file, err := flowtest.Load(p, reg)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), p), err.Error())
			return
		}
		require.NotEmpty(t, file.Cases)
	})
}

// TestMismatchShowsValuesAsWritten: a value is shown as JSON without
// HTML's escapes, so "<execution.id>" reads as the user wrote it.
func TestMismatchShowsValuesAsWritten(t *testing.T) {
	t.Parallel()
	m := flowtest.Mismatch{Path: "outputs.text", Want: map[string]any{"run": "<execution.id> & more"}, Got: "a > b"}
	require.Equal(t, `outputs.text: want {"run":"<execution.id> & more"}, got "a > b"`, m.String())
}
