package workflow_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

func TestDecodeBadInputs(t *testing.T) {
	t.Parallel()
	deepFlow := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	var deepBlock strings.Builder
	deepBlock.WriteString("version: 1\nname: deep\nnodes:\n")
	for i := 0; i < 400; i++ {
		deepBlock.WriteString(strings.Repeat(" ", i+1) + "- \n")
	}
	bomb := `version: 1
name: bomb
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
`
	tests := []struct {
		name string
		file string
		src  string
		want string
	}{
		{"empty", "e.yaml", "", "empty"},
		{"only comments", "e.yaml", "# nothing here\n", "empty"},
		{"binary", "b.yaml", "\x00\x01\x02\xff\xfe", "not text"},
		{"invalid utf8", "b.yaml", "name: \xff\xfe\n", "not text"},
		{"deep flow", "d.yaml", deepFlow, "nesting"},
		{"deep flow json", "d.json", deepFlow, "nesting"},
		{"deep flow, CR line ends", "cr.yaml", "version: 1\rname: x\rnodes: " + deepFlow + "\r", "cr.yaml:3:72: error: nesting is deeper than 64 levels"},
		{"deep block", "d.yaml", deepBlock.String(), "nesting"},
		{"duplicate key", "k.yaml", "version: 1\nversion: 2\n", "duplicate key"},
		{"duplicate key json", "k.json", `{"version": 1, "version": 2}`, "duplicate key"},
		{"alias bomb", "bomb.yaml", bomb, "more than"},
		{"self alias", "s.yaml", "a: &a [*a]\n", "alias"},
		{"tab indentation", "t.yaml", "version: 1\nname: x\nnodes:\n\t- id: a\n", "t.yaml:4:1: error: YAML: this line is indented with a tab; YAML indents with spaces only"},
		{"unknown alias", "u.yaml", "version: 1\nname: *nope\n", "u.yaml:2:7: error: YAML: alias *nope names no anchor defined before it"},
		{"scalar document", "s.yaml", "hello\n", "holds a map"},
		{"two documents", "two.yaml", "version: 1\n---\nversion: 1\n", "several YAML documents"},
		{"json trailing", "t.json", `{"version": 1} x`, "after the end"},
		{"json unclosed", "t.json", `{"version": 1`, "end of file"},
		{"json trailing comma in a list", "t.json", "{\"nodes\": [1,\n  ]}", "t.json:2:3: error: JSON: unexpected ']'; expected a value"},
		{"json trailing comma in a map", "t.json", `{"version": 1, }`, "t.json:1:16: error: JSON: unexpected '}'; expected a key in double quotes"},
		{"json number with a leading zero", "t.json", `{"version": -01}`, "t.json:1:15: error: JSON: invalid character '1' after object value"},
		{"json lone surrogate", "t.json", `{"name": "\ud800"}`, "surrogate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, ds := workflow.Decode(tc.file, []byte(tc.src))
			if w != nil {
				ds = append(ds, workflow.Validate(w, node.Default)...)
			}
			require.True(t, ds.HasErrors(), "want an error containing %q", tc.want)
			require.Contains(t, ds.Error(), tc.want)
			require.Contains(t, ds.Error(), tc.file+":")
		})
	}
}

func TestReadFileRefusesHugeFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(path)
	require.NoError(t, err)
	chunk := bytes.Repeat([]byte("# padding line for a very large workflow file\n"), 1<<14)
	for written := 0; written < 50<<20; written += len(chunk) {
		_, err := f.Write(chunk)
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
	_, ds := workflow.Load(path, node.Default)
	require.True(t, ds.HasErrors())
	require.Contains(t, ds.Error(), "MiB; a workflow file may be at most 8.0 MiB")
	require.Contains(t, ds.Error(), path)
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, ds := workflow.Load(filepath.Join(t.TempDir(), "nope.yaml"), node.Default)
	require.True(t, ds.HasErrors())
	require.Contains(t, ds.Error(), "no such file")
	require.NotContains(t, ds.Error(), "file does not exist", "said once")
	_, err := workflow.ReadFile(filepath.Join(t.TempDir(), "nope.yaml"))
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestDecodeJSONAndYAMLAgree(t *testing.T) {
	t.Parallel()
	yamlSrc := `version: 1
name: same
inputs:
  n: {type: integer, default: 2}
nodes:
  - {id: start, type: trigger.manual}
  - id: pick
    type: if
    condition: "inputs.n > 1"
  - {id: yes, type: template, text: "big {{ inputs.n }}"}
edges:
  - {from: start, to: pick}
  - {from: pick, to: yes, on: true}
`
	jsonSrc := `{"version": 1, "name": "same", "inputs": {"n": {"type": "integer", "default": 2}},
 "nodes": [{"id": "start", "type": "trigger.manual"},
           {"id": "pick", "type": "if", "condition": "inputs.n > 1"},
           {"id": "yes", "type": "template", "text": "big {{ inputs.n }}"}],
 "edges": [{"from": "start", "to": "pick"}, {"from": "pick", "to": "yes", "on": true}]}`
	wy, dy := workflow.Decode("f.yaml", []byte(yamlSrc))
	wj, dj := workflow.Decode("f.json", []byte(jsonSrc))
	require.Empty(t, dy)
	require.Empty(t, dj)
	require.Equal(t, len(wy.Nodes), len(wj.Nodes))
	for i := range wy.Nodes {
		require.Equal(t, wy.Nodes[i].Map(), wj.Nodes[i].Map())
	}
	require.Equal(t, "true", wy.Edges[1].On)
	require.Equal(t, "true", wj.Edges[1].On)
	require.Equal(t, 2, wj.Inputs[0].Default)
	require.Empty(t, workflow.Validate(wy, node.Default).Errors())
	require.Empty(t, workflow.Validate(wj, node.Default).Errors())
}

func TestJSONPositions(t *testing.T) {
	t.Parallel()
	src := "{\n  \"version\": 1,\n  \"name\": \"p\",\n  \"nodes\": [\n    {\"id\": \"a\", \"type\": \"shel\"}\n  ]\n}\n"
	w, ds := workflow.Decode("p.json", []byte(src))
	require.Empty(t, ds)
	ds = workflow.Validate(w, node.Default)
	require.Len(t, ds.Errors(), 1)
	d := ds.Errors()[0]
	require.Equal(t, 5, d.Line)
	require.Equal(t, 25, d.Col) // the opening quote of "shel"
	require.Contains(t, d.Message, `did you mean "shell"`)
}

// A reference error points at the reference inside its string when the
// string's source maps byte for byte (plain, or quoted with nothing
// escaped), and at the string otherwise.
func TestReferencePositions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		value string
		col   int
	}{
		{"plain", `x {{ nope.a }}`, 16},
		{"double quoted", `"x {{ nope.a }}"`, 17},
		{"single quoted", `'x {{ nope.a }}'`, 17},
		{"escaped", `"\tx {{ nope.a }}"`, 11},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := "version: 1\nname: p\nnodes:\n  - id: a\n    type: template\n    text: " + tc.value + "\n"
			w, ds := workflow.Decode("p.yaml", []byte(src))
			require.Empty(t, ds)
			errs := workflow.Validate(w, node.Default).Errors()
			require.Len(t, errs, 1)
			require.Equal(t, 6, errs[0].Line)
			require.Equal(t, tc.col, errs[0].Col, errs[0].String())
		})
	}
}

// TestFileRoots checks that the folders of files: are resolved against the
// workflow file's folder, whatever the working directory, and that a valid
// declaration passes validation.
func TestFileRoots(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "flows", "assets"), 0o755))
	shared := filepath.Join(dir, "shared")
	require.NoError(t, os.MkdirAll(shared, 0o755))
	file := filepath.Join(dir, "flows", "f.yaml")
	src := "version: 1\nname: f\nfiles: [./assets, " + shared + ", ../shared/]\nnodes:\n  - {id: start, type: trigger.manual}\n"
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))

	w, ds := workflow.Load(file, node.Default)
	require.Empty(t, ds.Errors(), "a files: of existing folders is valid")
	require.Len(t, ds, 1)
	require.Contains(t, ds[0].Message, `folder "../shared/" is declared twice in files:`)
	require.Len(t, w.Files, 3)
	require.Equal(t, "./assets", w.Files[0].Path, "kept as written")
	require.Equal(t, workflow.Pos{Line: 3, Col: 9}, w.Files[0].Pos)
	require.Equal(t, []string{filepath.Join(dir, "flows", "assets"), shared, shared}, w.FileRoots())
	require.Equal(t, filepath.Join(dir, "flows"), w.Dir())
}

// stream: false on a model is kept; anything but a boolean is an error
// at its position.
func TestDecodeModelStream(t *testing.T) {
	t.Parallel()
	src := "version: 1\nname: s\nllm:\n  default: {provider: openai, model: m, stream: false}\n  other: {provider: openai, model: m}\nnodes:\n  - {id: a, type: set, values: {x: 1}}\n"
	w, ds := workflow.Decode("s.yaml", []byte(src))
	require.False(t, ds.HasErrors(), ds.Error())
	require.NotNil(t, w.LLMConfig("default").Stream)
	require.False(t, *w.LLMConfig("default").Stream)
	require.Nil(t, w.LLMConfig("other").Stream, "unset leaves it to each node")

	_, ds = workflow.Decode("s.yaml", []byte(strings.Replace(src, "stream: false", "stream: sometimes", 1)))
	require.True(t, ds.HasErrors())
	require.Contains(t, ds.Error(), "s.yaml:4:")
	require.Contains(t, ds.Error(), "true or false")
}

// A workflow read from a file named relatively has its folder resolved as
// it is read: a later change of the working directory does not move it,
// and a File set afresh is resolved afresh.
func TestDirIsResolvedWhenRead(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	w, ds := workflow.Decode(filepath.Join("flows", "f.yaml"), []byte("version: 1\nname: f\nnodes:\n  - {id: start, type: trigger.manual}\n"))
	require.Empty(t, ds.Errors())
	wd, err := os.Getwd() // dir as the system spells it
	require.NoError(t, err)
	require.Equal(t, filepath.Join(wd, "flows"), w.Dir())

	t.Chdir(t.TempDir())
	require.Equal(t, filepath.Join(wd, "flows"), w.Dir(), "still the folder it was read from")
	w.File = filepath.Join("other", "g.yaml")
	now, err := os.Getwd()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(now, "other"), w.Dir(), "a new File is resolved against the working directory")
}
