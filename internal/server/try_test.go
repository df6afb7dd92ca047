package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/auth"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// chain is a workflow file of four nodes in a row: start → a → b → c.
const chain = `version: 1
name: chain
inputs:
  who: {type: string, required: true}
nodes:
  - {id: start, type: trigger.manual}
  - {id: a, type: template, text: "A for {{ inputs.who }}"}
  - id: b
    type: template
    text: "disk: {{ a.text }}"
  - {id: c, type: template, text: "C after {{ b.text }}"}
edges:
  - {from: start, to: a}
  - {from: a, to: b}
  - {from: b, to: c}
outputs:
  said: "{{ c.text }}"
`

func newChain(t *testing.T) *editor {
	return newEditor(t, func(flows string) {
		require.NoError(t, os.WriteFile(filepath.Join(flows, "chain.yaml"), []byte(chain), 0o600))
	})
}

// try posts a draft run and answers the status and body.
func (e *editor) try(sc auth.Scope, name string, body map[string]any) (int, http.Header, []byte) {
	e.t.Helper()
	data, err := json.Marshal(body)
	require.NoError(e.t, err)
	return e.do(sc, "POST", "/api/workflows/"+name+"/try", string(data))
}

// ended waits for a run to end and returns its document.
func (e *editor) ended(t *testing.T, id string) *runner.RunDoc {
	t.Helper()
	var doc *runner.RunDoc
	require.Eventually(t, func() bool {
		var err error
		doc, err = e.r.Get(t.Context(), id)
		require.NoError(t, err)
		return doc.FinishedAt != nil
	}, 30e9, 10e6, "run %s ends", id)
	return doc
}

func stepsByNode(doc *runner.RunDoc) map[string]runner.StepDoc {
	out := map[string]runner.StepDoc{}
	for _, s := range doc.Steps {
		out[s.Node] = s
	}
	return out
}

// TestTryRunsTheDraft: a draft, not saved, runs as the workflow: the run's
// result is the draft's, it records the draft as the version it ran, and
// the file on disk is untouched.
func TestTryRunsTheDraft(t *testing.T) {
	t.Parallel()
	e := newChain(t)
	draft := strings.Replace(chain, `"disk: {{ a.text }}"`, `"draft: {{ a.text }}"`, 1)
	status, hdr, body := e.try(auth.Edit, "chain", map[string]any{"source": draft, "inputs": map[string]any{"who": "ann"}})
	require.Equal(t, http.StatusAccepted, status, string(body))
	id := decode[map[string]any](t, body)["execution_id"].(string)
	require.Equal(t, "/api/runs/"+id, hdr.Get("Location"))

	doc := e.ended(t, id)
	require.Equal(t, "completed", string(doc.Status))
	require.Equal(t, map[string]any{"said": "C after draft: A for ann"}, doc.Outputs, "the draft's text ran, not the file's")
	require.Equal(t, "editor", doc.Source, "the run says the editor started it")

	wf, err := e.r.RunWorkflow(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, draft, string(wf.Source), "the run's stored version is the draft's text")
	onDisk, err := os.ReadFile(filepath.Join(e.flows, "chain.yaml"))
	require.NoError(t, err)
	require.Equal(t, chain, string(onDisk), "trying writes nothing")

	// A run of the file afterwards runs (and records) the file.
	status, _, body = e.do(auth.Run, "POST", "/api/workflows/chain/runs", `{"inputs": {"who": "bo"}}`)
	require.Equal(t, http.StatusAccepted, status, string(body))
	later := e.ended(t, decode[map[string]any](t, body)["execution_id"].(string))
	require.Equal(t, map[string]any{"said": "C after disk: A for bo"}, later.Outputs)
	wf, err = e.r.RunWorkflow(t.Context(), later.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, chain, string(wf.Source))
}

// TestTryOneNode: with a node, only that node of the draft runs: the
// nodes upstream of it reuse an earlier run's outputs (pinned), nothing
// downstream runs, and the node's checks are judged.
func TestTryOneNode(t *testing.T) {
	t.Parallel()
	e := newChain(t)
	status, _, body := e.do(auth.Run, "POST", "/api/workflows/chain/runs", `{"inputs": {"who": "ann"}}`)
	require.Equal(t, http.StatusAccepted, status, string(body))
	first := e.ended(t, decode[map[string]any](t, body)["execution_id"].(string))

	// The draft changes a (upstream: pinned, so its change does not show)
	// and b, and gives b a check.
	draft := strings.Replace(chain, `"A for {{ inputs.who }}"`, `"A2 for {{ inputs.who }}"`, 1)
	draft = strings.Replace(draft, `    text: "disk: {{ a.text }}"`, `    text: "node: {{ a.text }}"
    checks:
      - {name: says node, type: contains, value: "node:"}`, 1)
	for _, tc := range []struct {
		name string
		req  map[string]any
	}{
		{"the run given", map[string]any{"source": draft, "node": "b", "from_run": first.ExecutionID}},
		// The latest run with a, the run above, is the first's rerun.
		{"latest run by default", map[string]any{"source": draft, "node": "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, hdr, body := e.try(auth.Edit, "chain", tc.req)
			require.Equal(t, http.StatusAccepted, status, string(body))
			from := hdr.Get("Skein-Pinned-From")
			if tc.req["from_run"] != nil {
				require.Equal(t, first.ExecutionID, from)
			} else {
				require.NotEqual(t, first.ExecutionID, from, "the latest run that had a")
			}
			doc := e.ended(t, decode[map[string]any](t, body)["execution_id"].(string))
			require.Equal(t, "completed", string(doc.Status), "%+v", doc.Error)
			require.Equal(t, map[string]any{"who": "ann"}, doc.Inputs, "the node runs with the earlier run's inputs")
			steps := stepsByNode(doc)
			require.True(t, steps["a"].Pinned, "a is pinned")
			require.Equal(t, "A for ann", steps["a"].Output["text"], "a's output is the earlier run's")
			require.False(t, steps["b"].Pinned)
			require.Equal(t, "success", string(steps["b"].Status))
			require.Equal(t, "node: A for ann", steps["b"].Output["text"], "b ran the draft's text on the pinned output")
			require.NotContains(t, steps, "c", "nothing downstream of b runs")
			require.Equal(t, map[string]any{"b": map[string]any{"text": "node: A for ann"}}, doc.Outputs, "the run's result is b's output")
			require.NotNil(t, doc.Verdict)
			require.Equal(t, "PASSED", doc.Verdict.Status)
			require.Len(t, doc.Verdict.Nodes, 1)
			require.Equal(t, "b", doc.Verdict.Nodes[0].Node)
		})
	}
}

// TestTryRefuses: what a draft run refuses, and why.
func TestTryRefuses(t *testing.T) {
	t.Parallel()
	e := newChain(t)
	status, _, body := e.do(auth.Run, "POST", "/api/workflows/quick/runs", `{}`)
	require.Equal(t, http.StatusAccepted, status, string(body))
	quick := e.ended(t, decode[map[string]any](t, body)["execution_id"].(string))
	// A run of chain whose b was disabled: b did not succeed in it.
	noB := strings.Replace(chain, "  - id: b\n", "  - id: b\n    disabled: true\n", 1)
	status, _, body = e.try(auth.Edit, "chain", map[string]any{"source": noB, "inputs": map[string]any{"who": "x"}})
	require.Equal(t, http.StatusAccepted, status, string(body))
	skipped := e.ended(t, decode[map[string]any](t, body)["execution_id"].(string))
	require.Equal(t, "skipped", string(stepsByNode(skipped)["b"].Status))

	for _, tc := range []struct {
		name   string
		scope  auth.Scope
		body   map[string]any
		status int
		code   string
		says   string
	}{
		{"a run token", auth.Run, map[string]any{"source": chain, "inputs": map[string]any{"who": "x"}}, 403, "forbidden", "scope edit"},
		{"a read token", auth.Read, map[string]any{"source": chain}, 403, "forbidden", "scope edit"},
		{"an invalid draft", auth.Edit, map[string]any{"source": strings.Replace(chain, "b.text", "bb.text", 1)}, 422, "invalid_workflow", "bb"},
		{"missing inputs", auth.Edit, map[string]any{"source": chain}, 400, "invalid_inputs", "who"},
		{"an unknown node", auth.Edit, map[string]any{"source": chain, "node": "zz"}, 400, "bad_request", `no node "zz"`},
		{"a run of another workflow", auth.Edit, map[string]any{"source": chain, "node": "c", "from_run": quick.ExecutionID}, 409, "not_pinnable", "a run of quick"},
		{"a run without the upstream node", auth.Edit, map[string]any{"source": chain, "node": "c", "from_run": skipped.ExecutionID}, 409, "not_pinnable", "no successful step of b, upstream of c"},
		{"no run to pin from", auth.Edit, map[string]any{"source": chain, "node": "c"}, 409, "not_pinnable", "(start, a, b)"},
		{"from_run without a node", auth.Edit, map[string]any{"source": chain, "from_run": quick.ExecutionID}, 400, "bad_request", "from_run goes with node"},
		{"an unknown workflow", auth.Edit, map[string]any{"source": chain}, 0, "not_found", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "chain"
			if tc.code == "not_found" {
				name, tc.status = "nope", 404
			}
			status, _, body := e.try(tc.scope, name, tc.body)
			require.Equal(t, tc.status, status, string(body))
			p := decode[map[string]any](t, body)
			require.Equal(t, tc.code, p["code"], string(body))
			require.Contains(t, p["detail"], tc.says)
			if tc.code == "invalid_workflow" {
				require.NotEmpty(t, p["diagnostics"], "the problems come with their positions")
			}
		})
	}
	onDisk, err := os.ReadFile(filepath.Join(e.flows, "chain.yaml"))
	require.NoError(t, err)
	require.Equal(t, chain, string(onDisk))
}

// TestTryQueuedOnPostgres: on a Postgres server with a worker, a draft's
// run goes to the queue and the worker runs the draft (read from the
// version the run stored), not the file; a node's run reuses that run's
// outputs as on SQLite.
func TestTryQueuedOnPostgres(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	flows := copyFlows(t)
	require.NoError(t, os.WriteFile(filepath.Join(flows, "chain.yaml"), []byte(chain), 0o600))
	s := serve(t, serveOpts{flows: flows, args: []string{"--db", db}})
	startWorker(t, db)

	draft := strings.Replace(chain, `"disk: {{ a.text }}"`, `"draft: {{ a.text }}"`, 1)
	a := s.do("POST", "/api/workflows/chain/try", s.token, map[string]any{"source": draft, "inputs": map[string]any{"who": "ann"}})
	require.Equal(t, http.StatusAccepted, a.status, string(a.body))
	whole := s.ended(a.json(t)["execution_id"].(string))
	require.Equal(t, "completed", whole["status"], "%v", whole["error"])
	require.Equal(t, map[string]any{"said": "C after draft: A for ann"}, whole["outputs"], "the worker ran the draft")
	require.Equal(t, "editor", whole["source"])
	require.NotNil(t, step(whole, "a")["ran_on"].(map[string]any)["worker"], "a worker ran it")

	node := strings.Replace(draft, `"draft: {{ a.text }}"`, `"node: {{ a.text }}"`, 1)
	a = s.do("POST", "/api/workflows/chain/try", s.token, map[string]any{"source": node, "node": "b"})
	require.Equal(t, http.StatusAccepted, a.status, string(a.body))
	require.Equal(t, whole["execution_id"], a.header.Get("Skein-Pinned-From"))
	one := s.ended(a.json(t)["execution_id"].(string))
	require.Equal(t, "completed", one["status"], "%v", one["error"])
	require.Equal(t, true, step(one, "a")["pinned"], "a is pinned")
	require.Equal(t, "node: A for ann", step(one, "b")["output"].(map[string]any)["text"])
	require.Nil(t, step(one, "c"), "nothing after b runs")
	require.Equal(t, 0, s.stop(syscall.SIGTERM), s.log())
}
