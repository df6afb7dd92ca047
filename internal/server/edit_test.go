package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/auth"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/server"
	"github.com/skeinhq/skein/internal/store/sqlite"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// editor is a server in the test's process, on a SQLite store, with a
// token of each scope, serving a copy of testdata/flows.
type editor struct {
	t      testing.TB
	url    string
	flows  string
	r      *runner.Runner
	tokens map[auth.Scope]string
}

// newEditor serves a copy of testdata/flows; prepare, when given, may add
// files to it before the server loads them.
func newEditor(t testing.TB, prepare ...func(flows string)) *editor {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	r, err := runner.Open(runner.Config{Dir: dir, Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	e := &editor{t: t, flows: copyFlows(t), r: r, tokens: map[auth.Scope]string{}}
	for _, p := range prepare {
		p(e.flows)
	}
	for _, sc := range []auth.Scope{auth.Read, auth.Run, auth.Edit, auth.Admin} {
		tok, _, err := r.Tokens().Create(t.Context(), sc, "edit test")
		require.NoError(t, err)
		e.tokens[sc] = tok
	}
	srv, err := server.New(server.Config{Runner: r, Workflows: e.flows, Auth: r.Tokens(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Grace: 5 * time.Second})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	e.url = "http://" + ln.Addr().String()
	return e
}

// do sends a request with a token of scope sc and the headers given as
// name, value pairs; it returns the status, the headers and the body.
func (e *editor) do(sc auth.Scope, method, path, body string, header ...string) (int, http.Header, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+e.tokens[sc])
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	return res.StatusCode, res.Header, data
}

// source is GET /api/workflows/{name}/source.
func (e *editor) source(name string) server.SourceDoc {
	e.t.Helper()
	status, hdr, body := e.do(auth.Read, "GET", "/api/workflows/"+name+"/source", "")
	require.Equal(e.t, http.StatusOK, status, string(body))
	var doc server.SourceDoc
	require.NoError(e.t, json.Unmarshal(body, &doc))
	require.Equal(e.t, doc.ETag, hdr.Get("ETag"))
	return doc
}

func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(body, &v), string(body))
	return v
}

const quickV2 = `version: 1
name: quick
# a comment the editor keeps
description: Greets someone, twice.
inputs:
  who: {type: string, default: world}
  n: {type: integer, default: 1}
nodes:
  - {id: start, type: trigger.manual}
  - {id: greet, type: template, text: "Hello again, {{ inputs.who }} #{{ inputs.n }}!"}
edges:
  - {from: start, to: greet}
outputs:
  text: "{{ greet.text }}"
`

func TestSourceRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEditor(t)
	file := filepath.Join(e.flows, "quick.yaml")
	require.NoError(t, os.Chmod(file, 0o640))
	onDisk, err := os.ReadFile(file)
	require.NoError(t, err)

	doc := e.source("quick")
	require.Equal(t, "quick", doc.Name)
	require.Equal(t, "quick.yaml", doc.File, "the path relative to --workflows")
	require.Equal(t, "application/yaml", doc.ContentType)
	require.Equal(t, string(onDisk), doc.Source)
	require.Regexp(t, `^"[0-9a-f]{64}"$`, doc.ETag, "a quoted SHA-256")
	require.True(t, doc.Served)

	status, hdr, body := e.do(auth.Edit, "PUT", "/api/workflows/quick/source", quickV2, "If-Match", doc.ETag, "Content-Type", "application/yaml")
	require.Equal(t, http.StatusOK, status, string(body))
	saved := decode[server.SavedDoc](t, body)
	require.Equal(t, "quick", saved.Name)
	require.Equal(t, "quick.yaml", saved.File)
	require.Equal(t, hdr.Get("ETag"), saved.ETag)
	require.NotEqual(t, doc.ETag, saved.ETag)
	require.Positive(t, saved.Version)

	now, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, quickV2, string(now), "the text is written as sent, comments and all")
	info, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), info.Mode().Perm(), "the file keeps its mode")
	left, err := filepath.Glob(filepath.Join(e.flows, ".*"))
	require.NoError(t, err)
	require.Empty(t, left, "no temporary file is left behind")

	again := e.source("quick")
	require.Equal(t, quickV2, again.Source)
	require.Equal(t, saved.ETag, again.ETag)
	status, _, body = e.do(auth.Read, "GET", "/api/workflows/quick", "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "Greets someone, twice.", decode[map[string]any](t, body)["description"], "the catalog serves the saved text")
}

func TestSaveNeedsIfMatch(t *testing.T) {
	t.Parallel()
	e := newEditor(t)
	before, err := os.ReadFile(filepath.Join(e.flows, "quick.yaml"))
	require.NoError(t, err)
	for name, hdr := range map[string][]string{"none": nil, "star": {"If-Match", "*"}} {
		status, _, body := e.do(auth.Edit, "PUT", "/api/workflows/quick/source", quickV2, hdr...)
		require.Equal(t, http.StatusPreconditionRequired, status, "%s: %s", name, body)
		require.Equal(t, "precondition_required", decode[server.Problem](t, body).Code)
	}
	after, err := os.ReadFile(filepath.Join(e.flows, "quick.yaml"))
	require.NoError(t, err)
	require.Equal(t, string(before), string(after), "the file is untouched")
}

func TestSaveConflictCarriesBothVersions(t *testing.T) {
	t.Parallel()
	e := newEditor(t)
	doc := e.source("quick")
	theirs := strings.Replace(doc.Source, "Greets someone at once.", "Changed by someone else.", 1)
	require.NoError(t, os.WriteFile(filepath.Join(e.flows, "quick.yaml"), []byte(theirs), 0o644))

	status, _, body := e.do(auth.Edit, "PUT", "/api/workflows/quick/source", quickV2, "If-Match", doc.ETag)
	require.Equal(t, http.StatusConflict, status, string(body))
	p := decode[server.Problem](t, body)
	require.Equal(t, "edit_conflict", p.Code)
	require.NotNil(t, p.Theirs)
	require.NotNil(t, p.Yours)
	require.Equal(t, theirs, p.Theirs.Source, "theirs: the file as it is now")
	require.Equal(t, e.source("quick").ETag, p.Theirs.ETag, "with its ETag, to save again with")
	require.Equal(t, quickV2, p.Yours.Source, "yours: the text that was not saved")
	now, err := os.ReadFile(filepath.Join(e.flows, "quick.yaml"))
	require.NoError(t, err)
	require.Equal(t, theirs, string(now), "never a silent overwrite")

	status, _, body = e.do(auth.Edit, "PUT", "/api/workflows/quick/source", quickV2, "If-Match", p.Theirs.ETag)
	require.Equal(t, http.StatusOK, status, "saved again over the version it has now seen: %s", body)
}

func TestSaveRefusesAnInvalidWorkflow(t *testing.T) {
	t.Parallel()
	e := newEditor(t)
	doc := e.source("quick")
	bad := strings.Replace(doc.Source, "type: template", "type: templat", 1)
	status, _, body := e.do(auth.Edit, "PUT", "/api/workflows/quick/source", bad, "If-Match", doc.ETag)
	require.Equal(t, http.StatusUnprocessableEntity, status, string(body))
	p := decode[server.Problem](t, body)
	require.Equal(t, "invalid_workflow", p.Code)
	require.NotEmpty(t, p.Diagnostics)
	d := p.Diagnostics[0]
	require.Equal(t, "quick.yaml", d.File)
	require.Equal(t, 9, d.Line)
	require.Positive(t, d.Col)
	require.Equal(t, "greet", d.Node)
	require.Contains(t, d.Message, "templat")
	require.NotContains(t, string(body), e.flows, "no path of the server's")
	now, err := os.ReadFile(filepath.Join(e.flows, "quick.yaml"))
	require.NoError(t, err)
	require.Equal(t, doc.Source, string(now), "the file is untouched")
}

func TestSaveNeedsTheEditScope(t *testing.T) {
	t.Parallel()
	e := newEditor(t)
	for _, tc := range []struct {
		scope auth.Scope
		want  int
	}{
		{auth.Read, http.StatusForbidden},
		{auth.Run, http.StatusForbidden},
		{auth.Edit, http.StatusOK},
		{auth.Admin, http.StatusOK},
	} {
		doc := e.source("quick")
		text := strings.Replace(quickV2, "twice", "by "+tc.scope.String(), 1)
		status, _, body := e.do(tc.scope, "PUT", "/api/workflows/quick/source", text, "If-Match", doc.ETag)
		require.Equal(t, tc.want, status, "%s: %s", tc.scope, body)
		if tc.want == http.StatusForbidden {
			require.Equal(t, "forbidden", decode[server.Problem](t, body).Code)
			require.Equal(t, doc.Source, e.source("quick").Source, "%s changed nothing", tc.scope)
			status, _, body = e.do(tc.scope, "POST", "/api/workflows", `{"file": "x.yaml", "source": "version: 1\nname: x\nnodes: []\n"}`)
			require.Equal(t, http.StatusForbidden, status, "%s may not create: %s", tc.scope, body)
			continue
		}
		require.Equal(t, text, e.source("quick").Source, "%s saved", tc.scope)
	}
}

func TestEditStaysInsideTheWorkflowsFolder(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "linked.yaml")
	secretText := "version: 1\nname: linked\nnodes:\n  - {id: a, type: template, text: outside}\n"
	require.NoError(t, os.WriteFile(secret, []byte(secretText), 0o644))
	// The catalog serves the workflow a link leads to; the editor refuses it.
	e := newEditor(t, func(flows string) {
		require.NoError(t, os.Symlink(secret, filepath.Join(flows, "linked.yaml")))
	})
	status, _, body := e.do(auth.Read, "GET", "/api/workflows/linked", "")
	require.Equal(t, http.StatusOK, status, "served: %s", body)

	quick := e.source("quick")
	for _, tc := range []struct {
		name, method, path string
		want               []int
	}{
		{"dot dot", "GET", "/api/workflows/%2e%2e/source", []int{400, 404}},
		{"dot dot slash", "GET", "/api/workflows/..%2fetc%2fpasswd/source", []int{400, 404}},
		{"dot dot put", "PUT", "/api/workflows/..%2fquick/source", []int{400, 404}},
		{"absolute", "GET", "/api/workflows/%2fetc%2fpasswd/source", []int{400, 404}},
		{"absolute put", "PUT", "/api/workflows/%2fetc%2fpasswd/source", []int{400, 404}},
		{"nul", "PUT", "/api/workflows/quick%00/source", []int{400, 404}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := e.do(auth.Admin, tc.method, tc.path, quickV2, "If-Match", quick.ETag)
			require.Contains(t, tc.want, status, string(body))
		})
	}
	for _, tc := range []struct{ name, file string }{
		{"dot dot", "../escape.yaml"},
		{"encoded dot dot", "..%2fescape.yaml"},
		{"absolute", filepath.Join(outside, "escape.yaml")},
		{"folder", "sub/escape.yaml"},
		{"nul", "escape\x00.yaml"},
		{"hidden", ".escape.yaml"},
		{"not a workflow file", "escape.txt"},
	} {
		t.Run("create "+tc.name, func(t *testing.T) {
			b, err := json.Marshal(server.CreateBody{File: tc.file, Source: "version: 1\nname: escape\nnodes: []\n"})
			require.NoError(t, err)
			status, _, body := e.do(auth.Admin, "POST", "/api/workflows", string(b))
			require.Equal(t, http.StatusBadRequest, status, string(body))
			require.Equal(t, "bad_request", decode[server.Problem](t, body).Code)
		})
	}
	left, err := filepath.Glob(filepath.Join(outside, "escape*"))
	require.NoError(t, err)
	require.Empty(t, left, "nothing was written outside")
	_, err = os.Stat(filepath.Join(filepath.Dir(e.flows), "escape.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)

	t.Run("symlink outside", func(t *testing.T) {
		status, _, body := e.do(auth.Admin, "GET", "/api/workflows/linked/source", "")
		require.Equal(t, http.StatusBadRequest, status, string(body))
		require.Contains(t, decode[server.Problem](t, body).Detail, "outside the workflows folder")
		changed := strings.Replace(secretText, "outside", "changed", 1)
		status, _, body = e.do(auth.Admin, "PUT", "/api/workflows/linked/source", changed, "If-Match", quick.ETag)
		require.Equal(t, http.StatusBadRequest, status, string(body))
		now, err := os.ReadFile(secret)
		require.NoError(t, err)
		require.Equal(t, secretText, string(now), "the file outside is untouched")
	})
}

// TestSourceOfAFileNotServed: a file that does not validate is answered
// by its base name, with its errors, so that the editor can mend it.
func TestSourceOfAFileNotServed(t *testing.T) {
	t.Parallel()
	e := newEditor(t)
	doc := e.source("broken")
	require.False(t, doc.Served)
	require.Equal(t, "broken.yaml", doc.File)
	require.Contains(t, doc.Source, "type: shel")
	require.NotEmpty(t, doc.Diagnostics)
	require.Equal(t, "a", doc.Diagnostics[0].Node)
	fixed := strings.Replace(doc.Source, "type: shel", "type: template, text: mended", 1)
	status, _, body := e.do(auth.Edit, "PUT", "/api/workflows/broken/source", fixed, "If-Match", doc.ETag)
	require.Equal(t, http.StatusOK, status, string(body))
	require.True(t, e.source("broken").Served, "served once mended")
}

func TestCreateWorkflow(t *testing.T) {
	t.Parallel()
	e := newEditor(t)
	text := "version: 1\nname: fresh\nnodes:\n  - {id: start, type: trigger.manual}\n  - {id: say, type: template, text: new}\nedges:\n  - {from: start, to: say}\n"
	b, err := json.Marshal(server.CreateBody{Source: text})
	require.NoError(t, err)
	status, hdr, body := e.do(auth.Edit, "POST", "/api/workflows", string(b))
	require.Equal(t, http.StatusCreated, status, string(body))
	saved := decode[server.SavedDoc](t, body)
	require.Equal(t, "fresh", saved.Name)
	require.Equal(t, "fresh.yaml", saved.File, "named after the workflow by default")
	require.Equal(t, "/api/workflows/fresh/source", hdr.Get("Location"))
	require.Equal(t, 1, saved.Version)
	data, err := os.ReadFile(filepath.Join(e.flows, "fresh.yaml"))
	require.NoError(t, err)
	require.Equal(t, text, string(data))
	require.Equal(t, text, e.source("fresh").Source, "served at once")

	for name, body := range map[string]server.CreateBody{
		"the file exists":        {File: "fresh.yaml", Source: strings.Replace(text, "fresh", "other", 1)},
		"the workflow is served": {File: "another.yaml", Source: text},
	} {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		status, _, resp := e.do(auth.Edit, "POST", "/api/workflows", string(b))
		require.Equal(t, http.StatusConflict, status, "%s: %s", name, resp)
		require.Equal(t, "workflow_exists", decode[server.Problem](t, resp).Code)
	}
	data, err = os.ReadFile(filepath.Join(e.flows, "fresh.yaml"))
	require.NoError(t, err)
	require.Equal(t, text, string(data), "the file that exists is untouched")
	_, err = os.Stat(filepath.Join(e.flows, "another.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)

	status, _, body = e.do(auth.Edit, "POST", "/api/workflows", `{"source": "version: 1\nnodes:\n  - {id: a, type: template, text: hi}\n"}`)
	require.Equal(t, http.StatusUnprocessableEntity, status, "no name to name the file by: %s", body)
	require.Contains(t, decode[server.Problem](t, body).Diagnostics[0].Message, "no name")

	b, err = json.Marshal(server.CreateBody{File: "wrong.yaml", Source: "version: 1\nname: wrong\nnodes:\n  - {id: a, type: shel}\n"})
	require.NoError(t, err)
	status, _, body = e.do(auth.Edit, "POST", "/api/workflows", string(b))
	require.Equal(t, http.StatusUnprocessableEntity, status, string(body))
	require.Equal(t, 4, decode[server.Problem](t, body).Diagnostics[0].Line)
	_, err = os.Stat(filepath.Join(e.flows, "wrong.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist, "an invalid workflow is not written")
}

// TestSaveIsAStoredVersion: a save stores the text as the workflow's next
// version; a run started before keeps showing the version it ran.
func TestSaveIsAStoredVersion(t *testing.T) {
	t.Parallel()
	e := newEditor(t)
	status, _, body := e.do(auth.Run, "POST", "/api/workflows/quick/runs", `{}`)
	require.Equal(t, http.StatusAccepted, status, string(body))
	id := decode[map[string]any](t, body)["execution_id"].(string)

	// The new version has another node.
	doc2 := e.source("quick")
	v2 := strings.Replace(quickV2, "edges:\n  - {from: start, to: greet}\n",
		"  - {id: bye, type: template, text: bye}\nedges:\n  - {from: start, to: greet}\n  - {from: greet, to: bye}\n", 1)
	status, _, body = e.do(auth.Edit, "PUT", "/api/workflows/quick/source", v2, "If-Match", doc2.ETag)
	require.Equal(t, http.StatusOK, status, string(body))
	saved := decode[server.SavedDoc](t, body)

	graph := func(runID string) []string {
		status, _, body := e.do(auth.Read, "GET", "/api/runs/"+runID+"/graph", "")
		require.Equal(t, http.StatusOK, status, string(body))
		var ids []string
		for _, n := range decode[server.GraphDoc](t, body).Nodes {
			ids = append(ids, n.ID)
		}
		return ids
	}
	require.Equal(t, []string{"start", "greet"}, graph(id), "the earlier run shows the version it ran")

	wf, err := e.r.RunWorkflow(t.Context(), id)
	require.NoError(t, err)
	require.Nil(t, wf.Node("bye"))

	status, _, body = e.do(auth.Run, "POST", "/api/workflows/quick/runs", `{}`)
	require.Equal(t, http.StatusAccepted, status, string(body))
	later := decode[map[string]any](t, body)["execution_id"].(string)
	require.Equal(t, []string{"start", "greet", "bye"}, graph(later), "a run started after the save runs the saved version")

	v, err := e.r.SaveWorkflow(t.Context(), "quick", []byte(v2))
	require.NoError(t, err)
	require.Equal(t, saved.Version, v, "the save stored the text as the latest version")
}

func TestKindsListEveryKind(t *testing.T) {
	t.Parallel()
	e := newEditor(t)
	status, _, body := e.do(auth.Read, "GET", "/api/kinds", "")
	require.Equal(t, http.StatusOK, status, string(body))
	doc := decode[server.KindsDoc](t, body)
	var kinds []string
	byKind := map[string]int{}
	for i, k := range doc.Kinds {
		kinds = append(kinds, k.Kind)
		byKind[k.Kind] = i
	}
	require.ElementsMatch(t, node.Default.Kinds(), kinds, "every registered kind")
	for _, spec := range node.Default.Specs() {
		k := doc.Kinds[byKind[spec.Kind]]
		require.Len(t, k.Params, len(spec.Params), spec.Kind)
		require.NotEmpty(t, k.Group, spec.Kind)
	}
	shell := doc.Kinds[byKind["shell"]]
	require.Equal(t, "Actions", shell.Group)
	require.Equal(t, "command", shell.Params[0].Name)
	require.Equal(t, "any", shell.Params[0].Type, "a command line or a list of arguments")
	require.True(t, shell.Params[0].Required)
	require.NotEmpty(t, shell.Params[0].Description)
	require.True(t, doc.Kinds[byKind["switch"]].DynamicHandles)
	require.NotEmpty(t, doc.CommonFields)
}

func TestValidateDraft(t *testing.T) {
	t.Parallel()
	e := newEditor(t)
	draft := `version: 1
name: draft
inputs:
  n: {type: integer, default: 1}
nodes:
  - {id: start, type: trigger.manual}
  - id: pick
    type: switch
    cases:
      - {name: big, condition: "inputs.n > 10"}
      - {name: small, condition: "inputs.n <= 10"}
  - {id: say, type: template, text: "{{ nope.text }}"}
  - {id: child, type: subworkflow, workflow: quick.yaml, on_error: route}
edges:
  - {from: start, to: pick}
  - {from: pick, to: say, on: big}
  - {from: pick, to: child, on: small}
`
	status, _, body := e.do(auth.Edit, "POST", "/api/workflows/validate?file=draft.yaml", draft)
	require.Equal(t, http.StatusOK, status, string(body))
	res := decode[server.ValidateResult](t, body)
	require.False(t, res.Valid)
	require.NotEmpty(t, res.Diagnostics)
	d := res.Diagnostics[0]
	require.Equal(t, "draft.yaml", d.File)
	require.Equal(t, 12, d.Line, "line:col of the problem")
	require.Positive(t, d.Col)
	require.Equal(t, "say", d.Node)
	require.Contains(t, d.Message, `"nope"`)
	handles := map[string][]string{}
	for _, n := range res.Nodes {
		handles[n.ID] = n.Handles
	}
	require.Equal(t, []string{"default", "big", "small"}, handles["pick"], "a switch's handles follow its cases")
	require.Equal(t, []string{""}, handles["say"], "an action's default handle; error only with on_error: route")
	require.Equal(t, []string{"", "error"}, handles["child"], "with on_error: route")
	for _, d := range res.Diagnostics {
		if d.Severity == workflow.Error {
			require.NotEqual(t, "child", d.Node, "the subworkflow is found beside the served files: %s", d.Message)
		}
	}
	status, _, body = e.do(auth.Edit, "POST", "/api/workflows/validate?file=draft.yaml", strings.Replace(draft, "quick.yaml", "missing.yaml", 1))
	require.Equal(t, http.StatusOK, status, string(body))
	missing := false
	for _, d := range decode[server.ValidateResult](t, body).Diagnostics {
		missing = missing || (d.Node == "child" && d.Severity == workflow.Error)
	}
	require.True(t, missing, "a subworkflow that is not beside the served files is an error")
	_, err := os.Stat(filepath.Join(e.flows, "draft.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist, "a draft is not written")

	status, _, body = e.do(auth.Edit, "POST", "/api/workflows/validate?file=..%2fdraft.yaml", draft)
	require.Equal(t, http.StatusBadRequest, status, string(body))

	// A draft's files: and child workflow paths make the server look at
	// files of the machine; only a token that may write workflows (and so
	// run them) may ask.
	probe := "version: 1\nname: probe\nfiles: [/]\nnodes:\n  - {id: child, type: subworkflow, workflow: /etc/passwd}\n"
	for _, scope := range []auth.Scope{auth.Read, auth.Run} {
		status, _, body = e.do(scope, "POST", "/api/workflows/validate?file=draft.yaml", probe)
		require.Equal(t, http.StatusForbidden, status, "%v token: %s", scope, body)
		require.NotContains(t, string(body), "root:", "nothing of the file is answered")
	}
	// A child outside the folder is refused in words that name no path
	// of the server's.
	outside := "version: 1\nname: probe\nnodes:\n  - {id: child, type: subworkflow, workflow: ../../../../../../etc/hostname}\n"
	status, _, body = e.do(auth.Edit, "POST", "/api/workflows/validate?file=draft.yaml", outside)
	require.Equal(t, http.StatusOK, status, string(body))
	require.False(t, decode[server.ValidateResult](t, body).Valid)
	require.NotContains(t, string(body), e.flows)
	require.NotContains(t, string(body), "leads to /etc", "the path it resolves to is the server's")
	require.Contains(t, string(body), "leads to …/hostname, outside the workflows folder")
}

// TestDraftSizes: a text may be a workflow file's most (8 MiB); a longer
// one is invalid, its diagnostic says why; a body past the room a JSON
// body's quoting needs (16 MiB and 64 KiB) is not read (413), as
// docs/api.md's problem table says.
func TestDraftSizes(t *testing.T) {
	t.Parallel()
	e := newEditor(t)
	head := "version: 1\nname: big\nnodes:\n  - {id: a, type: set, values: {x: \""
	long := head + strings.Repeat("a", workflow.MaxFileSize) + "\"}}\n"
	status, _, body := e.do(auth.Edit, "POST", "/api/workflows/validate?file=big.yaml", long)
	require.Equal(t, http.StatusOK, status, "read, and found invalid")
	res := decode[server.ValidateResult](t, body)
	require.False(t, res.Valid)
	require.Contains(t, res.Diagnostics[0].Message, "a workflow file may be at most 8.0 MiB")

	status, _, body = e.do(auth.Edit, "POST", "/api/workflows/validate?file=big.yaml", strings.Repeat("#", 2*workflow.MaxFileSize+1<<16+1))
	require.Equal(t, http.StatusRequestEntityTooLarge, status)
	require.Contains(t, string(body), `"code":"too_large"`)
}

// draft200 is a workflow of 200 nodes in a chain, the size the editor must
// stay responsive at.
func draft200() string {
	var b strings.Builder
	b.WriteString("version: 1\nname: big\nnodes:\n  - {id: start, type: trigger.manual}\n")
	for i := range 199 {
		fmt.Fprintf(&b, "  - {id: n%d, type: template, text: \"step %d\"}\n", i, i)
	}
	b.WriteString("edges:\n  - {from: start, to: n0}\n")
	for i := 1; i < 199; i++ {
		fmt.Fprintf(&b, "  - {from: n%d, to: n%d}\n", i-1, i)
	}
	return b.String()
}

// BenchmarkValidateDraft is one POST /api/workflows/validate of a 200-node
// draft over loopback, as the editor sends it while the user types.
func BenchmarkValidateDraft(b *testing.B) {
	e := newEditor(b)
	draft := draft200()
	b.ResetTimer()
	for b.Loop() {
		status, _, body := e.do(auth.Edit, "POST", "/api/workflows/validate?file=big.yaml", draft)
		if status != http.StatusOK || !strings.Contains(string(body), `"valid":true`) {
			b.Fatalf("%d %s", status, body)
		}
	}
}

// TestEditOpsChangeOnlyWhatTheyTouch: the graph editor's edits are applied
// to the text, which keeps its comments and layout, and come back checked;
// an edit that cannot be applied is 422 bad_edit naming it.
func TestEditOpsChangeOnlyWhatTheyTouch(t *testing.T) {
	t.Parallel()
	e := newEditor(t)
	src := "# Greets.\nversion: 1\nname: quick\nnodes:\n  - id: start   # where it starts\n    type: trigger.manual\n  - id: greet\n    type: template\n    text: \"Hello\"\n# the edges\nedges:\n  - {from: start, to: greet}\n"
	send := func(sc auth.Scope, ops string) (int, []byte) {
		body, err := json.Marshal(map[string]any{"file": "quick.yaml", "source": src, "ops": json.RawMessage(ops)})
		require.NoError(t, err)
		status, _, out := e.do(sc, "POST", "/api/workflows/edit", string(body), "Content-Type", "application/json")
		return status, out
	}

	status, body := send(auth.Edit, `[{"op": "set", "node": "greet", "path": ["text"], "value": "Hello, friend"}]`)
	require.Equal(t, http.StatusOK, status, string(body))
	res := decode[server.EditResult](t, body)
	require.Equal(t, strings.Replace(src, `text: "Hello"`, `text: "Hello, friend"`, 1), res.Source,
		"one value changed; the comments and the rest as they were")
	require.True(t, res.Valid, "%+v", res.Diagnostics)

	status, body = send(auth.Edit, `[{"op": "add_node", "value": {"id": "say", "type": "template", "text": "{{ nope.text }}"}}, {"op": "connect", "node": "greet", "to": "say"}]`)
	require.Equal(t, http.StatusOK, status, string(body))
	res = decode[server.EditResult](t, body)
	require.True(t, strings.HasPrefix(res.Source, "# Greets.\n"), res.Source)
	require.Contains(t, res.Source, "# where it starts")
	require.False(t, res.Valid, "the new node reads a node that does not exist")
	require.Equal(t, "say", res.Diagnostics[0].Node)

	status, body = send(auth.Edit, `[{"op": "set", "node": "helo", "path": ["text"], "value": 1}]`)
	require.Equal(t, http.StatusUnprocessableEntity, status, string(body))
	p := decode[server.Problem](t, body)
	require.Equal(t, server.CodeBadEdit, p.Code)
	require.Contains(t, p.Detail, `op 0 (set "helo")`)

	for _, sc := range []auth.Scope{auth.Read, auth.Run} {
		status, _ = send(sc, `[]`)
		require.Equal(t, http.StatusForbidden, status, "%v token", sc)
	}
}
