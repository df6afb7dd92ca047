package runner_test

import (
	"encoding/json"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/repair"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/node"
)

// lastStep returns the latest step of node id in a run's document.
func lastStep(t *testing.T, b *bundle, runID, id string) *runner.StepDoc {
	t.Helper()
	doc, err := b.r.Get(b.ctx, runID)
	require.NoError(t, err)
	var got *runner.StepDoc
	for i := range doc.Steps {
		if doc.Steps[i].Node == id {
			got = &doc.Steps[i]
		}
	}
	require.NotNil(t, got, "no step of %s", id)
	return got
}

// TestTemplateErrorCarriesItsContext: a template that reads a key its
// object lacks fails its step with an error that names the node, says it
// is a template's (fixable by an edit) and lists the object's keys; the
// run's error says the same.
func TestTemplateErrorCarriesItsContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := b.r.Load(b.write(t, "typo.yaml", `version: 1
name: typo
nodes:
  - {id: fetch, type: shell, command: [echo, '{"items": [1, 2], "total": 2}']}
  - {id: show, type: template, text: "{{ upper(fetch.json.itemz) }}"}
edges:
  - {from: fetch, to: show}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))

	e := lastStep(t, b, res.Run.ID, "show").Error
	require.NotNil(t, e)
	require.Equal(t, "show", e.Node)
	require.Equal(t, node.SourceTemplate, e.Source)
	require.True(t, e.Fixable, "a template an edit can correct")
	require.Equal(t, "template", e.Code)
	require.Equal(t, "fetch.json.itemz", e.Details["missing"])
	require.Equal(t, []any{"items", "total"}, e.Details["available_fields"],
		"the keys of the object that lacked itemz, sorted")

	got, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.NotNil(t, got.Error)
	require.Equal(t, "show", got.Error.Node, "the run's error names the node it came from")
	require.Equal(t, node.SourceTemplate, got.Error.Source)
	require.True(t, got.Error.Fixable)
	validateDoc(t, compileSchema(t), got)
}

// TestRuntimeErrorContext: a command that fails is a runtime error of its
// node; a timeout is one an edit does not cure.
func TestRuntimeErrorContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := b.r.Load(b.write(t, "slow.yaml", `version: 1
name: slow
nodes:
  - {id: broken, type: shell, command: [sh, -c, 'exit 3'], on_error: continue}
  - {id: slow, type: shell, command: [sh, -c, 'exec sleep 30'], timeout: 50ms}
edges:
  - {from: broken, to: slow}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))

	broken := lastStep(t, b, res.Run.ID, "broken").Error
	require.NotNil(t, broken)
	require.Equal(t, "broken", broken.Node)
	require.Equal(t, node.SourceRuntime, broken.Source)
	require.True(t, broken.Fixable, "%s errors are repaired", broken.Category)

	slow := lastStep(t, b, res.Run.ID, "slow").Error
	require.NotNil(t, slow)
	require.Equal(t, "slow", slow.Node)
	require.Equal(t, node.SourceRuntime, slow.Source)
	require.Equal(t, node.CategoryTimeout, slow.Category)
	require.False(t, slow.Fixable, "a timeout is not cured by an edit")
}

// TestLongErrorMessageIsCut: a message over 2,000 characters is stored cut
// there, its secrets masked first, and the whole masked text is kept in a
// blob the message and the details name.
func TestLongErrorMessageIsCut(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-t0ken"
	b := setupEnv(t, map[string]string{"TOKEN": secret})
	// The secret straddles the cut: masked first, no part of it is kept.
	w, err := b.r.Load(b.write(t, "loud.yaml", `version: 1
name: loud
secrets: [TOKEN]
nodes:
  - {id: loud, type: fail, message: "{{ repeat('é', 1995) }}{{ secrets.TOKEN }}{{ repeat('y', 3000) }}"}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))

	e := lastStep(t, b, res.Run.ID, "loud").Error
	require.NotNil(t, e)
	kept, marker, ok := strings.Cut(e.Message, "… (cut; whole message in blob ")
	require.True(t, ok, "the message says it was cut: %.100q…", e.Message)
	require.Equal(t, 2000, utf8.RuneCountInString(kept), "cut at 2,000 characters")
	require.Equal(t, strings.Repeat("é", 1995)+"***"+"yy", kept)
	require.NotContains(t, e.Message, secret[:3])

	ref, ok := e.Details["message_blob"].(*blob.Blob)
	require.True(t, ok, "details.message_blob refers to the whole message: %#v", e.Details["message_blob"])
	require.Contains(t, marker, ref.Path())
	whole, err := ref.Load()
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("é", 1995)+"***"+strings.Repeat("y", 3000), whole)

	got, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.Contains(t, got.Error.Message, "… (cut; whole message in blob ", "the run's error is the cut one")
	require.NotContains(t, got.Error.Message, secret[:3])
	validateDoc(t, compileSchema(t), got)
}

// TestAPIRefusalIsAWarning: a 200 whose JSON body says "status": 500
// succeeds, records a warning event naming the node and what the body
// said, and is a warning to --auto-repair, which repairs nothing for it.
func TestAPIRefusalIsAWarning(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status": 500, "message": "db down"}`)
	}))
	t.Cleanup(srv.Close)
	b := setup(t)
	w, err := b.r.Load(b.write(t, "refused.yaml", `version: 1
name: refused
inputs:
  base: {type: string}
nodes:
  - {id: get, type: http, url: "{{ inputs.base }}/orders"}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w, Inputs: map[string]any{"base": srv.URL}})
	require.NoError(t, err)
	require.Equal(t, "completed", string(res.Run.Status), "the node succeeds")
	require.Equal(t, "success", string(lastStep(t, b, res.Run.ID, "get").Status))

	evs, _, err := b.r.Events(b.ctx, res.Run.ID, 0, 0)
	require.NoError(t, err)
	var warnings []map[string]any
	for _, ev := range evs {
		if ev.Type == "warning" && ev.Node == "get" {
			warnings = append(warnings, ev.Data)
		}
	}
	require.Len(t, warnings, 1, "one warning on the node")
	require.Equal(t, "api_warning", warnings[0]["category"])
	require.Contains(t, warnings[0]["message"], `node get: the API answered "status": 500 (message: db down)`)

	a := repair.Assess(w, node.Default, res.Engine)
	require.Empty(t, a.Problems, "an API's refusal is not repaired")
	require.Equal(t, []repair.Warning{{Node: "get", Visit: 1, Message: `the API answered "status": 500 (message: db down)`}}, a.Warnings)
}

// TestHTTPErrorCarriesHeaders: a failed response's step error holds the
// response's headers, credentials and the run's secrets masked, and the
// time the request took.
func TestHTTPErrorCarriesHeaders(t *testing.T) {
	t.Parallel()
	const secret = "tok-0f-the-run"
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Set-Cookie", "session=abc123")
		w.Header().Set("X-Seen", "you sent "+r.Header.Get("X-Token"))
		w.Header().Set("X-Request-Id", "req-7")
		w.WriteHeader(nethttp.StatusUnprocessableEntity)
		io.WriteString(w, `{"error": "bad order"}`)
	}))
	t.Cleanup(srv.Close)
	b := setupEnv(t, map[string]string{"TOKEN": secret})
	w, err := b.r.Load(b.write(t, "post.yaml", `version: 1
name: post
secrets: [TOKEN]
inputs:
  base: {type: string}
nodes:
  - {id: post, type: http, method: POST, url: "{{ inputs.base }}/orders", headers: {X-Token: "{{ secrets.TOKEN }}"}}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w, Inputs: map[string]any{"base": srv.URL}})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))

	e := lastStep(t, b, res.Run.ID, "post").Error
	require.NotNil(t, e)
	require.Equal(t, "http_422", e.Code)
	require.True(t, e.Fixable, "a 422 is a request an edit can correct")
	headers, ok := e.Details["headers"].(map[string]any)
	require.True(t, ok, "details.headers: %#v", e.Details)
	require.Equal(t, "req-7", headers["x-request-id"])
	require.Equal(t, "***", headers["set-cookie"])
	require.Equal(t, "***", headers["x-seen"], "a header that holds a secret is masked")
	require.Contains(t, e.Details, "duration_ms")
	got, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	js, err := json.Marshal(got)
	require.NoError(t, err)
	require.NotContains(t, string(js), secret)
	require.NotContains(t, string(js), "abc123")
}

// TestErrorSources: a parameter whose rendered value does not fit its
// type is a validation error of its node, which an edit may fix; an error
// of the run's outputs names no node.
func TestErrorSources(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := b.r.Load(b.write(t, "typed.yaml", `version: 1
name: typed
nodes:
  - {id: size, type: set, values: {n: lots}}
  - {id: get, type: http, url: "http://127.0.0.1:1/", max_body: "{{ size.n }}"}
edges:
  - {from: size, to: get}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))
	e := lastStep(t, b, res.Run.ID, "get").Error
	require.NotNil(t, e)
	require.Equal(t, "param_type", e.Code)
	require.Equal(t, "get", e.Node)
	require.Equal(t, node.SourceValidation, e.Source)
	require.True(t, e.Fixable)

	w, err = b.r.Load(b.write(t, "outs.yaml", `version: 1
name: outs
nodes:
  - {id: a, type: shell, command: [echo, '{"n": 1}']}
outputs:
  n: "{{ upper(a.json.m) }}"
`))
	require.NoError(t, err)
	res, err = b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))
	got, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.NotNil(t, got.Error)
	require.Equal(t, "outputs", got.Error.Code)
	require.Empty(t, got.Error.Node, "no node made the run's outputs")
	require.Equal(t, node.SourceTemplate, got.Error.Source)
	require.True(t, got.Error.Fixable)
	require.Equal(t, []any{"n"}, got.Error.Details["available_fields"], "the keys of a.json, which lacked m")
}
