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
		{"mock shape", "cases:\n  - name: a\n    mocks:\n      fetch: {outptu: {}}\n", `:4: unknown key "outptu" in a mock; a mock has output or error`},
		{"both", "cases:\n  - name: a\n    mocks:\n      fetch: {output: {}, error: {message: x}}\n", `a mock has either output or error`},
		{"category", "cases:\n  - name: a\n    mocks:\n      fetch: {error: {message: x, category: oops}}\n", `unknown error category "oops"`},
		{"step status", "cases:\n  - name: a\n    expect:\n      steps:\n        fetch: {status: done}\n", `:5: case "a": unknown step status "done"; use one of`},
		{"run status", "cases:\n  - name: a\n    expect: {status: ok}\n", `:3: case "a": unknown run status "ok"`},
		{"verdict", "cases:\n  - name: a\n    expect: {verdict: passed}\n", `unknown verdict "passed"`},
		{"input", "cases:\n  - name: a\n    inputs: {nope: 1}\n", `:3: case "a": `},
		{"duplicate", "cases:\n  - name: a\n  - name: a\n", `:3: two cases are named "a"`},
		{"no name", "cases:\n  - expect: {}\n", `:2: a case needs a name`},
		{"not yaml", "cases: [\n", `(the format is in docs/testing.md)`},
		{"infinite mock", "cases:\n  - name: a\n    mocks:\n      fetch: {output: {n: .inf}}\n", `:4: .inf is not a number a run can record (JSON has no infinity or NaN)`},
		{"NaN input", "cases:\n  - name: a\n    inputs: {n: .NaN}\n", `:3: .NaN is not a number a run can record`},
		// A value of the wrong kind is said in YAML's terms, not Go's.
		{"mock output a number", "cases:\n  - name: a\n    mocks:\n      fetch:\n        output: 1\n", `:5: expected a map, got the number 1 (the format`},
		{"inputs a list", "cases:\n  - name: a\n    inputs: [1]\n", `:3: expected a map, got a list`},
		{"status a list", "cases:\n  - name: a\n    expect:\n      status: [completed]\n", `:4: expected text, got a list`},
		{"undeclared output", "cases:\n  - name: a\n    expect:\n      outputs: {txt: 1}\n", `:4: case "a": expect.outputs names output "txt", which`},
		{"output did you mean", "cases:\n  - name: a\n    expect:\n      outputs: {txt: 1}\n", `does not declare; did you mean "text"?`},
		{"negative visits", "cases:\n  - name: a\n    expect:\n      steps:\n        fetch: {visits: -1}\n", `:5: case "a": expect.steps.fetch.visits is -1; a node is visited 0 or more times`},
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
