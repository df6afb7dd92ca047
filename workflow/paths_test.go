package workflow_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

const childFlow = "version: 1\nname: child\nnodes:\n  - {id: one, type: set, values: {x: 1}}\n"

// The child workflows a workflow names (a subworkflow node's workflow:, an
// agent's workflow tool) must stay in the workflow's folder or a folder of
// files:, symlinks resolved: validation reports `..`, absolute paths and
// symlinks that lead out at the parameter's line, with the node and what
// to do, and ChildFile, what runs use, refuses them too.
func TestChildWorkflowsStayInTheirFolder(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	dir, outside := filepath.Join(top, "project"), filepath.Join(top, "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(top, "shared"), 0o755))
	require.NoError(t, os.MkdirAll(outside, 0o755))
	for _, f := range []string{filepath.Join(dir, "sub", "child.yaml"), filepath.Join(outside, "child.yaml"), filepath.Join(top, "shared", "child.yaml")} {
		require.NoError(t, os.WriteFile(f, []byte(childFlow), 0o644))
	}
	require.NoError(t, os.Symlink(filepath.Join(outside, "child.yaml"), filepath.Join(dir, "link.yaml")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "outdir")))

	subworkflow := func(path string) string {
		return "version: 1\nname: parent\nnodes:\n  - id: run_child\n    type: subworkflow\n    workflow: " + path + "\n"
	}
	agentTool := func(path string) string {
		return "version: 1\nname: parent\nllm:\n  default: {provider: openai, model: gpt-4.1-mini, api_key: test}\nnodes:\n  - id: run_child\n    type: agent\n    prompt: go\n    tools:\n      - {workflow: " + path + ", name: child}\n"
	}
	for _, kind := range []struct {
		name string
		flow func(string) string
		line int // of the parameter naming the file
	}{
		{"subworkflow", subworkflow, 6},
		{"agent workflow tool", agentTool, 10},
	} {
		for _, tc := range []struct {
			name, path, files string
			ok                bool
			symlink           bool
		}{
			{name: "in a subfolder", path: "sub/child.yaml", ok: true},
			{name: "dot-dot out", path: "../outside/child.yaml"},
			{name: "absolute outside", path: filepath.Join(outside, "child.yaml")},
			{name: "a symlink inside that leads out", path: "link.yaml", symlink: true},
			{name: "through a symlinked folder", path: "outdir/child.yaml", symlink: true},
			{name: "outside, in a folder of files:", path: "../shared/child.yaml", files: "files: [../shared]\n", ok: true},
		} {
			t.Run(kind.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				file := filepath.Join(dir, strings.NewReplacer(" ", "-", "/", "-").Replace(kind.name+"-"+tc.name)+".yaml")
				src := kind.flow(tc.path)
				if tc.files != "" {
					src = strings.Replace(src, "nodes:", tc.files+"nodes:", 1)
				}
				require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
				w, ds := workflow.Load(file, node.Default)
				require.NotNil(t, w)
				n := w.Node("run_child")
				require.NotNil(t, n)
				full, err := w.ChildFile(n, map[bool]string{true: "workflow", false: "tools"}[kind.name == "subworkflow"], tc.path)
				if tc.ok {
					require.False(t, ds.HasErrors(), ds.Error())
					require.NoError(t, err)
					require.FileExists(t, full)
					return
				}
				require.True(t, ds.HasErrors(), "validation refuses it")
				var d workflow.Diagnostic
				for _, e := range ds.Errors() {
					if strings.Contains(e.Message, "child workflow") {
						d = e
					}
				}
				require.Equal(t, kind.line, d.Line, d.String())
				require.Equal(t, "run_child", d.Node)
				require.Contains(t, d.Message, "outside "+dir)
				require.Contains(t, d.Message, "move the file into "+dir+" (a subfolder is fine) or declare its folder in files: [folder]")
				if tc.symlink {
					require.Contains(t, d.Message, "leads through a symlink to")
				}

				require.Error(t, err, "runs refuse it too")
				require.True(t, errors.Is(err, workflow.ErrPathEscapes), err.Error())
				require.Contains(t, err.Error(), file+":"+strconv.Itoa(kind.line)+`: node "run_child": child workflow`)
			})
		}
	}
}
