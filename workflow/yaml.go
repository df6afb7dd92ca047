package workflow

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// parseError is a problem found while turning bytes into values.
type parseError struct {
	pos Pos
	msg string
}

func (e *parseError) Error() string { return e.msg }

// checkNesting refuses files whose nesting alone would make the YAML parser
// slow: flow collections nested deeper than MaxDepth, or block indentation
// so deep that no workflow needs it. It is a cheap pre-pass over the bytes.
func checkNesting(src []byte) *parseError {
	depth, line, col, lineStart := 0, 1, 0, true
	indent := 0
	var quote byte
	for i := 0; i < len(src); i++ {
		c := src[i]
		col++
		if c == '\n' {
			line, col, lineStart, indent = line+1, 0, true, 0
			if quote == '"' || quote == '\'' {
				continue
			}
			continue
		}
		if lineStart {
			if c == ' ' {
				indent++
				if indent > 4*MaxDepth {
					return &parseError{Pos{line, 1}, fmt.Sprintf("nesting is too deep (indentation over %d columns); flatten the structure", 4*MaxDepth)}
				}
				continue
			}
			lineStart = false
		}
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
				col++
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || src[i-1] == ' ' || src[i-1] == '\t'):
			for i < len(src) && src[i] != '\n' {
				i++
			}
			i--
		case c == '[' || c == '{':
			depth++
			if depth > MaxDepth {
				return &parseError{Pos{line, col}, fmt.Sprintf("nesting is deeper than %d levels", MaxDepth)}
			}
		case c == ']' || c == '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// parseYAML parses one YAML document into a value tree.
func parseYAML(src []byte) (*value, *parseError) {
	if perr := checkNesting(src); perr != nil {
		return nil, perr
	}
	if v, ok := parseYAMLFast(src); ok {
		return v, nil
	}
	return parseYAMLGoccy(src)
}

// parseYAMLGoccy parses one YAML document with go-yaml. It does not run
// checkNesting; parseYAML does that first.
func parseYAMLGoccy(src []byte) (*value, *parseError) {
	f, err := parser.ParseBytes(src, 0)
	if err != nil {
		return nil, yamlError(err)
	}
	var docs []*ast.DocumentNode
	for _, d := range f.Docs {
		if d.Body != nil {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		return nil, &parseError{Pos{1, 1}, "the file holds no workflow (it is empty)"}
	}
	if len(docs) > 1 {
		return nil, &parseError{tokPos(docs[1].Start), "the file holds several YAML documents; a workflow file holds one"}
	}
	c := &yamlConv{anchors: map[string]ast.Node{}}
	v, perr := c.conv(docs[0].Body, 0)
	if perr != nil {
		return nil, perr
	}
	return v, nil
}

func tokPos(t *token.Token) Pos {
	if t == nil || t.Position == nil {
		return Pos{}
	}
	return Pos{t.Position.Line, t.Position.Column}
}

func nodePos(n ast.Node) Pos {
	if n == nil {
		return Pos{}
	}
	return tokPos(n.GetToken())
}

// yamlError turns a go-yaml error into a positioned message.
func yamlError(err error) *parseError {
	type tokenError interface {
		GetToken() *token.Token
		GetMessage() string
	}
	if te, ok := err.(tokenError); ok {
		msg := te.GetMessage()
		if strings.Contains(msg, "already defined") {
			msg = "duplicate key: " + msg + "; remove one of them"
		}
		return &parseError{tokPos(te.GetToken()), "YAML: " + msg}
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return &parseError{Pos{1, 1}, "YAML: " + msg}
}

type yamlConv struct {
	anchors map[string]ast.Node
	count   int
	active  map[ast.Node]bool // aliases being expanded, to stop cycles
	// expanded counts values produced by expanding aliases; aliasAt is
	// the outermost alias being expanded.
	expanded int
	aliasAt  Pos
}

// MaxAliasValues caps the values aliases may expand to, so a "billion
// laughs" file is refused before it costs memory.
const MaxAliasValues = 100_000

func (c *yamlConv) conv(n ast.Node, depth int) (*value, *parseError) {
	c.count++
	if len(c.active) > 0 {
		c.expanded++
		if c.expanded > MaxAliasValues {
			return nil, &parseError{c.aliasAt, fmt.Sprintf("aliases expand to more than %d values (an alias bomb?); write the values out or use fewer nested aliases", MaxAliasValues)}
		}
	}
	if c.count > MaxValues {
		return nil, &parseError{nodePos(n), fmt.Sprintf("the file expands to more than %d values (too many aliases?)", MaxValues)}
	}
	if depth > MaxDepth {
		return nil, &parseError{nodePos(n), fmt.Sprintf("nesting is deeper than %d levels", MaxDepth)}
	}
	pos := nodePos(n)
	switch n := n.(type) {
	case nil:
		return &value{kind: vNull}, nil
	case *ast.NullNode:
		return &value{kind: vNull, pos: pos}, nil
	case *ast.BoolNode:
		return &value{kind: vBool, pos: pos, b: n.Value}, nil
	case *ast.IntegerNode:
		switch x := n.Value.(type) {
		case int64:
			return &value{kind: vInt, pos: pos, i: x}, nil
		case uint64:
			if x > math.MaxInt64 {
				return &value{kind: vFloat, pos: pos, f: float64(x)}, nil
			}
			return &value{kind: vInt, pos: pos, i: int64(x)}, nil
		}
		return &value{kind: vString, pos: pos, s: n.GetToken().Value}, nil
	case *ast.FloatNode:
		return &value{kind: vFloat, pos: pos, f: n.Value}, nil
	case *ast.InfinityNode:
		return &value{kind: vFloat, pos: pos, f: n.Value}, nil
	case *ast.NanNode:
		return &value{kind: vFloat, pos: pos, f: math.NaN()}, nil
	case *ast.StringNode:
		return &value{kind: vString, pos: pos, s: n.Value, style: stringStyle(n)}, nil
	case *ast.LiteralNode:
		s := ""
		if n.Value != nil {
			s = n.Value.Value
		}
		return &value{kind: vString, pos: pos, s: s}, nil
	case *ast.AnchorNode:
		name := ""
		if n.Name != nil {
			name = n.Name.GetToken().Value
		}
		c.anchors[name] = n.Value
		return c.conv(n.Value, depth)
	case *ast.AliasNode:
		name := ""
		if n.Value != nil {
			name = n.Value.GetToken().Value
		}
		target, ok := c.anchors[name]
		if !ok {
			return nil, &parseError{pos, fmt.Sprintf("YAML: alias *%s names no anchor defined before it", name)}
		}
		if c.active == nil {
			c.active = map[ast.Node]bool{}
		}
		if len(c.active) == 0 {
			c.aliasAt = pos
		}
		if c.active[target] {
			return nil, &parseError{pos, fmt.Sprintf("YAML: alias *%s refers to itself", name)}
		}
		c.active[target] = true
		v, err := c.conv(target, depth)
		delete(c.active, target)
		if err != nil {
			return nil, err
		}
		cp := *v
		cp.pos = pos
		return &cp, nil
	case *ast.TagNode:
		v, err := c.conv(n.Value, depth)
		if err != nil {
			return nil, err
		}
		return retag(n, v)
	case *ast.SequenceNode:
		v := &value{kind: vList, pos: pos, list: make([]*value, 0, len(n.Values))}
		for _, e := range n.Values {
			ev, err := c.conv(e, depth+1)
			if err != nil {
				return nil, err
			}
			if ev.pos.Line == 0 {
				ev.pos = nodePos(e)
			}
			v.list = append(v.list, ev)
		}
		return v, nil
	case *ast.MappingNode:
		v := &value{kind: vMap, pos: pos, keys: make([]mapEntry, 0, len(n.Values))}
		if len(n.Values) > 0 {
			v.pos = nodePos(n.Values[0].Key)
		}
		for _, mv := range n.Values {
			if err := c.entry(v, mv, depth); err != nil {
				return nil, err
			}
		}
		return v, nil
	case *ast.MappingValueNode:
		v := &value{kind: vMap, pos: nodePos(n.Key)}
		if err := c.entry(v, n, depth); err != nil {
			return nil, err
		}
		return v, nil
	case *ast.CommentGroupNode, *ast.CommentNode:
		return &value{kind: vNull, pos: pos}, nil
	}
	return nil, &parseError{pos, fmt.Sprintf("YAML: unsupported construct %s", n.Type())}
}

// entry adds one key/value pair to a map value, honouring merge keys.
func (c *yamlConv) entry(m *value, mv *ast.MappingValueNode, depth int) *parseError {
	if _, ok := mv.Key.(*ast.MergeKeyNode); ok {
		src, err := c.conv(mv.Value, depth+1)
		if err != nil {
			return err
		}
		var maps []*value
		switch src.kind {
		case vMap:
			maps = []*value{src}
		case vList:
			maps = src.list
		}
		for _, sm := range maps {
			if sm.kind != vMap {
				return &parseError{nodePos(mv.Value), "YAML: a merge key (<<) takes a map or a list of maps"}
			}
			for _, e := range sm.keys {
				if _, dup := m.get(e.key); !dup {
					m.keys = append(m.keys, e)
				}
			}
		}
		return nil
	}
	kv, err := c.conv(mv.Key, depth+1)
	if err != nil {
		return err
	}
	key, ok := kv.text()
	if !ok {
		return &parseError{nodePos(mv.Key), "YAML: map keys must be strings"}
	}
	if kv.kind == vNull {
		key = "null"
	}
	kpos := nodePos(mv.Key)
	for i := range m.keys {
		if m.keys[i].key == key {
			// Merged keys are overridden by explicit ones.
			val, err := c.conv(mv.Value, depth+1)
			if err != nil {
				return err
			}
			m.keys[i] = mapEntry{key: key, keyPos: kpos, val: fixPos(val, mv)}
			return nil
		}
	}
	val, err := c.conv(mv.Value, depth+1)
	if err != nil {
		return err
	}
	m.keys = append(m.keys, mapEntry{key: key, keyPos: kpos, val: fixPos(val, mv)})
	return nil
}

// fixPos gives null values (an empty value after "key:") the key's position.
func fixPos(v *value, mv *ast.MappingValueNode) *value {
	if v.pos.Line == 0 {
		v.pos = nodePos(mv.Key)
	}
	return v
}

func retag(n *ast.TagNode, v *value) (*value, *parseError) {
	tag := n.Start.Value
	switch tag {
	case "!!str":
		if s, ok := v.text(); ok {
			return &value{kind: vString, pos: v.pos, s: s}, nil
		}
	case "!!int":
		if s, ok := v.text(); ok {
			i, err := strconv.ParseInt(s, 0, 64)
			if err != nil {
				return nil, &parseError{v.pos, fmt.Sprintf("YAML: %q is not an integer", s)}
			}
			return &value{kind: vInt, pos: v.pos, i: i}, nil
		}
	case "!!float":
		if s, ok := v.text(); ok {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, &parseError{v.pos, fmt.Sprintf("YAML: %q is not a number", s)}
			}
			return &value{kind: vFloat, pos: v.pos, f: f}, nil
		}
	case "!!bool":
		if s, ok := v.text(); ok {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return nil, &parseError{v.pos, fmt.Sprintf("YAML: %q is not a boolean", s)}
			}
			return &value{kind: vBool, pos: v.pos, b: b}, nil
		}
	case "!!null":
		return &value{kind: vNull, pos: v.pos}, nil
	}
	return v, nil
}

// looksLikeJSON reports whether src starts (after white space) with "{".
func looksLikeJSON(src []byte) bool {
	t := bytes.TrimLeft(src, " \t\r\n\ufeff")
	return len(t) > 0 && t[0] == '{'
}

// stringStyle tells whether offsets in a scalar's value map one to one onto
// its source: one line, and nothing that would have been escaped.
func stringStyle(n *ast.StringNode) byte {
	if n.Token == nil {
		return 0
	}
	switch n.Token.Type {
	case token.DoubleQuoteType:
		return styleOf(n.Value, '"')
	case token.SingleQuoteType:
		return styleOf(n.Value, '\'')
	case token.StringType:
		return styleOf(n.Value, 'p')
	}
	return 0
}

// styleOf is the style of a one-line scalar s: q is the quote it was
// written with (a double or single quote) or 'p' for plain. It is 0 when
// offsets in s do not map onto the source.
func styleOf(s string, q byte) byte {
	if strings.ContainsAny(s, "\n\r") {
		return 0
	}
	switch q {
	case '"':
		if strings.ContainsAny(s, "\\\"\t") {
			return 0
		}
	case '\'':
		if strings.Contains(s, "'") {
			return 0
		}
	}
	return q
}
