package edit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/skeinhq/skein/workflow"
	"github.com/skeinhq/skein/workflow/edit"
)

// fuzzFiles are the example workflows FuzzApply edits.
func fuzzFiles(f *testing.F) (names []string, srcs [][]byte) {
	var files []string
	for _, pattern := range []string{"*.yaml", "*.json", "sub/*.json", "tour/*.yaml"} {
		m, _ := filepath.Glob(filepath.Join("../../examples", pattern))
		files = append(files, m...)
	}
	sort.Strings(files)
	for _, file := range files {
		if strings.HasSuffix(file, ".test.yaml") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		names, srcs = append(names, filepath.Base(file)), append(srcs, src)
	}
	if len(names) == 0 {
		f.Fatal("no example workflows found")
	}
	return names, srcs
}

var (
	fuzzOps   = []string{"set", "unset", "add_node", "remove_node", "rename_node", "connect", "disconnect", "disable", "enable", "duplicate", "bogus"}
	fuzzPaths = [][]string{
		{"timeout"}, {"values", "x"}, {"values"}, {"checks", "0", "on_fail"}, {"checks", "-"}, {"checks", "0"},
		{"text"}, {"command"}, {"command", "1"}, {"cases", "0", "name"}, {"disabled"}, {"retries"}, {"id"}, {"type"},
		{"condition"}, {"values", "a", "b"}, {"env", "K"}, {},
	}
	fuzzValues = []string{
		`"x"`, `"a: b # c\n- d"`, `""`, `"true"`, `12`, `-0.5`, `1e3`, `true`, `null`, `{}`, `[]`,
		`{"k": [1, {"z": "q\"uote"}], "e": {}}`, `["echo", "hi"]`, `{"name": "c", "type": "expr", "expr": "true"}`,
		`"line\n\nblank\n\n"`, `{"type": "set", "values": {"a": 1}}`, `{"id": "fresh", "type": "merge"}`, `not json`,
	}
	fuzzHandles = []string{"", "true", "false", "default", "europe", "body", "done"}
)

// FuzzApply applies random ops to the example workflows: Apply must not
// panic, a refusal must be an error naming the op, and a result must
// parse (JSON stays JSON) with every byte before the first place an op
// edits unchanged.
func FuzzApply(f *testing.F) {
	names, srcs := fuzzFiles(f)
	for i := range names {
		f.Add(uint8(i), []byte{0, 1, 1, 0, 2, 3, 3, 0, 5, 4})
		f.Add(uint8(i), []byte{2, 0, 15, 0, 5, 1, 99, 0, 3, 2, 0, 0})
		f.Add(uint8(i), []byte{4, 2, 0, 1, 9, 1, 0, 0, 0, 1, 3, 4, 1, 1, 11, 7})
	}
	f.Fuzz(func(t *testing.T, file uint8, gen []byte) {
		name, src := names[int(file)%len(names)], srcs[int(file)%len(names)]
		w, ds := workflow.Decode(name, src)
		if w == nil {
			t.Fatalf("example %s does not decode: %v", name, ds)
		}
		ids := []string{"ghost", "n1", "n2"}
		for _, n := range w.Nodes {
			ids = append(ids, n.ID)
		}
		pick := func(i int) byte {
			if i < len(gen) {
				return gen[i]
			}
			return 0
		}
		var ops []edit.Op
		for i := 0; i+4 < len(gen)+4 && len(ops) < 8; i += 5 {
			op := edit.Op{
				Op:     fuzzOps[int(pick(i))%len(fuzzOps)],
				Node:   ids[int(pick(i+1))%len(ids)],
				Path:   fuzzPaths[int(pick(i+2))%len(fuzzPaths)],
				Value:  json.RawMessage(fuzzValues[int(pick(i+3))%len(fuzzValues)]),
				To:     ids[int(pick(i+4))%len(ids)],
				Handle: fuzzHandles[int(pick(i+2))%len(fuzzHandles)],
			}
			if op.Op == "add_node" && pick(i+3)%2 == 0 {
				op.Value = json.RawMessage(`{"type": "template", "text": "{{ 1 }}"}`)
			}
			ops = append(ops, op)
			if i >= len(gen) {
				break
			}
		}
		out, err := edit.Apply(src, name, ops)
		if err != nil {
			var oe *edit.OpError
			if !errors.As(err, &oe) || oe.Index < 0 || oe.Index >= len(ops) || out != nil {
				t.Fatalf("Apply(%+v) = %v (%T), want an OpError naming one of the ops", ops, err, err)
			}
			return
		}
		w2, ds := workflow.Decode(name, out)
		if w2 == nil {
			t.Fatalf("the result does not decode: %v\nops %+v\n%s", ds, ops, out)
		}
		if strings.HasSuffix(name, ".json") && !json.Valid(out) {
			t.Fatalf("the JSON file is no longer JSON\nops %+v\n%s", ops, out)
		}
		// Nodes no op names decode as before (an endloop follows a
		// renamed loop), but for the references to a renamed node: the
		// names a rename swaps are masked on both sides.
		named := map[string]bool{}
		var renamed []string
		for _, op := range ops {
			named[op.Node], named[op.To] = true, true
			if op.Op == "rename_node" {
				renamed = append(renamed, op.Node, op.To)
			}
		}
		before, after := nodesByID(t, src), nodesByID(t, out)
		for id, n := range before {
			if named[id] || n["type"] == "endloop" {
				continue
			}
			if !reflect.DeepEqual(masked(after[id], renamed), masked(n, renamed)) {
				t.Fatalf("node %s, which no op names, changed from %v to %v\nops %+v\n%s", id, n, after[id], ops, out)
			}
		}
		// A single set reads back as its value.
		if len(ops) == 1 && ops[0].Op == "set" {
			op := ops[0]
			var want any
			_ = yaml.Unmarshal(op.Value, &want)
			var got any = after[op.Node]
			for _, seg := range op.Path {
				switch g := got.(type) {
				case map[string]any:
					got = g[seg]
				case []any:
					i, err := strconv.Atoi(seg)
					if err != nil || i >= len(g) {
						i = len(g) - 1 // "-" appended
					}
					got = g[i]
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("set %v wrote %#v, want %#v\n%s", op.Path, got, want, out)
			}
		}
		bound := firstEdit(w, src, ops)
		if len(out) < bound || !bytes.Equal(out[:bound], src[:bound]) {
			t.Fatalf("the text before byte %d (line %d) changed\nops %+v\n%s", bound, bytes.Count(src[:bound], []byte("\n"))+1, ops, out)
		}
	})
}

// nodesByID decodes a file's nodes as plain values.
func nodesByID(t *testing.T, src []byte) map[string]map[string]any {
	var doc struct {
		Nodes []map[string]any `yaml:"nodes"`
	}
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatalf("the text does not parse: %v\n%s", err, src)
	}
	out := map[string]map[string]any{}
	for _, n := range doc.Nodes {
		if id, ok := n["id"].(string); ok {
			out[id] = n
		}
	}
	return out
}

// firstEdit is a lower bound of the first byte ops may change: the start
// of the first line of the earliest node they name, of the nodes or edges
// key when they touch those lists (and of outputs for a rename, which
// rewrites the references there), of the last node when they add one.
func firstEdit(w *workflow.Workflow, src []byte, ops []edit.Op) int {
	lineStart := func(line int) int {
		off := 0
		for l := 1; l < line && off < len(src); l++ {
			i := bytes.IndexByte(src[off:], '\n')
			if i < 0 {
				return len(src)
			}
			off += i + 1
		}
		return off
	}
	bound := len(src)
	at := func(p workflow.Pos) {
		if p.Line > 0 {
			bound = min(bound, lineStart(p.Line))
		}
	}
	lastKey := workflow.Pos{}
	for _, k := range []string{"version", "name", "description", "inputs", "secrets", "files", "defaults", "mcp_servers", "llm", "limits", "evidence", "delivery", "nodes", "edges", "outputs", "record", "trace"} {
		if p := w.KeyPos(k); p.Line > lastKey.Line {
			lastKey = p
		}
	}
	edges := func() {
		if p := w.KeyPos("edges"); p.Line > 0 {
			at(p)
		} else {
			at(lastKey)
		}
	}
	for _, op := range ops {
		if n := w.Node(op.Node); n != nil {
			at(n.Pos)
		}
		switch op.Op {
		case "add_node":
			if len(w.Nodes) > 0 {
				at(w.Nodes[len(w.Nodes)-1].Pos)
			}
			at(lastKey)
		case "remove_node":
			at(w.KeyPos("nodes"))
			edges()
		case "rename_node": // and the references in outputs
			at(w.KeyPos("nodes"))
			at(w.KeyPos("outputs"))
			edges()
		case "connect", "disconnect":
			edges()
		}
	}
	return bound
}

// masked returns v with every whole-word occurrence of names in its
// strings replaced by one mark.
func masked(v any, names []string) any {
	switch v := v.(type) {
	case string:
		for _, n := range names {
			if n != "" {
				v = regexp.MustCompile(`\b`+regexp.QuoteMeta(n)+`\b`).ReplaceAllString(v, "\x00")
			}
		}
		return v
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			out[k] = masked(x, names)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = masked(x, names)
		}
		return out
	}
	return v
}
