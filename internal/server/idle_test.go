package server_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// halfBuilt has a disabled node whose command reads a node that does not
// exist, and a node no trigger reaches that has no command.
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

// A served workflow with a half-built branch is served and runs: the
// problems of its disabled and unreachable nodes are warnings, as
// POST /api/workflows/validate answers, and its runs record them as
// warning events and never run those nodes.
func TestServedIncompleteBranchesDoNotBlock(t *testing.T) {
	t.Parallel()
	flows := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(flows, "half.yaml"), []byte(halfBuilt), 0o644))
	p := newInproc(t, inprocOpts{flows: flows})

	status, body := p.do("POST", "/api/workflows/validate", halfBuilt)
	require.Equal(t, http.StatusOK, status, string(body))
	var v struct {
		Valid       bool `json:"valid"`
		Diagnostics []struct {
			Line, Col      int
			Node, Severity string
			Message        string
		} `json:"diagnostics"`
	}
	require.NoError(t, json.Unmarshal(body, &v))
	require.True(t, v.Valid, string(body))
	found := false
	for _, d := range v.Diagnostics {
		require.Equal(t, "warning", d.Severity, "%+v", d)
		if d.Node == "draft" {
			found = true
			require.Equal(t, [2]int{9, 32}, [2]int{d.Line, d.Col})
			require.True(t, strings.HasSuffix(d.Message, "; ignored because the node is disabled"), d.Message)
		}
	}
	require.True(t, found, string(body))

	id := p.start("half", "{}")
	require.Equal(t, "completed", p.waitEnd(id))
	status, body = p.do("GET", "/api/runs/"+id, "")
	require.Equal(t, http.StatusOK, status, string(body))
	var doc struct {
		Steps []struct {
			Node, Status string
			SkipReason   string `json:"skip_reason"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(body, &doc))
	steps := map[string]string{}
	for _, s := range doc.Steps {
		steps[s.Node] = s.Status + " " + s.SkipReason
	}
	require.Equal(t, map[string]string{
		"start": "success ", "greet": "success ", "draft": "skipped disabled", "after": "success ",
	}, steps, "later never runs and has no step")

	status, body = p.do("GET", "/api/runs/"+id+"/events", "")
	require.Equal(t, http.StatusOK, status)
	var warnings []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e struct {
			Type, Node string
			Data       map[string]any
		}
		if json.Unmarshal([]byte(data), &e) == nil && e.Type == "warning" && e.Node == "draft" {
			warnings = append(warnings, e.Data["message"].(string))
		}
	}
	require.Len(t, warnings, 1, string(body))
	require.Contains(t, warnings[0], `node "draft", line 9:32: command[2] reads nosuch.text`)
}
