package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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

func TestSubworkflowRecursionFails(t *testing.T) {
	t.Parallel()
	r, m := runJSON(t, "testdata/sub/self.yaml")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, m["error"].(map[string]any)["message"], "recursion")
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
	require.Regexp(t, `not_taken\s+set\s+1\s+0\s+skipped \(dead_path\)`, show.stdout)
	require.Regexp(t, `off\s+set\s+1\s+0\s+skipped \(disabled\)`, show.stdout)
	require.Regexp(t, `taken\s+set\s+1\s+0\s+success\s`, show.stdout)
}
