package main_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// The secrets of TestSecretsLeaveNoTrace: a token with characters that
// URL-encoding changes, and a number (a command that prints it prints JSON).
const (
	canary    = "Sk3in+Canary/Zq7vW3x9=Kp2!"
	canaryPIN = "73915864"
)

// secretForms are the byte strings that must appear nowhere: each secret
// as it is and in every encoding a program prints it in.
func secretForms() map[string]string {
	forms := map[string]string{}
	for name, s := range map[string]string{"token": canary, "pin": canaryPIN} {
		b := []byte(s)
		add := func(form, v string) { forms[name+" "+form] = v }
		add("raw", s)
		add("base64", base64.StdEncoding.EncodeToString(b))
		add("base64 unpadded", base64.RawStdEncoding.EncodeToString(b))
		add("base64url", base64.URLEncoding.EncodeToString(b))
		add("base64url unpadded", base64.RawURLEncoding.EncodeToString(b))
		// Inside a longer base64 text, at each alignment: the characters
		// that depend on the secret's bytes alone.
		for k := range 3 {
			enc := base64.RawStdEncoding.EncodeToString(append(append(make([]byte, k), b...), 0, 0))
			add(fmt.Sprintf("base64 at offset %d", k), enc[(8*k+5)/6:8*(k+len(b))/6])
		}
		add("query escaped", url.QueryEscape(s))
		add("path escaped", url.PathEscape(s))
		add("query escaped, lower case", strings.ToLower(url.QueryEscape(s)))
		add("hex", hex.EncodeToString(b))
		add("HEX", strings.ToUpper(hex.EncodeToString(b)))
		add("JSON with \\/", strings.ReplaceAll(s, "/", `\/`))
	}
	return forms
}

// traces collects every byte Skein wrote outside its folder: the output of
// each command, the MCP server's answers, what the judge and repair models
// were sent.
type traces struct {
	t    *testing.T
	dir  string // everything on disk: the workflows, .skein
	sk   string
	env  []string
	outs []named
}

type named struct {
	name string
	data []byte
}

func (tr *traces) add(name string, data []byte) {
	tr.outs = append(tr.outs, named{name, bytes.Clone(data)})
}

// skein runs the binary with the secrets in its environment and keeps its
// stdout and stderr; it returns its exit code and stdout.
func (tr *traces) skein(args ...string) (int, string) {
	tr.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = tr.dir
	cmd.Env = tr.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(tr.t, err)
	}
	name := "skein " + strings.Join(args, " ")
	tr.add(name+" (stdout)", out.Bytes())
	tr.add(name+" (stderr)", errb.Bytes())
	return code, out.String()
}

// check greps every file under dir and every trace for every form; with
// open, the database is open in a process and its WAL and shared memory
// files must be there.
func (tr *traces) check(open bool) {
	tr.t.Helper()
	forms := secretForms()
	var files []string
	require.NoError(tr.t, filepath.WalkDir(tr.dir, func(path string, d fs.DirEntry, err error) error {
		require.NoError(tr.t, err)
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		require.NoError(tr.t, err)
		rel, _ := filepath.Rel(tr.dir, path)
		files = append(files, rel)
		tr.add(rel, data)
		return nil
	}))
	want := []string{".skein/skein.db", "flow-repair.yaml.backup"}
	if open {
		want = append(want, ".skein/skein.db-wal", ".skein/skein.db-shm")
	}
	for _, f := range want {
		require.Contains(tr.t, files, f, "%s is one of the files grepped", f)
	}
	for _, o := range tr.outs {
		for form, v := range forms {
			if i := bytes.Index(o.data, []byte(v)); i >= 0 {
				lo, hi := max(0, i-80), min(len(o.data), i+len(v)+40)
				tr.t.Errorf("%s holds the %s (%q): …%q…", o.name, form, v, o.data[lo:hi])
			}
		}
	}
}

// api answers /echo with the bearer token it was sent and the query it
// got, and /auth with a 401 whose body quotes the token, each in the
// encodings a careless server uses.
func api(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		body := map[string]any{
			"token": tok, "query": r.URL.RawQuery,
			"base64": base64.StdEncoding.EncodeToString([]byte(tok)), "base64url": base64.RawURLEncoding.EncodeToString([]byte(tok)),
			"hex": hex.EncodeToString([]byte(tok)), "escaped": url.QueryEscape(tok),
			"basic": "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+tok)),
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Token-Echo", tok)
		if r.URL.Path == "/auth" {
			w.WriteHeader(http.StatusUnauthorized)
			body["error"] = "invalid token " + tok
		}
		_ = json.NewEncoder(w).Encode(body)
		fmt.Fprintf(w, "php-style: %s\n", strings.ReplaceAll(tok, "/", `\/`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// judgeSays is a judge's answer to the expect check of a node, quoting the
// secret in its reasoning.
func judgeSays(verdict string) llmtest.Turn {
	b, _ := json.Marshal(map[string]any{"verdicts": []any{map[string]any{"check_name": "expect", "verdict": verdict,
		"reasoning": "the output shows " + canary + " (" + base64.StdEncoding.EncodeToString([]byte(canary)) + ")"}}})
	return llmtest.Reply(string(b))
}

const leakFlow = `version: 1
name: leak
secrets: [TOK, PIN]
nodes:
  - {id: start, type: trigger.manual}
  - id: echo
    type: shell
    command:
      - sh
      - -c
      - |
        printf 'out %s\n' "$1"; printf 'err %s\n' "$1" >&2
        printf %s "$1" | base64; echo "$1" | base64; printf 'user:%s' "$1" | base64
        printf %s "$1" | od -An -tx1 | tr -d ' \n'; echo
        printf %s "$1" | od -An -tx1 | tr -d ' \n' | tr a-f A-F; echo
      - x
      - "{{ secrets.TOK }}"
  - {id: number, type: shell, command: [sh, -c, 'echo "$1"', x, "{{ secrets.PIN }}"]}
  - id: patch
    type: shell
    command: [sh, -c, 'printf "{\"_state_patch\": {\"tok\": \"%s\"}, \"done\": true}" "$1"', x, "{{ secrets.TOK }}"]
  - {id: use, type: set, values: {tok: "{{ vars.tok }}", pin: "{{ number.json }}"}}
  - id: call
    type: http
    url: "API/echo"
    query: {token: "{{ secrets.TOK }}"}
    headers: {Authorization: "Bearer {{ secrets.TOK }}"}
  - id: big
    type: shell
    command: [sh, -c, 'head -c 300000 /dev/zero | tr "\0" x; printf " %s" "$1"', x, "{{ secrets.TOK }}"]
  - {id: slow, type: shell, command: [sh, -c, 'sleep 0.3; echo "$1"', x, "{{ secrets.TOK }}"]}
  - id: gate
    type: shell
    command: [sh, -c, 'if [ -f gate.ok ]; then echo open; else touch gate.ok; echo "denied $1" >&2; exit 3; fi', x, "{{ secrets.TOK }}"]
  - id: auth
    type: http
    url: "API/auth"
    headers: {Authorization: "Bearer {{ secrets.TOK }}"}
  - {id: after, type: shell, command: [echo, "{{ secrets.TOK }}"]}
edges:
  - {from: start, to: echo}
  - {from: echo, to: number}
  - {from: number, to: patch}
  - {from: patch, to: use}
  - {from: use, to: call}
  - {from: call, to: big}
  - {from: big, to: gate}
  - {from: big, to: slow}
  - {from: gate, to: auth}
  - {from: auth, to: after}
outputs:
  tok: "{{ use.tok }}"
  pin: "{{ use.pin }}"
`

const judgedFlow = `version: 1
name: judged
secrets: [TOK]
llm:
  default: {provider: openai, base_url: "MODEL", model: helper, api_key: fake}
  judge: {provider: openai, base_url: "JUDGE", model: judge, api_key: fake}
nodes:
  - id: ask
    type: llm
    prompt: "Repeat {{ secrets.TOK }}"
    send_secrets: true
  - id: echo
    type: shell
    command: [sh, -c, 'echo "token $1"', x, "{{ secrets.TOK }}"]
    expect: "prints the token"
    checks:
      - {name: says token, type: contains, target: stdout, value: token}
edges:
  - {from: ask, to: echo}
`

const repairFlow = `version: 1
name: repairme
secrets: [TOK]
nodes:
  - id: bad
    type: shell
    command: [sh, -c, 'echo "refused $1" >&2; exit 3', x, "{{ secrets.TOK }}"]
`

const mcpFlow = `version: 1
name: viamcp
secrets: [TOK]
nodes:
  - {id: show, type: shell, command: [sh, -c, 'echo "shown $1"; printf %s "$1" | base64', x, "{{ secrets.TOK }}"]}
  - {id: fail, type: shell, command: [sh, -c, 'echo "failed $1" >&2; exit 4', x, "{{ secrets.TOK }}"]}
edges:
  - {from: show, to: fail}
`

// TestSecretsLeaveNoTrace runs workflows that echo two secrets every way a
// run can — a command's stdout and stderr, base64, URL and hex encodings,
// a number on stdout, _state_patch, an HTTP body and a 401 that fails the
// run, a large output, a judge's reasoning, an LLM's reply, the repair
// model's explanation and repaired file — through skein run (text and
// JSON), resume, check, runs show/events/verdict and the MCP server, and
// then greps every byte Skein wrote: the database with its WAL and shared
// memory files, every file of the run folders and beside the workflows,
// every command's stdout and stderr, every MCP answer, and what the judge
// and the repair model were sent. No secret, in no form, may be found.
func TestSecretsLeaveNoTrace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := api(t)
	says := llmtest.Reply("Sure: " + canary + " / " + hex.EncodeToString([]byte(canary)))
	helper := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{says, says})
	judge := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{judgeSays("pass"), judgeSays("fail"), judgeSays("fail")})
	repairer := llmtest.NewServer(t, llmtest.OpenAI, nil)
	tr := &traces{t: t, dir: dir, sk: filepath.Join(dir, ".skein"), env: append(os.Environ(),
		"SKEIN_SECRET_TOK="+canary, "SKEIN_SECRET_PIN="+canaryPIN,
		"SKEIN_LLM_PROVIDER=openai", "SKEIN_LLM_BASE_URL="+repairer.BaseURL(), "SKEIN_LLM_MODEL=repair", "SKEIN_LLM_API_KEY=fake")}
	write := func(name, src string) string {
		src = strings.NewReplacer("API", srv.URL, "MODEL", helper.BaseURL(), "JUDGE", judge.BaseURL()).Replace(src)
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
		return path
	}
	leak, judged, rep, viaMCP := write("flow-leak.yaml", leakFlow), write("flow-judged.yaml", judgedFlow),
		write("flow-repair.yaml", repairFlow), write("flow-mcp.yaml", mcpFlow)

	// The MCP server runs first and keeps the database open to the end,
	// so the other processes' writes stay in its WAL to be grepped.
	cmd := exec.Command(bin, "mcp", "--dir", tr.sk)
	cmd.Dir, cmd.Env = dir, tr.env
	var mcpLog bytes.Buffer
	cmd.Stderr = &mcpLog
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "skein-test", Version: "1"}, nil).
		Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	mcpCall := func(tool string, args map[string]any) map[string]any {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
		require.NoError(t, err)
		data, err := json.Marshal(res)
		require.NoError(t, err)
		tr.add("mcp "+tool, data)
		var out map[string]any
		if res.StructuredContent != nil {
			b, _ := json.Marshal(res.StructuredContent)
			require.NoError(t, json.Unmarshal(b, &out))
		}
		return out
	}
	viaMCPRun := mcpCall("run_workflow", map[string]any{"file": viaMCP})
	require.Equal(t, "failed", viaMCPRun["status"])
	mcpID := viaMCPRun["execution_id"].(string)
	mcpCall("get_run", map[string]any{"id": mcpID})
	mcpCall("list_runs", nil)
	rr, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "skein://runs/" + mcpID + "/events"})
	require.NoError(t, err)
	data, _ := json.Marshal(rr)
	tr.add("mcp events resource", data)

	// leak fails at gate (a command's stderr), then its resume at auth (a
	// 401 body): both are the run's error, with their details.
	code, _ := tr.skein("run", "--dir", tr.sk, leak)
	require.Equal(t, 1, code)
	_, out := tr.skein("runs", "list", "--dir", tr.sk, "-o", "json")
	var runs []struct {
		ID       string `json:"execution_id"`
		Workflow string `json:"workflow"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &runs), out)
	leakID := ""
	for _, r := range runs {
		if r.Workflow == "leak" {
			leakID = r.ID
		}
	}
	require.NotEmpty(t, leakID)
	code, out = tr.skein("resume", "--dir", tr.sk, "-o", "json", leakID)
	require.Equal(t, 1, code, out)
	var resumed struct {
		Status string `json:"status"`
		Error  struct {
			Details map[string]any `json:"details"`
		} `json:"error"`
		Steps []struct {
			Node   string `json:"node"`
			Cached bool   `json:"cached"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &resumed))
	require.Equal(t, "failed", string(resumed.Status))
	require.Contains(t, fmt.Sprint(resumed.Error.Details["body"]), "invalid token ***", "the 401 body is in the run's error, masked")
	for _, s := range resumed.Steps {
		if s.Node == "patch" {
			require.False(t, s.Cached, "patch's _state_patch was masked: it runs again")
		}
	}
	code, _ = tr.skein("run", "--dir", tr.sk, "-o", "json", leak) // gate.ok is there: fails at auth at once
	require.Equal(t, 1, code)

	// judged completes; its judge quotes the secret, and so does the
	// model it asks; skein check asks the judge again.
	code, out = tr.skein("run", "--dir", tr.sk, "-o", "json", judged)
	require.Equal(t, 0, code, out)
	var judgedRun struct {
		ID string `json:"execution_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &judgedRun))
	code, _ = tr.skein("check", "--dir", tr.sk, judgedRun.ID)
	require.Equal(t, 3, code, "the judge fails it this time")
	tr.skein("runs", "verdict", "--dir", tr.sk, judgedRun.ID)
	tr.skein("runs", "verdict", "--dir", tr.sk, "-o", "json", judgedRun.ID)
	code, _ = tr.skein("run", "--dir", tr.sk, judged)
	require.Equal(t, 3, code)

	// The repair model first writes the secret into the file (refused),
	// then fixes it, quoting the secret in its explanation.
	fixed := strings.Replace(repairFlow, "exit 3", "exit 0", 1)
	withSecret := strings.Replace(repairFlow, `"{{ secrets.TOK }}"`, `"`+canary+`"`, 1)
	for _, wf := range []string{withSecret, fixed} {
		b, _ := json.Marshal(map[string]string{"workflow": wf, "explanation": "it printed " + canary})
		repairer.Push(llmtest.Reply(string(b)))
	}
	code, out = tr.skein("run", "--dir", tr.sk, "--auto-repair", rep)
	require.Equal(t, 0, code, out)

	for _, id := range []string{leakID, judgedRun.ID, mcpID} {
		tr.skein("runs", "show", "--dir", tr.sk, id)
		tr.skein("runs", "show", "--dir", tr.sk, "-o", "json", id)
		tr.skein("runs", "events", "--dir", tr.sk, id)
	}
	tr.skein("runs", "list", "--dir", tr.sk)

	require.GreaterOrEqual(t, judge.Calls(), 3)
	require.Equal(t, 2, repairer.Calls())
	for i, req := range judge.Requests() {
		tr.add(fmt.Sprintf("judge request %d", i+1), req.Raw)
	}
	for i, req := range repairer.Requests() {
		tr.add(fmt.Sprintf("repair request %d", i+1), req.Raw)
	}
	tr.check(true)
	require.NoError(t, cs.Close())
	tr.outs = nil
	tr.add("skein mcp (stderr)", mcpLog.Bytes())
	tr.check(false)
}
