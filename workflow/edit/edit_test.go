package edit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
	"github.com/skeinhq/skein/workflow"
	"github.com/skeinhq/skein/workflow/edit"
)

func read(t *testing.T, file string) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("../../examples", file))
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// plain decodes a workflow file as a plain tree (JSON is YAML), the
// document a test compares.
func plain(t *testing.T, src []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(src, &m); err != nil {
		t.Fatalf("the text does not parse: %v\n%s", err, src)
	}
	return m
}

func nodeOf(m map[string]any, id string) map[string]any {
	for _, n := range m["nodes"].([]any) {
		if nm := n.(map[string]any); nm["id"] == id {
			return nm
		}
	}
	return nil
}

func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// errorsOf decodes and validates, returning the messages of the errors.
func errorsOf(t *testing.T, name string, src []byte) []string {
	t.Helper()
	w, ds := workflow.Decode(name, src)
	if w != nil {
		ds = append(ds, workflow.Validate(w, node.Default)...)
	}
	var out []string
	for _, d := range ds {
		if d.Severity == workflow.Error {
			out = append(out, d.Message)
		}
	}
	return out
}

// changedLines returns the lines of after that differ from before, when
// both have the same number of lines.
func changedLines(t *testing.T, before, after []byte) []string {
	t.Helper()
	a, b := strings.Split(string(before), "\n"), strings.Split(string(after), "\n")
	if len(a) != len(b) {
		t.Fatalf("the edit changed the number of lines from %d to %d:\n%s", len(a), len(b), after)
	}
	var out []string
	for i := range a {
		if a[i] != b[i] {
			out = append(out, b[i])
		}
	}
	return out
}

// commentLines returns the lines of src that are comments.
func commentLines(src []byte) []string {
	var out []string
	for _, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, l)
		}
	}
	return out
}

func TestChangingOneParameterChangesOneLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		op         edit.Op
		want       string // the one changed line
	}{
		{"a quoted condition stays quoted", "branches.yaml",
			edit.Op{Op: "set", Node: "large", Path: []string{"condition"}, Value: raw("inputs.amount >= 250")},
			`    condition: "inputs.amount >= 250"`},
		{"a key in a flow map", "branches.yaml",
			edit.Op{Op: "set", Node: "review", Path: []string{"values", "lane"}, Value: raw("second look")},
			`    values: {lane: second look}`},
		{"a plain string that must now be quoted", "branches.yaml",
			edit.Op{Op: "set", Node: "auto", Path: []string{"values", "lane"}, Value: raw("true")},
			`    values: {lane: "true"}`},
		{"a check's on_fail in a list", "checks.yaml",
			edit.Op{Op: "set", Node: "order", Path: []string{"checks", "2", "on_fail"}, Value: raw("fail")},
			`      - {name: big enough, type: expr, expr: "order.total >= 50", on_fail: fail}`},
		{"a number", "checks.yaml",
			edit.Op{Op: "set", Node: "summary", Path: []string{"checks", "0", "value"}, Value: raw(7)},
			`      - {name: counts lines, type: contains, target: text, value: 7}`},
		{"a JSON string", "sub/slugify.json",
			edit.Op{Op: "set", Node: "start", Path: []string{"type"}, Value: raw("trigger.webhook")},
			`    {"id": "start", "type": "trigger.webhook"},`},
		{"a block map's quoted value", "checks.yaml",
			edit.Op{Op: "set", Node: "order", Path: []string{"values", "currency"}, Value: raw("USD")},
			`      currency: "USD"`},
		{"a plain value over a block map", "checks.yaml",
			edit.Op{Op: "set", Node: "order", Path: []string{"checks", "1", "schema", "properties", "total"}, Value: raw("any")},
			`            total: any`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := read(t, tt.file)
			out, err := edit.Apply(src, tt.file, []edit.Op{tt.op})
			if err != nil {
				t.Fatal(err)
			}
			got := changedLines(t, src, out)
			if len(got) != 1 || got[0] != tt.want {
				t.Fatalf("changed lines %q, want just %q", got, tt.want)
			}
			if errs := errorsOf(t, tt.file, out); len(errs) > 0 {
				t.Fatalf("the edited file does not validate: %q", errs)
			}
		})
	}
}

// TestOps applies each op to a YAML and a JSON file and checks the result
// decodes as the document edited in memory would.
func TestOps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		ops  []edit.Op
		want func(m map[string]any)
	}{
		{"set a new key", "branches.yaml",
			[]edit.Op{{Op: "set", Node: "large", Path: []string{"timeout"}, Value: raw("30s")}},
			func(m map[string]any) { nodeOf(m, "large")["timeout"] = "30s" }},
		{"set a new nested key", "branches.yaml",
			[]edit.Op{{Op: "set", Node: "summary", Path: []string{"checks"}, Value: raw([]any{map[string]any{"name": "says EUR", "type": "contains", "target": "text", "value": "EUR"}})}},
			func(m map[string]any) {
				nodeOf(m, "summary")["checks"] = []any{map[string]any{"name": "says EUR", "type": "contains", "target": "text", "value": "EUR"}}
			}},
		{"set a map over a string", "checks.yaml",
			[]edit.Op{{Op: "set", Node: "summary", Path: []string{"text"}, Value: raw("two\nlines")}},
			func(m map[string]any) { nodeOf(m, "summary")["text"] = "two\nlines" }},
		{"append a check", "checks.yaml",
			[]edit.Op{{Op: "set", Node: "summary", Path: []string{"checks", "-"}, Value: raw(map[string]any{"type": "regex", "target": "text", "pattern": "x"})}},
			func(m map[string]any) {
				n := nodeOf(m, "summary")
				n["checks"] = append(n["checks"].([]any), map[string]any{"type": "regex", "target": "text", "pattern": "x"})
			}},
		{"unset a key", "checks.yaml",
			[]edit.Op{{Op: "unset", Node: "order", Path: []string{"checks"}}},
			func(m map[string]any) { delete(nodeOf(m, "order"), "checks") }},
		{"unset a list element", "checks.yaml",
			[]edit.Op{{Op: "unset", Node: "order", Path: []string{"checks", "1"}}},
			func(m map[string]any) {
				n := nodeOf(m, "order")
				cs := n["checks"].([]any)
				n["checks"] = []any{cs[0], cs[2]}
			}},
		{"unset the last key of a map", "branches.yaml",
			[]edit.Op{{Op: "unset", Node: "review", Path: []string{"values", "lane"}}},
			func(m map[string]any) { nodeOf(m, "review")["values"] = map[string]any{} }},
		{"disable and enable", "branches.yaml",
			[]edit.Op{{Op: "disable", Node: "auto"}, {Op: "disable", Node: "review"}, {Op: "enable", Node: "review"}, {Op: "enable", Node: "start"}},
			func(m map[string]any) { nodeOf(m, "auto")["disabled"] = true }},
		{"remove a node and its edges", "branches.yaml",
			[]edit.Op{{Op: "remove_node", Node: "no_tax"}},
			func(m map[string]any) {
				m["nodes"] = without(m["nodes"].([]any), func(n map[string]any) bool { return n["id"] == "no_tax" })
				m["edges"] = without(m["edges"].([]any), func(e map[string]any) bool { return e["from"] == "no_tax" || e["to"] == "no_tax" })
			}},
		{"remove a node with a comment above it", "branches.yaml",
			[]edit.Op{{Op: "remove_node", Node: "large"}},
			func(m map[string]any) {
				m["nodes"] = without(m["nodes"].([]any), func(n map[string]any) bool { return n["id"] == "large" })
				m["edges"] = without(m["edges"].([]any), func(e map[string]any) bool { return e["from"] == "large" || e["to"] == "large" })
			}},
		{"rename a node", "branches.yaml",
			[]edit.Op{{Op: "rename_node", Node: "large", To: "big"}},
			func(m map[string]any) {
				nodeOf(m, "large")["id"] = "big"
				for _, e := range m["edges"].([]any) {
					for _, k := range []string{"from", "to"} {
						if e.(map[string]any)[k] == "large" {
							e.(map[string]any)[k] = "big"
						}
					}
				}
			}},
		{"duplicate a node", "checks.yaml",
			[]edit.Op{{Op: "duplicate", Node: "order", To: "order_copy"}},
			func(m map[string]any) {
				ns := m["nodes"].([]any)
				cp := deepCopy(ns[1]).(map[string]any)
				cp["id"] = "order_copy"
				m["nodes"] = append(append(append([]any{}, ns[:2]...), cp), ns[2:]...)
			}},
		{"connect and disconnect", "branches.yaml",
			[]edit.Op{{Op: "connect", Node: "large", To: "summary", Handle: "true"}, {Op: "disconnect", Node: "auto", To: "lane_chosen"}},
			func(m map[string]any) {
				m["edges"] = without(m["edges"].([]any), func(e map[string]any) bool { return e["from"] == "auto" && e["to"] == "lane_chosen" })
				m["edges"] = append(m["edges"].([]any), map[string]any{"from": "large", "to": "summary", "on": "true"})
			}},
		{"add a node to a JSON file and connect it", "sub/slugify.json",
			[]edit.Op{
				{Op: "add_node", Node: "shout", Value: raw(map[string]any{"type": "template", "text": "{{ clean.slug }}!"})},
				{Op: "connect", Node: "clean", To: "shout"},
			},
			func(m map[string]any) {
				m["nodes"] = append(m["nodes"].([]any), map[string]any{"id": "shout", "type": "template", "text": "{{ clean.slug }}!"})
				m["edges"] = append(m["edges"].([]any), map[string]any{"from": "clean", "to": "shout"})
			}},
		{"every op on a JSON file", "sub/slugify.json",
			[]edit.Op{
				{Op: "duplicate", Node: "clean", To: "clean2"},
				{Op: "set", Node: "clean2", Path: []string{"values", "n"}, Value: raw([]any{1, "a\"b", nil, true})},
				{Op: "disable", Node: "clean2"},
				{Op: "rename_node", Node: "clean2", To: "extra"},
				{Op: "unset", Node: "extra", Path: []string{"values", "slug"}},
				{Op: "disconnect", Node: "start", To: "clean"},
				{Op: "connect", Node: "start", To: "extra"},
				{Op: "remove_node", Node: "clean"},
			},
			func(m map[string]any) {
				n := nodeOf(m, "clean")
				n["id"] = "extra"
				n["values"] = map[string]any{"n": []any{1, "a\"b", nil, true}}
				n["disabled"] = true
				m["edges"] = []any{map[string]any{"from": "start", "to": "extra"}}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := read(t, tt.file)
			out, err := edit.Apply(src, tt.file, tt.ops)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(src, read(t, tt.file)) {
				t.Fatal("Apply changed the text it was given")
			}
			want := plain(t, src)
			tt.want(want)
			if got := plain(t, out); !reflect.DeepEqual(got, want) {
				t.Fatalf("the edited file decodes as\n%v\nwant\n%v\ntext:\n%s", got, want, out)
			}
			if strings.HasSuffix(tt.file, ".json") && !json.Valid(out) {
				t.Fatalf("the edited JSON file is not JSON:\n%s", out)
			}
			for _, c := range commentLines(src) {
				if !bytes.Contains(out, []byte(c)) {
					t.Fatalf("the edit lost the comment %q", c)
				}
			}
			if _, ds := workflow.Decode(tt.file, out); ds.HasErrors() {
				t.Fatalf("the edited file does not decode: %v", ds)
			}
		})
	}
}

func without(list []any, drop func(map[string]any) bool) []any {
	var out []any
	for _, x := range list {
		if !drop(x.(map[string]any)) {
			out = append(out, x)
		}
	}
	return out
}

func deepCopy(v any) any {
	b, _ := yaml.Marshal(v)
	var out any
	_ = yaml.Unmarshal(b, &out)
	return out
}

// TestABlockOverACommentedValueKeepsTheComment: a value with a comment
// after it on its line, replaced by one written as a block (a text of
// several lines, a map), reads back as given — the comment does not end
// up inside a block text — and the comment stays, on the key's line.
func TestABlockOverACommentedValueKeepsTheComment(t *testing.T) {
	t.Parallel()
	const comment = "# without a signal by then, follow `timeout`"
	keyLine := regexp.MustCompile(`\n    timeout: [^\n]*` + regexp.QuoteMeta(comment) + `\n`)
	for _, v := range []any{"a: b # c\n- d", "two\nlines", map[string]any{"after": "24h", "then": "expired"}} {
		src := read(t, "approval.yaml")
		if !bytes.Contains(src, []byte("timeout: 24h          "+comment)) {
			t.Fatalf("examples/approval.yaml no longer has the commented timeout this test edits")
		}
		out, err := edit.Apply(src, "approval.yaml", []edit.Op{{Op: "set", Node: "approve", Path: []string{"timeout"}, Value: raw(v)}})
		if err != nil {
			t.Fatal(err)
		}
		if got := nodeOf(plain(t, out), "approve")["timeout"]; !reflect.DeepEqual(got, v) {
			t.Fatalf("set %#v, read back %#v:\n%s", v, got, out)
		}
		if !keyLine.Match(out) {
			t.Fatalf("the comment is not on the key's line:\n%s", out)
		}
	}
}

func TestAddingAndConnectingANodeKeepsEveryComment(t *testing.T) {
	t.Parallel()
	src := read(t, "branches.yaml")
	out, err := edit.Apply(src, "branches.yaml", []edit.Op{
		{Op: "add_node", Value: raw(map[string]any{"id": "log", "type": "shell", "command": []string{"echo", "done: yes"}, "timeout": "5s"})},
		{Op: "connect", Node: "summary", To: "log"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := commentLines(out), commentLines(src); !reflect.DeepEqual(got, want) {
		t.Fatalf("comments %q, want %q", got, want)
	}
	for _, want := range []string{
		"  - id: log\n    type: shell\n    command:\n      - echo\n      - 'done: yes'\n    timeout: 5s\nedges:",
		"  - {from: summary, to: log}\noutputs:",
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Fatalf("the file has no\n%s\nin\n%s", want, out)
		}
	}
	if errs := errorsOf(t, "branches.yaml", out); len(errs) > 0 {
		t.Fatalf("the edited file does not validate: %q", errs)
	}
	w, _ := workflow.Decode("branches.yaml", out)
	if n := w.Node("log"); n == nil || n.Params["command"] == nil || *n.Timeout != 5e9 {
		t.Fatalf("node log decodes as %+v", n)
	}
}

// TestEveryJSONTypeRoundTrips sets a value of each JSON type in a YAML and
// a JSON file and reads it back through workflow.Decode.
func TestEveryJSONTypeRoundTrips(t *testing.T) {
	t.Parallel()
	values := map[string]string{
		"string with quotes, lines and colons": `"say \"hi\": now\nand 'then'\n# not a comment\n"`,
		"string that reads as a bool":          `"true"`,
		"string that reads as a number":        `"0x1F"`,
		"string that reads as null":            `"~"`,
		"empty string":                         `""`,
		"string with blank lines at its end":   `"a\n\n\n"`,
		"string with leading spaces":           `"  indented\nnext"`,
		"string like a list item":              `"- x"`,
		"unicode":                              `"é ☃ \u2028"`,
		"integer":                              `42`,
		"negative float":                       `-1.5`,
		"exponent":                             `1e5`,
		"true":                                 `true`,
		"false":                                `false`,
		"null":                                 `null`,
		"object":                               `{"z": 1, "a": [1, "x", {"k": null}], "q": "a: b"}`,
		"array":                                `[1, [2, [3]], {}, []]`,
		"empty object":                         `{}`,
		"empty array":                          `[]`,
	}
	for _, file := range []string{"checks.yaml", "branches.yaml", "sub/slugify.json"} {
		for name, value := range values {
			for _, path := range [][]string{{"values", "x"}, {"values", "slug"}, {"values", "lines"}, {"values"}} {
				t.Run(file+"/"+name+"/"+strings.Join(path, "."), func(t *testing.T) {
					t.Parallel()
					src := read(t, file)
					id := map[string]string{"checks.yaml": "order", "branches.yaml": "review", "sub/slugify.json": "clean"}[file]
					out, err := edit.Apply(src, file, []edit.Op{{Op: "set", Node: id, Path: path, Value: json.RawMessage(value)}})
					if err != nil {
						t.Fatal(err)
					}
					var want any
					if err := yaml.Unmarshal([]byte(value), &want); err != nil {
						t.Fatal(err)
					}
					w, ds := workflow.Decode(file, out)
					if w == nil {
						t.Fatalf("the edited file does not decode: %v\n%s", ds, out)
					}
					got := w.Node(id).Params["values"]
					if len(path) == 2 {
						got = got.(map[string]any)[path[1]]
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("the value decodes as %#v, want %#v; text:\n%s", got, want, out)
					}
					if strings.HasSuffix(file, ".json") && !json.Valid(out) {
						t.Fatalf("the edited JSON file is not JSON:\n%s", out)
					}
					if !bytes.Equal(out[:bytes.Index(src, []byte("nodes"))], src[:bytes.Index(src, []byte("nodes"))]) {
						t.Fatalf("the edit changed text before the nodes")
					}
				})
			}
		}
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		ops   []edit.Op
		is    error
		index int
		says  string
	}{
		{"unknown node", []edit.Op{{Op: "set", Node: "nope", Path: []string{"x"}, Value: raw(1)}}, edit.ErrUnknownNode, 0, `no node "nope" in the file; the nodes are start, order, summary`},
		{"unknown op", []edit.Op{{Op: "explode", Node: "order"}}, edit.ErrBadOp, 0, `unknown op "explode"`},
		{"no value", []edit.Op{{Op: "set", Node: "order", Path: []string{"x"}}}, edit.ErrBadOp, 0, "set needs a value"},
		{"not JSON", []edit.Op{{Op: "set", Node: "order", Path: []string{"x"}, Value: json.RawMessage(`{a`)}}, edit.ErrBadOp, 0, "not JSON"},
		{"empty path", []edit.Op{{Op: "set", Node: "order", Value: raw(1)}}, edit.ErrBadPath, 0, "the path is empty"},
		{"the id", []edit.Op{{Op: "set", Node: "order", Path: []string{"id"}, Value: raw("x")}}, edit.ErrBadPath, 0, "rename_node"},
		{"under a scalar", []edit.Op{{Op: "set", Node: "summary", Path: []string{"text", "x"}, Value: raw(1)}}, edit.ErrBadPath, 0, `text is a single value`},
		{"list index", []edit.Op{{Op: "set", Node: "order", Path: []string{"checks", "9"}, Value: raw(1)}}, edit.ErrBadPath, 0, `checks is a list of 3; "9" is not an index`},
		{"unset a missing key", []edit.Op{{Op: "unset", Node: "order", Path: []string{"timeout"}}}, edit.ErrBadPath, 0, `node "order" has no timeout`},
		{"the second op fails", []edit.Op{{Op: "disable", Node: "order"}, {Op: "add_node", Value: raw(map[string]any{"id": "order", "type": "set"})}}, edit.ErrClash, 1, `a node "order" is already in the file`},
		{"rename onto a node", []edit.Op{{Op: "rename_node", Node: "order", To: "summary"}}, edit.ErrClash, 0, `a node "summary" is already`},
		{"duplicate onto a node", []edit.Op{{Op: "duplicate", Node: "order", To: "start"}}, edit.ErrClash, 0, `a node "start" is already`},
		{"edge twice", []edit.Op{{Op: "connect", Node: "start", To: "order"}}, edit.ErrClash, 0, `an edge from "start" to "order" is already`},
		{"connect to nothing", []edit.Op{{Op: "connect", Node: "start", To: "ghost"}}, edit.ErrUnknownNode, 0, `no node "ghost"`},
		{"disconnect a missing edge", []edit.Op{{Op: "disconnect", Node: "start", To: "order", Handle: "true"}}, edit.ErrUnknownEdge, 0, `no edge from "start" to "order" (handle "true"); its edges go to order`},
		{"add_node without an id", []edit.Op{{Op: "add_node", Value: raw(map[string]any{"type": "set"})}}, edit.ErrBadOp, 0, "needs the new node's id"},
	}
	src := read(t, "checks.yaml")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := edit.Apply(src, "checks.yaml", tt.ops)
			var oe *edit.OpError
			if !errors.As(err, &oe) || !errors.Is(err, tt.is) || oe.Index != tt.index {
				t.Fatalf("Apply returned %v (%T), want an OpError at op %d wrapping %v", err, err, tt.index, tt.is)
			}
			if !strings.Contains(err.Error(), tt.says) || out != nil {
				t.Fatalf("error %q, want one saying %q and no text", err, tt.says)
			}
		})
	}
}

func TestRefusesToWriteOverAnAnchor(t *testing.T) {
	t.Parallel()
	src := []byte("version: 1\nname: a\nnodes:\n  - id: a\n    type: set\n    values: &v {x: 1}\n  - id: b\n    type: set\n    values: *v\n")
	for _, op := range []edit.Op{
		{Op: "set", Node: "a", Path: []string{"values", "x"}, Value: raw(2)},
		{Op: "set", Node: "b", Path: []string{"values"}, Value: raw(2)},
	} {
		if _, err := edit.Apply(src, "a.yaml", []edit.Op{op}); !errors.Is(err, edit.ErrLayout) {
			t.Fatalf("set %v: %v, want ErrLayout", op.Path, err)
		}
	}
	// Around the anchor the file is edited as usual.
	out, err := edit.Apply(src, "a.yaml", []edit.Op{{Op: "set", Node: "b", Path: []string{"timeout"}, Value: raw("1s")}})
	if err != nil || !bytes.HasSuffix(out, []byte("    values: *v\n    timeout: 1s\n")) {
		t.Fatalf("Apply = %q, %v", out, err)
	}
}

func TestLayouts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		ops       []edit.Op
		want      string
	}{
		{"a file without a final line break",
			"nodes:\n  - id: a\n    type: set",
			[]edit.Op{{Op: "set", Node: "a", Path: []string{"values"}, Value: raw(map[string]any{"k": "v"})}},
			"nodes:\n  - id: a\n    type: set\n    values:\n      k: v"},
		{"CRLF line breaks",
			"nodes:\r\n  - id: a\r\n    type: set\r\n",
			[]edit.Op{{Op: "add_node", Value: raw(map[string]any{"id": "b", "type": "set"})}, {Op: "connect", Node: "a", To: "b"}},
			"nodes:\r\n  - id: a\r\n    type: set\r\n  - id: b\r\n    type: set\r\nedges:\r\n  - {from: a, to: b}\r\n"},
		{"flow nodes stay flow",
			"nodes:\n  - {id: a, type: set} # first\n  - {id: b, type: set}\nedges: []\n",
			[]edit.Op{{Op: "add_node", Value: raw(map[string]any{"id": "c", "type": "if", "condition": "true"})}, {Op: "connect", Node: "c", To: "a", Handle: "true"}, {Op: "remove_node", Node: "b"}},
			"nodes:\n  - {id: a, type: set} # first\n  - {id: c, type: if, condition: \"true\"}\nedges: [{from: c, to: a, on: \"true\"}]\n"},
		{"a flow list of nodes",
			"nodes: [{id: a, type: set}, {id: b, type: set}]\n",
			[]edit.Op{{Op: "duplicate", Node: "a", To: "a2"}, {Op: "remove_node", Node: "b"}, {Op: "set", Node: "a", Path: []string{"text"}, Value: raw("x\ny")}},
			"nodes: [{id: a, type: set, text: \"x\\ny\"}, {id: a2, type: set}]\n"},
		{"a block value over a key with nothing after it",
			"nodes:\n  - id: a\n    type: set\n    values:\n",
			[]edit.Op{{Op: "set", Node: "a", Path: []string{"values", "k"}, Value: raw([]int{1})}},
			"nodes:\n  - id: a\n    type: set\n    values:\n      k:\n        - 1\n"},
		{"the first key of an element and the last node",
			"nodes:\n  - timeout: 1s\n    id: a\n    type: set\nedges:\n  - from: a\n    to: a\n",
			[]edit.Op{{Op: "unset", Node: "a", Path: []string{"timeout"}}, {Op: "disconnect", Node: "a", To: "a"}, {Op: "remove_node", Node: "a"}},
			"nodes: []\nedges: []\n"},
		{"a block literal replaced",
			"nodes:\n  - id: a\n    type: template\n    text: |\n      one\n\n      # two\n    timeout: 1s # keep\n",
			[]edit.Op{{Op: "set", Node: "a", Path: []string{"text"}, Value: raw("three")}},
			"nodes:\n  - id: a\n    type: template\n    text: three\n    timeout: 1s # keep\n"},
		{"indentation of four",
			"nodes:\n    -   id: a\n        type: set\n        values:\n            k: 1\n",
			[]edit.Op{{Op: "set", Node: "a", Path: []string{"values", "m"}, Value: raw(map[string]any{"n": 1})}},
			"nodes:\n    -   id: a\n        type: set\n        values:\n            k: 1\n            m:\n                n: 1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := edit.Apply([]byte(tt.src), "f.yaml", tt.ops)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Fatalf("got\n%q\nwant\n%q", out, tt.want)
			}
		})
	}
}

// BenchmarkApply200 edits one value of a 200-node workflow, what the
// editor does on every change before it validates.
func BenchmarkApply200(b *testing.B) {
	var src strings.Builder
	src.WriteString("version: 1\nname: big\nnodes:\n")
	for i := range 200 {
		src.WriteString("  # step " + strconv.Itoa(i) + "\n  - id: n" + strconv.Itoa(i) + "\n    type: set\n    values: {x: " + strconv.Itoa(i) + "}\n")
	}
	src.WriteString("edges:\n")
	for i := 1; i < 200; i++ {
		src.WriteString("  - {from: n" + strconv.Itoa(i-1) + ", to: n" + strconv.Itoa(i) + "}\n")
	}
	text := []byte(src.String())
	ops := []edit.Op{{Op: "set", Node: "n150", Path: []string{"values", "x"}, Value: json.RawMessage(`"changed"`)}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := edit.Apply(text, "big.yaml", ops); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRefusesFilesItCannotRead(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		src  string
		want error
	}{
		"a comment between a dash and its element": {"nodes:\n  - # the start\n    id: a\n    type: set\n", edit.ErrLayout},
		"YAML that does not parse":                 {"nodes: [\n", edit.ErrParse},
		"JSON that does not parse":                 {`{"nodes": [}`, edit.ErrParse},
		"a list at the top":                        {"- id: a\n", edit.ErrParse},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file := "f.yaml"
			if strings.HasPrefix(tt.src, "{") {
				file = "f.json"
			}
			out, err := edit.Apply([]byte(tt.src), file, []edit.Op{{Op: "disable", Node: "a"}})
			if !errors.Is(err, tt.want) || out != nil || !strings.HasPrefix(err.Error(), file+": ") {
				t.Fatalf("Apply = %q, %v; want an error naming %s wrapping %v", out, err, file, tt.want)
			}
		})
	}
}
