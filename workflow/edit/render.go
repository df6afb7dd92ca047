package edit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"go.yaml.in/yaml/v3"
)

// A jval is a value to write, with its keys in the order given.
type jval struct {
	kind  byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	s     string
	keys  []string
	vals  []*jval
	items []*jval
	// flow asks for a {…} map in a block YAML document (edges are written
	// so).
	flow bool
	// quote is the YAML style of a string replacing a quoted one, so the
	// new value is quoted as the old was.
	quote yaml.Style
}

// readValue reads an op's JSON value.
func readValue(raw json.RawMessage) (*jval, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("no value")
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	v, err := readJSON(dec, 0)
	if err != nil {
		return nil, fmt.Errorf("the value is not JSON: %w", err)
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, errors.New("the value is not JSON: text after its end")
	}
	return v, nil
}

// maxValueDepth bounds the nesting of a value an op writes.
const maxValueDepth = 100

func readJSON(dec *jsontext.Decoder, depth int) (*jval, error) {
	if depth > maxValueDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxValueDepth)
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		v := &jval{kind: 'o'}
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			key := tok.String() // before the next read voids tok
			if v.get(key) != nil {
				return nil, fmt.Errorf("duplicate key %q", key)
			}
			c, err := readJSON(dec, depth+1)
			if err != nil {
				return nil, err
			}
			v.keys, v.vals = append(v.keys, key), append(v.vals, c)
		}
		_, err = dec.ReadToken()
		return v, err
	case '[':
		v := &jval{kind: 'a'}
		for dec.PeekKind() != ']' {
			c, err := readJSON(dec, depth+1)
			if err != nil {
				return nil, err
			}
			v.items = append(v.items, c)
		}
		_, err = dec.ReadToken()
		return v, err
	case '"':
		return &jval{kind: 's', s: tok.String()}, nil
	case '0':
		return &jval{kind: 'n', s: tok.String()}, nil
	case 't', 'f':
		return &jval{kind: 'b', s: tok.String()}, nil
	case 'n':
		return &jval{kind: 'z', s: "null"}, nil
	}
	return nil, errors.New("unexpected token")
}

func str(s string) *jval { return &jval{kind: 's', s: s} }

func (v *jval) get(key string) *jval {
	for i, k := range v.keys {
		if k == key {
			return v.vals[i]
		}
	}
	return nil
}

// first moves key, when v has it, to the front of v's keys.
func (v *jval) first(key string) {
	for i, k := range v.keys {
		if k == key {
			val := v.vals[i]
			copy(v.keys[1:i+1], v.keys[:i])
			copy(v.vals[1:i+1], v.vals[:i])
			v.keys[0], v.vals[0] = key, val
			return
		}
	}
}

// nest wraps v in maps, one per key: nest([a b], v) is {a: {b: v}}.
func nest(path []string, v *jval) *jval {
	for i := len(path) - 1; i >= 0; i-- {
		v = &jval{kind: 'o', keys: []string{path[i]}, vals: []*jval{v}}
	}
	return v
}

func (v *jval) collection() bool { return v.kind == 'o' || v.kind == 'a' }

// yamlNode turns v into a yaml/v3 node the encoder writes: collections
// in block style unless flow, scalars quoted only where YAML needs it
// (the encoder quotes a string that would read as another type).
func (v *jval) yamlNode(flow bool) *yaml.Node {
	flow = flow || v.flow
	var style yaml.Style
	if flow {
		style = yaml.FlowStyle
	}
	switch v.kind {
	case 'o':
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: style}
		for i, k := range v.keys {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, v.vals[i].yamlNode(flow))
		}
		return n
	case 'a':
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: style}
		for _, it := range v.items {
			n.Content = append(n.Content, it.yamlNode(flow))
		}
		return n
	case 'n':
		tag := "!!float"
		if !strings.ContainsAny(v.s, ".eE") {
			tag = "!!int"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v.s}
	case 'b':
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: v.s}
	case 'z':
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v.s, Style: v.quote}
	if strings.HasSuffix(v.s, "\n\n") || strings.ContainsRune(v.s, '\r') {
		// A block scalar keeping trailing line breaks (|+) would also take
		// the blank lines written after it.
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// encode writes a yaml/v3 node with the document's indentation step.
func encode(n *yaml.Node, step int) (string, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(max(step, 2))
	if err := enc.Encode(n); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// indentLines prefixes every line but the first with indent (blank lines
// stay empty).
func indentLines(s, indent string) string {
	if indent == "" || !strings.Contains(s, "\n") {
		return s
	}
	lines := strings.Split(s, "\n")
	for i := 1; i < len(lines); i++ {
		if lines[i] != "" {
			lines[i] = indent + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

func spaces(n int) string { return strings.Repeat(" ", max(n, 0)) }

// yamlFlow writes v as a flow value (one line, as inside […]).
func (d *doc) yamlFlow(v *jval) (string, error) {
	out, err := encode(&yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle, Content: []*yaml.Node{v.yamlNode(true)}}, d.step)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(out, "[") || !strings.HasSuffix(out, "]") || strings.Contains(out, "\n") {
		return "", errLayout
	}
	return out[1 : len(out)-1], nil
}

// yamlFlowKey writes "key: value" for a flow map.
func (d *doc) yamlFlowKey(key string, v *jval) (string, error) {
	out, err := d.yamlFlow(&jval{kind: 'o', keys: []string{key}, vals: []*jval{v}})
	if err != nil {
		return "", err
	}
	return out[1 : len(out)-1], nil
}

// yamlBlockKey writes "key: value" for a block map whose keys are at
// column col: the value's lines are indented to match.
func (d *doc) yamlBlockKey(key string, v *jval, col int) (string, error) {
	out, err := encode((&jval{kind: 'o', keys: []string{key}, vals: []*jval{v}}).yamlNode(false), d.step)
	if err != nil {
		return "", err
	}
	return indentLines(out, spaces(col)), nil
}

// yamlAfterColon writes what follows "key:" for v in a block map whose
// keys are at col: " value", or a line break and an indented block.
func (d *doc) yamlAfterColon(v *jval, col int) (string, error) {
	out, err := d.yamlBlockKey("k", v, col)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(out, "k:"), nil
}

// yamlItem writes "- value" for a block list whose dashes are at col.
func (d *doc) yamlItem(v *jval, col int) (string, error) {
	out, err := encode(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{v.yamlNode(false)}}, d.step)
	if err != nil {
		return "", err
	}
	return indentLines(out, spaces(col)), nil
}

// jsonText writes v as JSON: one line, or, when multi, one entry a line
// with the file's step, the closing bracket at indent.
func (d *doc) jsonText(v *jval, multi bool, indent string) string {
	var b strings.Builder
	d.writeJSON(&b, v, multi, indent)
	return b.String()
}

func (d *doc) writeJSON(b *strings.Builder, v *jval, multi bool, indent string) {
	inner := indent + spaces(d.step)
	open := func(c byte, n int) (sep func(i int)) {
		b.WriteByte(c)
		return func(i int) {
			switch {
			case multi:
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString("\n" + inner)
			case i > 0:
				b.WriteString(", ")
			}
		}
	}
	closeWith := func(c byte, n int) {
		if multi && n > 0 {
			b.WriteString("\n" + indent)
		}
		b.WriteByte(c)
	}
	switch v.kind {
	case 'o':
		sep := open('{', len(v.keys))
		for i, k := range v.keys {
			sep(i)
			b.WriteString(quoteJSON(k) + ": ")
			d.writeJSON(b, v.vals[i], multi, inner)
		}
		closeWith('}', len(v.keys))
	case 'a':
		sep := open('[', len(v.items))
		for i, it := range v.items {
			sep(i)
			d.writeJSON(b, it, multi, inner)
		}
		closeWith(']', len(v.items))
	case 's':
		b.WriteString(quoteJSON(v.s))
	default:
		b.WriteString(v.s)
	}
}

func quoteJSON(s string) string {
	out, _ := jsontext.AppendQuote(nil, strings.ToValidUTF8(s, "\uFFFD"))
	return string(out)
}
