package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// halfBuilt is a workflow with a disabled node whose command reads a node
// that does not exist, and a node no trigger reaches that has no command.
const halfBuilt = `version: 1
name: half
nodes:
  - {id: start, type: trigger.manual}
  - {id: greet, type: set, values: {msg: hello}}
  - id: draft
    type: shell
    disabled: true
    command: [sh, -c, "echo {{ nosuch.text }}"]
  - {id: after, type: set, values: {msg: "{{ greet.msg }}"}}
  - id: later
    type: shell
edges:
  - {from: start, to: greet}
  - {from: greet, to: draft}
  - {from: draft, to: after}
`

// A half-built branch does not block: skein validate lists its problems
// as warnings with their line:col and exits 0, and skein run runs the rest
// of the workflow, records the problems as warning events and never runs
// the broken nodes.
func TestIncompleteBranchesDoNotBlock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wf := filepath.Join(dir, "half.yaml")
	require.NoError(t, os.WriteFile(wf, []byte(halfBuilt), 0o644))

	v := skein(t, "validate", wf)
	require.Equal(t, 0, v.code, v.stdout+v.stderr)
	require.Contains(t, v.stdout, wf+`:9:32: warning: command[2] reads nosuch.text, but there is no node "nosuch"`)
	require.Contains(t, v.stdout, "; ignored because the node is disabled (node draft)\n")
	require.Contains(t, v.stdout, wf+`:11:5: warning: node type shell needs parameter "command"`)
	require.Contains(t, v.stdout, "; ignored because no run reaches the node from any trigger (node later)\n")
	require.NotContains(t, v.stdout, ": error:")
	require.True(t, strings.HasSuffix(v.stdout, "1 workflow valid\n"), v.stdout)

	vj := skein(t, "validate", "-o", "json", wf)
	require.Equal(t, 0, vj.code, vj.stdout+vj.stderr)
	var doc struct {
		Valid       bool `json:"valid"`
		Diagnostics []struct {
			Line, Col      int
			Node, Severity string
		} `json:"diagnostics"`
	}
	require.NoError(t, json.Unmarshal([]byte(vj.stdout), &doc))
	require.True(t, doc.Valid)
	for _, d := range doc.Diagnostics {
		require.Equal(t, "warning", d.Severity, "%+v", d)
	}

	r := skein(t, "run", "--dir", dir, "-o", "json", wf)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	var run struct {
		ID     string `json:"execution_id"`
		Status string `json:"status"`
		Steps  []struct {
			Node, Status string
			SkipReason   string         `json:"skip_reason"`
			Output       map[string]any `json:"output"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &run))
	require.Equal(t, "completed", run.Status)
	steps := map[string]string{}
	for _, s := range run.Steps {
		steps[s.Node] = s.Status + " " + s.SkipReason
		if s.Node == "after" {
			require.Equal(t, "hello", s.Output["msg"])
		}
	}
	require.Equal(t, map[string]string{
		"start": "success ", "greet": "success ", "draft": "skipped disabled", "after": "success ",
	}, steps, "later never runs and has no step")

	ev := skein(t, "runs", "events", "--dir", dir, run.ID)
	require.Equal(t, 0, ev.code, ev.stderr)
	warnings := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(ev.stdout), "\n") {
		var e struct {
			Type, Node string
			Data       map[string]any
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e), line)
		if e.Type == "warning" {
			warnings[e.Node] = append(warnings[e.Node], e.Data["message"].(string))
		}
	}
	require.Len(t, warnings["draft"], 1)
	require.True(t, strings.HasPrefix(warnings["draft"][0], `node "draft", line 9:32: command[2] reads nosuch.text`), warnings["draft"][0])
	require.True(t, strings.HasSuffix(warnings["draft"][0], "; ignored because the node is disabled"), warnings["draft"][0])
	require.Contains(t, strings.Join(warnings["later"], "\n"), `node "later", line 11:5: node type shell needs parameter "command"`)
}

// A reached, enabled node with the same problem keeps the file invalid.
func TestIncompleteBranchReachedIsInvalid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wf := filepath.Join(dir, "half.yaml")
	src := strings.Replace(halfBuilt, "    disabled: true\n", "", 1)
	require.NoError(t, os.WriteFile(wf, []byte(src), 0o644))

	v := skein(t, "validate", wf)
	require.Equal(t, 2, v.code, v.stdout+v.stderr)
	require.Contains(t, v.stdout, wf+`:8:32: error: command[2] reads nosuch.text, but there is no node "nosuch"`)
	r := skein(t, "run", "--dir", dir, wf)
	require.Equal(t, 2, r.code, r.stdout+r.stderr)
}
