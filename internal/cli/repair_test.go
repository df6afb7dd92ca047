package cli_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// The tests of --auto-repair point the repair model at a scripted fake
// through SKEIN_LLM_*; t.Setenv keeps them from running in parallel.

// repairModel starts a scripted repair model and points the environment at
// it.
func repairModel(t *testing.T, turns ...llmtest.Turn) *llmtest.Server {
	t.Helper()
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script(turns))
	t.Setenv("SKEIN_LLM_PROVIDER", "openai")
	t.Setenv("SKEIN_LLM_BASE_URL", srv.BaseURL())
	t.Setenv("SKEIN_LLM_MODEL", "repair-model")
	t.Setenv("SKEIN_LLM_API_KEY", "fake-key")
	return srv
}

// repaired is the model's answer: the whole workflow and why.
func repaired(workflow, why string) llmtest.Turn {
	b, err := json.Marshal(map[string]string{"workflow": workflow, "explanation": why})
	if err != nil {
		panic(err)
	}
	return llmtest.Reply(string(b))
}

// repairBundle is what a repair test works with.
type repairBundle struct {
	dir  string // the test's folder
	sk   string // --dir
	file string // the workflow file
}

func repairSetup(t *testing.T, src string) *repairBundle {
	t.Helper()
	dir := t.TempDir()
	b := &repairBundle{dir: dir, sk: filepath.Join(dir, ".skein"), file: filepath.Join(dir, "flow.yaml")}
	require.NoError(t, os.WriteFile(b.file, []byte(src), 0o640))
	return b
}

func (b *repairBundle) run(t *testing.T, args ...string) result {
	t.Helper()
	return skein(t, append([]string{"run", "--auto-repair", "--dir", b.sk}, append(args, b.file)...)...)
}

func (b *repairBundle) runJSON(t *testing.T, args ...string) (result, map[string]any) {
	t.Helper()
	r := b.run(t, append([]string{"--output", "json"}, args...)...)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &m), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	return r, m
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func changes(m map[string]any) []string {
	var out []string
	rep, _ := m["repair"].(map[string]any)
	list, _ := rep["changes"].([]any)
	for _, c := range list {
		out = append(out, c.(string))
	}
	return out
}

// helloServer answers GET /hello with a JSON body.
func helloServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"greeting": "hello"}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const typoFlow = `version: 1
name: typo
inputs:
  base: {type: string, required: true}
nodes:
  - {id: fetch, type: http, url: "{{ inputs.base }}/hello"}
  - {id: shout, type: template, text: "{{ fetch.bdy.greeting }}!"}
edges:
  - {from: fetch, to: shout}
outputs:
  text: "{{ shout.text }}"
`

func TestAutoRepairFixesTemplateTypo(t *testing.T) {
	api := helloServer(t)
	fixed := strings.Replace(typoFlow, "fetch.bdy.greeting", "fetch.body.greeting", 1)
	model := repairModel(t, repaired(fixed, "fetch has no output bdy; its body holds the greeting"))
	b := repairSetup(t, typoFlow)

	r, m := b.runJSON(t, "-i", "base="+api.URL)

	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "completed", m["status"])
	require.Equal(t, "hello!", m["outputs"].(map[string]any)["text"])
	require.Equal(t, 1, model.Calls(), "one repair")
	sent := model.Last().Messages[1].Content
	require.Contains(t, sent, "fetch.bdy", "the model sees the error")
	require.Contains(t, sent, "fetch (http): status, headers, body, truncated", "and the fields fetch offers")
	require.Equal(t, fixed, m["repaired_workflow"])
	require.Equal(t, []string{`node shout: text: "{{ fetch.bdy.greeting }}!" → "{{ fetch.body.greeting }}!"`}, changes(m))

	require.Equal(t, fixed, readFile(t, b.file), "the file is replaced")
	require.Equal(t, typoFlow, readFile(t, b.file+".backup"), "the original is kept")
	fi, err := os.Stat(b.file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "the file keeps its mode")
	require.NoFileExists(t, filepath.Join(b.dir, "flow.repaired.yaml"))

	show := skein(t, "runs", "show", "--dir", b.sk, m["execution_id"].(string))
	require.Equal(t, 0, show.code, show.stderr)
}

// orderFlow has four nodes: mark leaves a mark in a file each time it
// runs, params picks a region, call asks the API with it, report reads the
// answer. The API refuses any region but "eu".
const orderFlow = `version: 1
name: orders
inputs:
  base: {type: string, required: true}
  marks: {type: string, required: true}
nodes:
  - id: mark
    type: shell
    command: [sh, -c, 'echo ran >> "$1"', x, "{{ inputs.marks }}"]
  - id: params
    type: set
    values: {region: eu-west}
  - id: call
    type: http
    url: "{{ inputs.base }}/api"
    query: {region: "{{ params.region }}"}
  - id: report
    type: template
    text: "{{ call.body.result }}"
edges:
  - {from: mark, to: params}
  - {from: params, to: call}
  - {from: call, to: report}
outputs:
  result: "{{ report.text }}"
`

// regionServer answers 400 unless the region query parameter is "eu".
func regionServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if region := r.URL.Query().Get("region"); region != "eu" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error": "unknown region %s; regions: eu"}`, region)
			return
		}
		fmt.Fprint(w, `{"result": "ordered"}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type stepOut struct {
	Node   string `json:"node"`
	Status string `json:"status"`
	Cached bool   `json:"cached"`
}

func steps(t *testing.T, m map[string]any) map[string]stepOut {
	t.Helper()
	b, err := json.Marshal(m["steps"])
	require.NoError(t, err)
	var list []stepOut
	require.NoError(t, json.Unmarshal(b, &list))
	out := map[string]stepOut{}
	for _, s := range list {
		out[s.Node] = s
	}
	return out
}

func TestAutoRepairFixesRuntimeErrorAndResumes(t *testing.T) {
	api := regionServer(t)
	fixed := strings.Replace(orderFlow, "region: eu-west", "region: eu", 1)
	model := repairModel(t, repaired(fixed, "the API knows only the region eu"))
	b := repairSetup(t, orderFlow)
	marks := filepath.Join(b.dir, "marks")

	r, m := b.runJSON(t, "-i", "base="+api.URL, "-i", "marks="+marks)

	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "completed", m["status"])
	require.Equal(t, "ordered", m["outputs"].(map[string]any)["result"])
	require.Equal(t, "ran\n", readFile(t, marks), "mark ran once: the resume reused it")
	st := steps(t, m)
	require.True(t, st["mark"].Cached, "mark is reused from the checkpoint")
	for _, id := range []string{"params", "call", "report"} {
		require.Equal(t, "success", string(st[id].Status), id)
		require.False(t, st[id].Cached, "%s runs again", id)
	}
	require.Equal(t, []string{`node params: values.region: "eu-west" → "eu"`}, changes(m))

	require.Equal(t, 1, model.Calls())
	sent := model.Last().Messages[1].Content
	for _, want := range []string{
		"node call (http): http_status [http_400], HTTP status 400",
		`response body: {"error":"unknown region eu-west; regions: eu"}`,
		"params (set): region (string)",
		"- mark (shell): success",
		"- report (template): skipped",
	} {
		require.Contains(t, sent, want)
	}
	require.Equal(t, fixed, readFile(t, b.file))
	require.Equal(t, orderFlow, readFile(t, b.file+".backup"))
}

func TestAutoRepairStopsWhenTheErrorRepeats(t *testing.T) {
	t.Run("validation: the same broken workflow", func(t *testing.T) {
		model := repairModel(t, repaired(typoFlow, "fixed"), repaired(typoFlow, "fixed"))
		b := repairSetup(t, typoFlow)

		r := b.run(t, "-i", "base=http://127.0.0.1:1")

		require.Equal(t, 2, r.code, r.stderr)
		require.Contains(t, r.stderr, `auto-repair stopped: the same error came back after attempt 1: node shout: text reads fetch.bdy, but node "fetch" (http) has no output "bdy"`)
		require.Equal(t, 1, model.Calls(), "no second attempt after the repeat")
		require.Equal(t, typoFlow, readFile(t, b.file))
		require.NoFileExists(t, b.file+".backup")
	})
	t.Run("runtime: another edit, the same error", func(t *testing.T) {
		api := regionServer(t)
		other := strings.Replace(orderFlow, "region: eu-west", "region: eu-central", 1)
		model := repairModel(t, repaired(other, "try eu-central"), repaired(other, "again"))
		b := repairSetup(t, orderFlow)
		marks := filepath.Join(b.dir, "marks")

		r, m := b.runJSON(t, "-i", "base="+api.URL, "-i", "marks="+marks)

		require.Equal(t, 1, r.code, r.stderr)
		require.Equal(t, "failed", m["status"])
		require.Contains(t, r.stderr, "auto-repair stopped: the same error came back after the repair: node call: GET "+api.URL+"/api answered 400 Bad Request")
		require.Equal(t, 1, model.Calls())
		require.Equal(t, "ran\n", readFile(t, marks))
		require.Equal(t, orderFlow, readFile(t, b.file), "a run that failed saves nothing")
		require.NoFileExists(t, b.file+".backup")
		require.Equal(t, other, readFile(t, filepath.Join(b.dir, "flow.repaired.yaml")), "the last attempt is kept aside")
		rep := m["repair"].(map[string]any)
		require.Contains(t, rep["stopped"], "the same error came back")
	})
	t.Run("three attempts at most", func(t *testing.T) {
		var turns []llmtest.Turn
		for i := range 4 {
			// Each reply reads another missing field: a new error each time.
			turns = append(turns, repaired(strings.Replace(typoFlow, "bdy", fmt.Sprintf("bdy%c", 'a'+i), 1), "try"))
		}
		model := repairModel(t, turns...)
		b := repairSetup(t, typoFlow)

		r := b.run(t, "-i", "base=http://127.0.0.1:1")

		require.Equal(t, 2, r.code, r.stderr)
		require.Contains(t, r.stderr, "auto-repair stopped: 3 validation attempts did not fix the workflow")
		require.Equal(t, 3, model.Calls())
		require.Equal(t, typoFlow, readFile(t, b.file))
	})
}

func TestAutoRepairLeavesAlone(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/post":
			fmt.Fprint(w, `{"ok": false, "error": "channel_not_found"}`)
		case "/private":
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error": "bad token"}`)
		}
	}))
	t.Cleanup(api.Close)
	tests := []struct {
		name   string
		flow   string
		code   int
		status string
		stderr string
	}{
		{
			name: "ok false is a warning",
			flow: `version: 1
name: notify
inputs:
  base: {type: string}
nodes:
  - {id: post, type: http, url: "{{ inputs.base }}/post"}
`,
			code: 0, status: "completed",
		},
		{
			name: "a failure after a business error",
			flow: `version: 1
name: notify
inputs:
  base: {type: string}
nodes:
  - {id: post, type: http, url: "{{ inputs.base }}/post"}
  - {id: check, type: shell, command: [sh, -c, 'test -n "$1"', x, "{{ post.body.ts }}"]}
edges:
  - {from: post, to: check}
`,
			code: 1, status: "failed",
			stderr: `not repaired: node check failed after node post, whose API refused the request (the API answered "ok": false (error: channel_not_found)); business errors are not repaired`,
		},
		{
			name: "401 is never repaired",
			flow: `version: 1
name: private
inputs:
  base: {type: string}
nodes:
  - {id: fetch, type: http, url: "{{ inputs.base }}/private"}
`,
			code: 1, status: "failed",
			stderr: "HTTP 401 is an authentication error",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := repairModel(t)
			b := repairSetup(t, tc.flow)

			r, m := b.runJSON(t, "-i", "base="+api.URL)

			require.Equal(t, tc.code, r.code, r.stderr)
			require.Equal(t, tc.status, m["status"])
			require.Contains(t, r.stderr, tc.stderr)
			require.Equal(t, 0, model.Calls(), "no repair call")
			require.Nil(t, m["repaired_workflow"])
			warnings := m["warnings"].([]any)
			if tc.name != "401 is never repaired" {
				require.Len(t, warnings, 1)
				require.Equal(t, "post", warnings[0].(map[string]any)["node"])
				require.Equal(t, `the API answered "ok": false (error: channel_not_found)`, warnings[0].(map[string]any)["message"])
				events := readFile(t, filepath.Join(runDir(t, b.sk), "events.jsonl"))
				require.Contains(t, events, `"type":"warning","node":"post"`, "the warning is on the node")
			}
			require.Equal(t, tc.flow, readFile(t, b.file))
		})
	}
	t.Run("text shows the warning", func(t *testing.T) {
		model := repairModel(t)
		b := repairSetup(t, tests[0].flow)

		r := b.run(t, "-i", "base="+api.URL)

		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, `⚠ node post: the API answered "ok": false (error: channel_not_found)`)
		require.Equal(t, 0, model.Calls())
	})
}

// runDir is the folder of the only run under sk.
func runDir(t *testing.T, sk string) string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(sk, "runs", "*", "*"))
	require.NoError(t, err)
	require.Len(t, dirs, 1)
	return dirs[0]
}

func TestAutoRepairNoUpdateAndDiff(t *testing.T) {
	api := regionServer(t)
	fixed := strings.Replace(orderFlow, "region: eu-west", "region: eu", 1)
	fixed = strings.Replace(fixed, `  - id: report
    type: template
    text: "{{ call.body.result }}"
edges:`, `  - id: report
    type: template
    text: "{{ call.body.result }}"
  - id: note
    type: template
    text: "done"
edges:
  - {from: report, to: note}`, 1)
	model := repairModel(t, repaired(fixed, "the API knows only eu"))
	b := repairSetup(t, orderFlow)
	marks := filepath.Join(b.dir, "marks")

	r := b.run(t, "--no-update", "-i", "base="+api.URL, "-i", "marks="+marks)

	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 1, model.Calls())
	for _, want := range []string{
		"[repair] runtime attempt 1/3: node call: GET " + api.URL + "/api answered 400 Bad Request",
		`[repaired] node params: values.region: "eu-west" → "eu"`,
		"[repaired] node note: added (template)",
		"[repaired] edge report → note: added",
		"▶ resuming run",
		"[repaired] the repaired workflow is in " + filepath.Join(b.dir, "flow.repaired.yaml"),
	} {
		require.Contains(t, r.stdout, want)
	}
	require.Less(t, strings.Index(r.stdout, "[repaired] node params"), strings.Index(r.stdout, "▶ resuming run"), "the diff comes before the resume")
	require.Equal(t, orderFlow, readFile(t, b.file), "--no-update leaves the file")
	require.NoFileExists(t, b.file+".backup")
	require.Equal(t, fixed, readFile(t, filepath.Join(b.dir, "flow.repaired.yaml")))
	require.Equal(t, "ran\n", readFile(t, marks))
}

func TestAutoRepairUsage(t *testing.T) {
	t.Parallel()
	r := skein(t, "run", "--no-update", "--dir", t.TempDir(), "testdata/ok.yaml")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--no-update goes with --auto-repair")
}

// TestAutoRepairKeepsSecretsOut: the repair model never gets a secret, a
// repaired workflow that writes one into the file is refused, and a
// model's explanation that quotes one is shown masked.
func TestAutoRepairKeepsSecretsOut(t *testing.T) {
	const secret = "repair-canary-Zx81/q"
	t.Setenv("SKEIN_SECRET_TOK", secret)
	const flow = `version: 1
name: leaky
secrets: [TOK]
nodes:
  - id: bad
    type: shell
    command: [sh, -c, 'echo "refused $0" >&2; exit 3', "{{ secrets.TOK }}"]
`
	withSecret := strings.Replace(flow, "exit 3', \"{{ secrets.TOK }}\"", "exit 0', \""+secret+"\"", 1)
	fixed := strings.Replace(flow, "exit 3", "exit 0", 1)
	model := repairModel(t,
		repaired(withSecret, "I wrote the token "+secret+" in"),
		repaired(fixed, "exit 0 instead; the token was "+secret))
	b := repairSetup(t, flow)

	r, m := b.runJSON(t)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "completed", m["status"])
	require.Equal(t, 2, model.Calls())
	require.Contains(t, r.stderr, "the repaired workflow holds the value of a secret")
	require.Contains(t, r.stderr, "the token was ***")
	for _, req := range model.Requests() {
		require.NotContains(t, string(req.Raw), secret, "what the repair model is sent")
	}
	require.NotContains(t, r.stdout+r.stderr, secret)
	require.Equal(t, fixed, readFile(t, b.file))
	require.NoError(t, filepath.WalkDir(b.dir, func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if !d.IsDir() {
			require.NotContains(t, readFile(t, path), secret, path)
		}
		return nil
	}))
}
