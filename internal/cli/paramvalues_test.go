package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/cli"
	"github.com/skeinhq/skein/node"
)

// paramValues is one value of every JSON type, written as YAML flow (which
// JSON is).
var paramValues = []string{`null`, `true`, `0`, `-7`, `1.5`, `"text"`, `""`, `[]`, `[1,"a"]`, `{}`, `{"k": 1}`}

// paramKinds are the kinds that run offline on loopback, each with the
// parameters that make a node of it valid (the tested one replaces its
// own) and the nodes and edges around it ("n" is the node under test).
// URL is replaced by the test server's address.
var paramKinds = map[string]struct {
	base  string
	extra string
}{
	"set":         {base: `values: {a: 1}`},
	"template":    {base: `text: hi`},
	"if":          {base: `condition: "true"`},
	"switch":      {base: `cases: [{name: a, condition: "true"}]`},
	"guardrail":   {base: `condition: "true"`},
	"merge":       {},
	"wait":        {base: `duration: 1ms`},
	"shell":       {base: `command: ["true"]`},
	"http":        {base: `url: URL`},
	"subworkflow": {base: `workflow: child.yaml`},
	"fail":        {base: `message: stop`},
	"foreach": {base: `items: [1]`, extra: `
  - {id: b, type: set, values: {x: 1}}
  - {id: e, type: endloop, loop: n}
edges:
  - {from: n, to: b, on: body}
  - {from: b, to: e}
`},
	"loop": {base: `max_iterations: 2`, extra: `
  - {id: b, type: set, values: {x: 1}}
  - {id: e, type: endloop, loop: n}
edges:
  - {from: n, to: b, on: body}
  - {from: b, to: e}
`},
}

// paramKindsElsewhere are the kinds the matrix leaves out, and why: a new
// kind is put in one map or the other.
var paramKindsElsewhere = map[string]string{
	"llm":              "needs a model server",
	"agent":            "needs a model server",
	"mcp":              "needs an MCP server",
	"endloop":          "its one parameter is plain and names a loop: in the loop and foreach shapes",
	"trigger.manual":   "no parameters",
	"trigger.chat":     "starts a run; its parameters are read by the server",
	"trigger.schedule": "starts a run; its parameters are read by the server",
	"trigger.webhook":  "starts a run; its parameters are read by the server",
}

// TestEveryParamTakesEveryJSONType puts a value of every JSON type into
// every parameter of every kind that runs offline, written in the file
// and given through a template from an input. Validation never panics and
// either accepts the value or names the file, line, node and parameter; a
// run of what it accepts ends (completed, or failed with an error that is
// not internal and names the parameter).
func TestEveryParamTakesEveryJSONType(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)

	for _, spec := range node.Default.Specs() {
		_, tested := paramKinds[spec.Kind]
		why := paramKindsElsewhere[spec.Kind]
		require.True(t, tested || why != "", "kind %s is in paramKinds or paramKindsElsewhere", spec.Kind)
	}
	for kind, shape := range paramKinds {
		spec, ok := node.Default.Lookup(kind)
		require.True(t, ok, "kind %s is registered", kind)
		for _, p := range spec.Params {
			for _, v := range paramValues {
				for _, viaInput := range []bool{false, true} {
					mode := "literal"
					if viaInput {
						mode = "input"
					}
					name := fmt.Sprintf("%s/%s/%s/%s", kind, p.Name, mode, v)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						checkParamValue(t, srv.URL, kind, shape.base, shape.extra, p, v, viaInput)
					})
				}
			}
		}
	}
}

func checkParamValue(t *testing.T, url, kind, base, extra string, p node.Param, value string, viaInput bool) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "child.yaml"), []byte("version: 1\nname: child\nnodes:\n  - {id: start, type: trigger.manual}\n"), 0o644))

	// The node's parameters: the base ones but the one under test, then it.
	var params []string
	if base != "" && !strings.HasPrefix(base, p.Name+":") {
		params = append(params, strings.ReplaceAll(base, "URL", url))
	}
	written := value
	if viaInput {
		written = `"{{ inputs.v }}"`
		if p.Expr {
			written = `"inputs.v"`
		}
	}
	params = append(params, p.Name+": "+written)
	edges := "edges:\n  - {from: start, to: n}\n"
	if extra != "" {
		edges = strings.Replace(extra, "edges:\n", "edges:\n  - {from: start, to: n}\n", 1)
	}
	text := fmt.Sprintf("version: 1\nname: m\ninputs:\n  v: {type: any}\nnodes:\n  - {id: start, type: trigger.manual}\n  - {id: n, type: %s, %s}\n%s", kind, strings.Join(params, ", "), edges)
	file := filepath.Join(dir, "m.yaml")
	require.NoError(t, os.WriteFile(file, []byte(text), 0o644))
	inputs := filepath.Join(dir, "in.json")
	require.NoError(t, os.WriteFile(inputs, []byte(`{"v": `+value+`}`), 0o644))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call := func(args ...string) result {
		var out, errb bytes.Buffer
		code := cli.Main(ctx, args, strings.NewReader(""), &out, &errb)
		return result{code, out.String(), errb.String()}
	}

	r := call("validate", "--output", "json", file)
	var doc struct {
		Valid       bool `json:"valid"`
		Diagnostics []struct {
			File     string `json:"file"`
			Line     int    `json:"line"`
			Node     string `json:"node"`
			Path     string `json:"path"`
			Severity string `json:"severity"`
			Message  string `json:"message"`
		} `json:"diagnostics"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), "validate output: %s %s\n%s", r.stdout, r.stderr, text)
	// A parameter taken as written (a plain one, or a list of items whose
	// conditions the kind evaluates) is not rendered, so a template in it
	// would be read as text: validation refuses it.
	if viaInput && (p.NoTemplate || len(p.Items) > 0) {
		require.False(t, doc.Valid, "a template in %s, which is taken as written, is refused\n%s", p.Name, text)
	}
	if !doc.Valid {
		require.Equal(t, 2, r.code, r.stderr)
		named := false
		for _, d := range doc.Diagnostics {
			if d.Severity != "error" {
				continue
			}
			require.NotEmpty(t, d.File, "diagnostic %+v names the file\n%s", d, text)
			require.Positive(t, d.Line, "diagnostic %+v names the line\n%s", d, text)
			require.NotRegexp(t, goTypes, d.Message, "a message speaks of JSON values, not Go types\n%s", text)
			if d.Node == "n" && (strings.Contains(d.Path, p.Name) || strings.Contains(d.Message, p.Name)) {
				named = true
			}
		}
		require.True(t, named, "an error names node n and parameter %s: %+v\n%s", p.Name, doc.Diagnostics, text)
		return
	}

	r = call("run", "--output", "json", "--dir", filepath.Join(dir, "d"), file, "--input-file", inputs)
	require.NotEmpty(t, r.stdout, "run output (code %d): %s\n%s", r.code, r.stderr, text)
	var run struct {
		Status string `json:"status"`
		Error  *struct {
			Node     string `json:"node"`
			Code     string `json:"code"`
			Category string `json:"category"`
			Message  string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &run), r.stdout)
	require.NoError(t, ctx.Err(), "the run ends before the deadline\n%s", text)
	if run.Status == "completed" {
		return
	}
	require.Equal(t, "failed", run.Status, "%s\n%s", r.stdout, text)
	require.NotNil(t, run.Error, r.stdout)
	require.Equal(t, "n", run.Error.Node, "%+v\n%s", run.Error, text)
	if kind == "fail" && run.Error.Code == "fail_node" {
		return // the run failed as asked, with the message given
	}
	// The test server answers 200 OK: a node that refuses it was given
	// statuses that no answer matches, which validation should refuse.
	require.NotEqual(t, "http_status", run.Error.Category, "%+v\n%s", run.Error, text)
	require.NotEqual(t, "internal", run.Error.Category, "%+v\n%s", run.Error, text)
	require.NotEqual(t, "internal", run.Error.Code, "%+v\n%s", run.Error, text)
	require.Contains(t, run.Error.Message, p.Name, "%+v\n%s", run.Error, text)
	require.NotRegexp(t, goTypes, run.Error.Message, "a message speaks of JSON values, not Go types\n%s", text)
}

// goTypes are Go's names of the types JSON values decode to.
var goTypes = regexp.MustCompile(`interface \{\}|\bfloat64\b|\bint\b|map\[string\]|\[\]any`)
