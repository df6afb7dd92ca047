package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/mcp/mcptest"

	"github.com/skeinhq/skein/internal/cli"
)

// TestOutputSchemasUpToDate: the schemas of schema/ for what the commands
// print with -o json are the ones made from the types they print.
// Refresh them with: go test ./internal/cli -run TestOutputSchemasUpToDate -update
func TestOutputSchemasUpToDate(t *testing.T) {
	t.Parallel()
	got, err := cli.Schemas()
	require.NoError(t, err)
	for name, data := range got {
		path := filepath.Join("..", "..", "schema", name)
		if *update {
			require.NoError(t, os.WriteFile(path, data, 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "create it with: go test ./internal/cli -run TestOutputSchemasUpToDate -update")
		require.Equal(t, string(want), string(got[name]), "schema/%s is stale; refresh it with: go test ./internal/cli -run TestOutputSchemasUpToDate -update", name)
	}
}

// schemas compiles every schema of schema/, by file name.
func schemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	files, err := filepath.Glob("../../schema/*.schema.json")
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	ids := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		require.NoError(t, err, f)
		id, _ := doc.(map[string]any)["$id"].(string)
		if id == "" {
			id = cli.SchemaBase + filepath.Base(f)
		}
		require.NoError(t, c.AddResource(id, doc))
		ids[filepath.Base(f)] = id
	}
	out := map[string]*jsonschema.Schema{}
	for name, id := range ids {
		s, err := c.Compile(id)
		require.NoError(t, err, name)
		out[name] = s
	}
	return out
}

// TestEveryJSONOutputFollowsItsSchema runs every command that prints data
// with -o json — when it succeeds and when it fails — and checks that
// stdout holds exactly one JSON document (a JSON line per event for runs
// events) that validates against the schema of schema/ published for it,
// with the exit code the same command has in text.
func TestEveryJSONOutputFollowsItsSchema(t *testing.T) {
	t.Parallel()
	ss := schemas(t)
	dir := filepath.Join(t.TempDir(), ".skein")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("version: 1\nname: bad\nnodes:\n  - {id: a, type: shel}\n"), 0o644))

	// Runs the later commands look at.
	start := func(args ...string) string {
		t.Helper()
		r := skein(t, append([]string{"run", "-o", "json", "--dir", dir}, args...)...)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &m), r.stdout+r.stderr)
		require.Equal(t, "cli", m["source"], "skein run records that the command line started the run")
		return m["execution_id"].(string)
	}
	ok := start("testdata/ok.yaml", "-i", "city=Paris")
	recorded := start("--record", "testdata/ok.yaml", "-i", "city=Rome")
	failed := start("testdata/fail.yaml")
	checked := start("../../examples/checks.yaml", "-i", "currency=usd")
	waiting := start("../../examples/approval.yaml")
	srv := mcptest.New(t)
	srv.AddDescribedTool("echo", "Echoes text.", nil, echoTool)
	locked := writeLockFlow(t, t.TempDir(), srv.URL)
	noServer := filepath.Join(t.TempDir(), "m.yaml")
	require.NoError(t, os.WriteFile(noServer, []byte("version: 1\nname: m\nmcp_servers:\n  files: {command: /nonexistent/server}\nnodes:\n  - {id: a, type: mcp, server: files, tool: x}\n"), 0o644))
	tok := skein(t, "token", "create", "--scope", "read", "--name", "ci", "--dir", dir)
	require.Equal(t, 0, tok.code, tok.stderr)

	tests := []struct {
		name   string
		args   []string
		code   int
		schema string
		// errCode is the error's code when schema is error.schema.json.
		errCode string
	}{
		{"run", []string{"run", "testdata/ok.yaml", "-i", "city=Oslo"}, 0, "run.schema.json", ""},
		{"run failed", []string{"run", "testdata/fail.yaml"}, 1, "run.schema.json", ""},
		{"run checks failed", []string{"run", "../../examples/checks.yaml", "-i", "currency=usd"}, 3, "run.schema.json", ""},
		{"run waiting", []string{"run", "../../examples/approval.yaml"}, 4, "run.schema.json", ""},
		{"run invalid workflow", []string{"run", bad}, 2, "error.schema.json", "invalid_workflow"},
		{"run missing file", []string{"run", "nowhere.yaml"}, 2, "error.schema.json", "invalid_workflow"},
		{"run missing input", []string{"run", "testdata/ok.yaml"}, 2, "error.schema.json", "usage"},
		{"run bad flag value", []string{"run", "--concurrency", "many", "testdata/ok.yaml"}, 2, "error.schema.json", "usage"},
		{"run unknown flag", []string{"run", "--nope", "testdata/ok.yaml"}, 2, "error.schema.json", "usage"},
		{"run no file", []string{"run"}, 2, "error.schema.json", "usage"},
		{"validate", []string{"validate", "testdata/ok.yaml"}, 0, "validate.schema.json", ""},
		{"test", []string{"test", "../../examples/hello.test.yaml"}, 0, "test.schema.json", ""},
		{"test failed", []string{"test", "testdata/tests/greet.test.yaml"}, 1, "test.schema.json", ""},
		{"test invalid file", []string{"test", "testdata/tests/bad"}, 2, "error.schema.json", "invalid_test"},
		{"test bad regexp", []string{"test", "--run", "(", "testdata/tests"}, 2, "error.schema.json", "usage"},
		{"validate invalid", []string{"validate", bad, "testdata/ok.yaml"}, 2, "validate.schema.json", ""},
		{"validate bad input pair", []string{"validate", "testdata/ok.yaml", "-i", "city"}, 2, "error.schema.json", "usage"},
		{"runs list", []string{"runs", "list"}, 0, "runs-list.schema.json", ""},
		{"runs list bad status", []string{"runs", "list", "--status", "nonsense"}, 2, "error.schema.json", "usage"},
		{"runs unknown subcommand", []string{"runs", "lst"}, 2, "error.schema.json", "usage"},
		{"runs no subcommand", []string{"runs"}, 2, "error.schema.json", "usage"},
		{"unknown command", []string{"rn"}, 2, "error.schema.json", "usage"},
		{"runs show", []string{"runs", "show", ok}, 0, "run.schema.json", ""},
		{"runs show by prefix", []string{"runs", "show", failed[:6]}, 0, "run.schema.json", ""},
		{"runs show unknown", []string{"runs", "show", "ffffffffffff"}, 2, "error.schema.json", "not_found"},
		{"runs events", []string{"runs", "events", ok}, 0, "event.schema.json", ""},
		{"runs events unknown", []string{"runs", "events", "ffffffffffff"}, 2, "error.schema.json", "not_found"},
		{"runs verdict none", []string{"runs", "verdict", ok}, 0, "verdict.schema.json", ""},
		{"runs verdict failed", []string{"runs", "verdict", checked}, 3, "verdict.schema.json", ""},
		{"check", []string{"check", checked}, 3, "verdict.schema.json", ""},
		{"check no checks", []string{"check", ok}, 0, "verdict.schema.json", ""},
		{"check unknown", []string{"check", "ffffffffffff"}, 2, "error.schema.json", "not_found"},
		{"resume plan", []string{"resume", "--plan", failed}, 0, "resume-plan.schema.json", ""},
		{"resume completed", []string{"resume", ok}, 2, "error.schema.json", "completed"},
		{"resume failed", []string{"resume", failed}, 1, "run.schema.json", ""},
		{"rerun", []string{"rerun", ok, "--pin", "say"}, 0, "run.schema.json", ""},
		{"replay", []string{"replay", recorded}, 0, "replay.schema.json", ""},
		{"replay without a cassette", []string{"replay", ok}, 2, "error.schema.json", "usage"},
		{"rerun unknown pin", []string{"rerun", ok, "--pin", "nope"}, 2, "error.schema.json", "usage"},
		{"cancel not running", []string{"cancel", ok}, 2, "error.schema.json", "not_running"},
		{"signal", []string{"signal", waiting, "approve", "--data", `{"approved": true, "by": "Ada"}`}, 0, "run.schema.json", ""},
		{"signal completed run", []string{"signal", ok, "say"}, 2, "error.schema.json", "completed"},
		{"signal bad data", []string{"signal", ok, "say", "--data", "{nope"}, 2, "error.schema.json", "usage"},
		{"signal empty data", []string{"signal", waiting, "approve", "--data", " "}, 2, "error.schema.json", "usage"},
		{"rerun empty pin", []string{"rerun", ok, "--pin", ""}, 2, "error.schema.json", "usage"},
		{"prune negative age", []string{"runs", "prune", "--older-than", "-5d"}, 2, "error.schema.json", "usage"},
		{"prune no age", []string{"runs", "prune", "--older-than", "0s"}, 2, "error.schema.json", "usage"},
		{"prune", []string{"runs", "prune", "--older-than", "30d", "--dry-run"}, 0, "prune.schema.json", ""},
		{"token list", []string{"token", "list"}, 0, "token-list.schema.json", ""},
		{"migrate", []string{"migrate"}, 0, "migrate.schema.json", ""},
		{"token create", []string{"token", "create", "--scope", "read", "--name", "ci"}, 0, "token-create.schema.json", ""},
		{"token create bad scope", []string{"token", "create", "--scope", "god"}, 2, "error.schema.json", "usage"},
		{"version", []string{"version"}, 0, "version.schema.json", ""},
		{"lock update", []string{"lock", "update", locked}, 0, "lock-update.schema.json", ""},
		{"lock update of a server that does not start", []string{"lock", "update", noServer}, 1, "error.schema.json", "command_not_found"},
		{"lock update invalid workflow", []string{"lock", "update", bad}, 2, "error.schema.json", "invalid_workflow"},
	}
	for _, tc := range tests {
		// One after the other: they share the folder, and signal and
		// resume change runs others read.
		args := append(tc.args, "-o", "json")
		if tc.args[0] != "validate" && tc.args[0] != "version" && tc.args[0] != "test" && tc.args[0] != "lock" {
			args = append(args, "--dir", dir)
		}
		r := skein(t, args...)
		require.Equal(t, tc.code, r.code, "%s: %s%s", tc.name, r.stdout, r.stderr)
		s := ss[tc.schema]
		require.NotNil(t, s, tc.schema)
		docs := jsonDocs(t, tc.name, r.stdout)
		if tc.schema == "event.schema.json" {
			require.Greater(t, len(docs), 2, "%s: events", tc.name)
		} else {
			require.Len(t, docs, 1, "%s: one JSON document on stdout, got %q", tc.name, r.stdout)
		}
		for _, d := range docs {
			require.NoError(t, s.Validate(d), "%s: %s does not follow %s", tc.name, r.stdout, tc.schema)
		}
		if tc.errCode != "" {
			e := docs[0].(map[string]any)["error"].(map[string]any)
			require.Equal(t, tc.errCode, e["code"], "%s: %s", tc.name, r.stdout)
			require.NotEmpty(t, e["message"])
			if tc.errCode != "invalid_workflow" { // stderr has the diagnostics, one a line
				require.Contains(t, r.stderr, e["message"], "%s: the same error in text on stderr", tc.name)
			}
		}
	}

	// The error object says what stderr says, the command's words around
	// the node's error included.
	r0 := skein(t, "lock", "update", noServer, "-o", "json")
	msg := jsonDocs(t, "lock update", r0.stdout)[0].(map[string]any)["error"].(map[string]any)["message"]
	require.Equal(t, strings.TrimSpace(r0.stderr), "skein: "+msg.(string))
	require.Contains(t, msg, "m.skein.lock is unchanged")

	// A replay's run says what it replays.
	r := skein(t, "replay", "-o", "json", "--dir", dir, recorded)
	require.Equal(t, 0, r.code, r.stderr)
	var rep struct {
		Run map[string]any `json:"run"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.Equal(t, "replay", rep.Run["source"])
	require.Equal(t, recorded, rep.Run["replay_of"])

	r = skein(t, "rerun", "-o", "json", "--dir", dir, ok)
	require.Equal(t, 0, r.code, r.stderr)
	var rerun map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rerun), r.stdout)
	require.Equal(t, "cli", rerun["source"], "skein rerun")
	require.Nil(t, rerun["replay_of"], "a rerun is no replay")
}

// jsonDocs reads the JSON documents of out, one after another.
func jsonDocs(t *testing.T, name, out string) []any {
	t.Helper()
	var docs []any
	dec := json.NewDecoder(bufio.NewReader(strings.NewReader(out)))
	dec.UseNumber()
	for dec.More() {
		var v any
		require.NoError(t, dec.Decode(&v), "%s: stdout is not JSON: %q", name, out)
		// Validate what a program reading stdout would read.
		b, err := json.Marshal(v)
		require.NoError(t, err)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		require.NoError(t, err)
		docs = append(docs, inst)
	}
	return docs
}

// TestJSONErrorShape: an invalid workflow run with -o json prints every
// problem in the error's details, with positions, as validate does.
func TestJSONErrorShape(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(file, []byte("version: 1\nname: bad\nnodes:\n  - {id: a, type: shel}\n  - {id: b, type: template, text: '{{ c.text }}'}\n"), 0o644))
	r := skein(t, "run", "-o", "json", "--dir", dir, file)
	require.Equal(t, 2, r.code)
	var doc struct {
		Error struct {
			Code     string `json:"code"`
			Category string `json:"category"`
			Message  string `json:"message"`
			Details  struct {
				Diagnostics []struct {
					File     string `json:"file"`
					Line     int    `json:"line"`
					Node     string `json:"node"`
					Severity string `json:"severity"`
					Message  string `json:"message"`
				} `json:"diagnostics"`
			} `json:"details"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
	require.Equal(t, "invalid_workflow", doc.Error.Code)
	require.Equal(t, "validation", doc.Error.Category)
	require.Equal(t, file+" is not a valid workflow: 2 errors (details.diagnostics lists them)", doc.Error.Message)
	require.Len(t, doc.Error.Details.Diagnostics, 2)
	require.Equal(t, 4, doc.Error.Details.Diagnostics[0].Line)
	require.Contains(t, doc.Error.Details.Diagnostics[0].Message, `unknown node type "shel"`)
	require.Equal(t, "b", doc.Error.Details.Diagnostics[1].Node)
	// The text on stderr is what the same command prints without -o json.
	require.Contains(t, r.stderr, file+`:4:19: error: unknown node type "shel"`)
}

// skein run -o json prints the run's document (the one run.json holds)
// indented as encoding/json indents it, though it is written a step at a
// time: steps with strings that hold JSON's own punctuation, HTML and
// non-ASCII characters, and a failed step's error (which encoding/json
// writes) included.
func TestRunJSONIsTheDocumentIndented(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wf := filepath.Join(dir, "punctuation.yaml")
	require.NoError(t, os.WriteFile(wf, []byte(`version: 1
name: punctuation
nodes:
  - {id: start, type: trigger.manual}
  - id: tricky
    type: set
    values:
      text: 'a "quoted" {brace} [list], colon: \ <b>&</b> é ☃'
      empty: {}
      none: []
  - {id: fail, type: shell, command: [sh, -c, "echo 'it broke: {\"x\": [1]}' >&2; exit 3"]}
edges:
  - {from: start, to: tricky}
  - {from: tricky, to: fail}
`), 0o644))
	sk := filepath.Join(dir, ".skein")
	r := skein(t, "run", "--dir", sk, "-o", "json", wf)
	require.Equal(t, 1, r.code, r.stderr)
	var compact, indented bytes.Buffer
	require.NoError(t, json.Compact(&compact, []byte(r.stdout)))
	require.NoError(t, json.Indent(&indented, compact.Bytes(), "", "  "))
	require.Equal(t, indented.String()+"\n", r.stdout)
	runs, err := filepath.Glob(filepath.Join(sk, "runs", "punctuation", "*", "run.json"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	stored, err := os.ReadFile(runs[0])
	require.NoError(t, err)
	require.JSONEq(t, string(stored), r.stdout)
	require.Contains(t, r.stdout, `"text": "a \"quoted\" {brace} [list], colon: \\ <b>&</b> é ☃"`)
	require.Contains(t, r.stdout, "\"empty\": {},\n")
}

// TestTokenCreateNeedsItsServersDatabase: a token made for a folder with
// no database (a typo in --dir) would be taken by no server: it is
// refused, and nothing is made.
func TestTokenCreateNeedsItsServersDatabase(t *testing.T) {
	t.Parallel()
	typo := filepath.Join(t.TempDir(), ".skien")
	r := skein(t, "token", "create", "--scope", "run", "--dir", typo)
	require.Equal(t, 2, r.code, r.stdout+r.stderr)
	require.Empty(t, r.stdout, "no token is printed")
	require.Contains(t, r.stderr, "no database here: "+filepath.Join(typo, "skein.db")+" does not exist")
	require.NoDirExists(t, typo)
}
