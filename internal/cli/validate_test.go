package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestValidateFoldersGlobsAndTestFiles: skein validate takes a folder (its
// *.yaml and *.yml files), a glob, and checks a *.test.yaml file as a test
// file, not as a workflow; the repository's examples are valid every way
// they are named.
func TestValidateFoldersGlobsAndTestFiles(t *testing.T) {
	t.Parallel()
	all, err := filepath.Glob("../../examples/*.yaml")
	require.NoError(t, err)
	var workflows, tests int
	for _, f := range all {
		if strings.HasSuffix(f, ".test.yaml") {
			tests++
		} else {
			workflows++
		}
	}
	require.Positive(t, tests)
	examplesValid := fmt.Sprintf("%d workflows and %d test files valid", workflows, tests)

	dir := t.TempDir()
	write := func(name, src string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
		return p
	}
	write("ok.yaml", "version: 1\nname: ok\nnodes:\n  - {id: start, type: trigger.manual}\n  - {id: say, type: template, text: hi}\nedges:\n  - {from: start, to: say}\n")
	write("ok.test.yaml", "cases:\n  - name: says hi\n    expect: {status: completed}\n")
	write("notes.txt", "not a workflow\n")
	write(".skein.yaml", "dir: store\n") // the project's settings, no workflow
	write("sub/other.yaml", "version: 1\nname: other\nnodes: [{id: start, type: trigger.manual, tiemout: 1s}]\n")
	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, "ok.yaml"), []byte("version: 1\nname: ok\nnodes:\n  - {id: start, type: trigger.manual}\n  - {id: say, type: template, text: hi}\nedges:\n  - {from: start, to: say}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(bad, "ok.test.yaml"), []byte("cases:\n  - name: mocks a node there is not\n    mocks: {sya: {output: {text: x}}}\n    expect: {status: completed}\n"), 0o644))

	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		want    []string
		notWant []string
	}{
		{name: "the examples folder", args: []string{"../../examples"}, code: 0, want: []string{examplesValid}, notWant: []string{"error"}},
		{name: "the examples folder with a slash", args: []string{"../../examples/"}, code: 0, want: []string{examplesValid}},
		{name: "the examples as a glob", args: []string{"../../examples/*.yaml"}, code: 0, want: []string{examplesValid}},
		{name: "the examples as the shell expands them", args: all, code: 0, want: []string{examplesValid}, notWant: []string{"error"}},
		{name: "a folder is its yaml files, not its sub-folders", args: []string{dir}, code: 0, want: []string{"1 workflow and 1 test file valid"}},
		{name: "a test file alone", args: []string{filepath.Join(dir, "ok.test.yaml")}, code: 0, want: []string{"1 test file valid"}},
		{name: "a file named twice counts once", args: []string{dir, filepath.Join(dir, "ok.yaml")}, code: 0, want: []string{"1 workflow and 1 test file valid"}},
		{name: "a test file's problem names its line", args: []string{bad}, code: 2, want: []string{
			filepath.Join(bad, "ok.test.yaml") + `:3:1: error: case "mocks a node there is not": mocks names node "sya"`, `did you mean "say"`}, notWant: []string{"valid"}},
		{name: "a glob, as a shell expands it, leaves out dot files", args: []string{filepath.Join(dir, "*.yaml")}, code: 0, want: []string{"1 workflow and 1 test file valid"}},
		{name: "a glob of dot files takes them", args: []string{filepath.Join(dir, ".*.yaml")}, code: 2, want: []string{`.skein.yaml:1:1: error: unknown key "dir"`}},
		{name: "a glob that matches nothing", args: []string{filepath.Join(dir, "*.json")}, code: 2, want: []string{"no file matches " + filepath.Join(dir, "*.json")}},
		{name: "a folder without workflows", args: []string{t.TempDir()}, code: 2, want: []string{"is a folder without workflow files (*.yaml, *.yml)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := skein(t, append([]string{"validate"}, tc.args...)...)
			require.Equal(t, tc.code, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			for _, w := range tc.want {
				require.Contains(t, r.stdout+r.stderr, w)
			}
			for _, w := range tc.notWant {
				require.NotContains(t, r.stdout, w)
			}
		})
	}
}
