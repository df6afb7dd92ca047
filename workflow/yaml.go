package workflow

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// parseError is a problem found while turning bytes into values.
type parseError struct {
	pos Pos
	msg string
}

func (e *parseError) Error() string { return e.msg }

// preScan refuses, with a cheap pass over the bytes and before any parse,
// files whose nesting or aliases alone would make parsing costly:
//   - flow collections nested deeper than MaxDepth;
//   - block indentation (counting "- " and "? " indicators, which nest
//     without indenting) so deep that no workflow needs it;
//   - more alias tokens ("*name") than MaxAliasValues. Each alias expands to
//     at least one value, so such a file would fail the expansion limit
//     anyway; refusing it here saves parsing it. Aliases are counted even
//     inside quotes, so an unbalanced quote cannot hide them; the count is
//     an upper bound and only matters to files no one writes by hand.
func preScan(src []byte) *parseError {
	depth, line, col, lineStart := 0, 1, 0, true
	indent, aliases := 0, 0
	var quote byte
	for i := 0; i < len(src); i++ {
		c := src[i]
		col++
		if c == '\n' || c == '\r' && (i+1 == len(src) || src[i+1] != '\n') {
			line, col, lineStart, indent = line+1, 0, true, 0
			continue
		}
		if c == '*' && i+1 < len(src) && isAliasStart(src, i) {
			aliases++
			if aliases > MaxAliasValues {
				return &parseError{Pos{line, col}, fmt.Sprintf("the file holds more than %d aliases (an alias bomb?); write the values out or use fewer aliases", MaxAliasValues)}
			}
		}
		if lineStart {
			if c == ' ' || ((c == '-' || c == '?') && i+1 < len(src) && src[i+1] == ' ') {
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
			for i+1 < len(src) && src[i+1] != '\n' {
				i++
			}
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

// isAliasStart reports whether the '*' at src[i] may start an alias: at
// the start of a token and followed by a character of a name.
func isAliasStart(src []byte, i int) bool {
	if i > 0 {
		switch src[i-1] {
		case ' ', '\t', '\n', '\r', '[', '{', ',', ':', '-', '?':
		default:
			return false
		}
	}
	if i+1 >= len(src) {
		return false
	}
	switch src[i+1] {
	case ' ', '\t', '\n', '\r', ',', '[', ']', '{', '}':
		return false
	}
	return true
}

// parseYAML parses one YAML document into a value tree with go.yaml.in/yaml/v3
// (its Node API keeps the line and column of every value). preScan
// runs first, so hostile nesting costs a byte scan and no parse. A big
// file's long lists are parsed in pieces on several cores
// (parseInPieces), with the values and positions of a whole parse.
func parseYAML(src []byte) (*value, *parseError) {
	if perr := preScan(src); perr != nil {
		return nil, perr
	}
	if v, ok := parseInPieces(src, bigFiles()); ok {
		return v, nil
	}
	return parseWhole(src)
}

// parseWhole parses src, which preScan passed, in one piece.
func parseWhole(src []byte) (*value, *parseError) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &parseError{Pos{1, 1}, "the file holds no workflow (it is empty)"}
		}
		return nil, yamlError(src, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &parseError{Pos{next.Line, next.Column}, "the file holds several YAML documents; a workflow file holds one"}
	case !errors.Is(err, io.EOF):
		return nil, yamlError(src, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &parseError{Pos{1, 1}, "the file holds no workflow (it is empty)"}
	}
	c := &yamlConv{src: src}
	return c.conv(doc.Content[0], 0)
}

// posOf is the line and column (in characters) of byte off of src.
func posOf(src []byte, off int) Pos {
	starts := lineStarts(src)
	line := sort.SearchInts(starts, off+1) // starts[line-1] <= off
	return Pos{line, utf8.RuneCount(src[starts[line-1]:off]) + 1}
}

// lineStarts returns the byte offset of the start of each line, breaking
// lines where yaml/v3 does: at LF, CRLF, a lone CR, NEL, LS and PS.
func lineStarts(src []byte) []int {
	starts := append(make([]int, 0, bytes.Count(src, []byte{'\n'})+1), 0)
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case c == '\n':
			starts = append(starts, i+1)
		case c == '\r':
			if i+1 < len(src) && src[i+1] == '\n' {
				i++
			}
			starts = append(starts, i+1)
		case c == 0xC2 && i+1 < len(src) && src[i+1] == 0x85: // NEL
			i++
			starts = append(starts, i+1)
		case c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && (src[i+2] == 0xA8 || src[i+2] == 0xA9): // LS, PS
			i += 2
			starts = append(starts, i+1)
		}
	}
	return starts
}

// lineIndent returns the bytes of line's indentation (spaces and tabs);
// ok is false when src has no such line.
func lineIndent(src []byte, line int) (indent []byte, start int, ok bool) {
	starts := lineStarts(src)
	if line < 1 || line > len(starts) {
		return nil, 0, false
	}
	start = starts[line-1]
	end := start
	for end < len(src) && (src[end] == ' ' || src[end] == '\t') {
		end++
	}
	return src[start:end], start, true
}

// firstCol is the column of the first character of line that is not a
// space or a tab, or 1.
func firstCol(src []byte, line int) int {
	indent, start, ok := lineIndent(src, line)
	if !ok || start == 0 && bytes.HasPrefix(src, []byte("\ufeff")) {
		return 1
	}
	return len(indent) + 1
}

// lineHasTabIndent reports whether line's indentation holds a tab.
func lineHasTabIndent(src []byte, line int) bool {
	indent, _, _ := lineIndent(src, line)
	return bytes.IndexByte(indent, '\t') >= 0
}

// MaxAliasValues caps the values aliases may expand to, so a "billion
// laughs" file is refused after a bounded amount of work, before it costs
// memory.
const MaxAliasValues = 100_000

// yamlConv turns a yaml/v3 node tree into values. Aliases are expanded
// (the rest of the decoder sees plain values), and every value an
// expansion produces is counted against MaxAliasValues, so the work is
// linear in the file plus at most MaxAliasValues.
type yamlConv struct {
	src []byte
	// lineStart caches the byte offset of each line, built on first use.
	lineStart []int
	count     int
	active    map[*yaml.Node]bool // aliases being expanded, to stop cycles
	// expanded counts values produced by expanding aliases; aliasAt is
	// the outermost alias being expanded.
	expanded int
	aliasAt  Pos
	// slab hands out values from blocks, one allocation for many; lists
	// and entries do the same for the elements of lists and maps.
	slab    []value
	lists   []*value
	entries []mapEntry
}

// slabCap is the most elements a list or map takes from a shared block;
// a bigger one gets its own.
const slabCap = 64

// list returns an empty slice with room for n elements.
func (c *yamlConv) list(n int) []*value {
	if n == 0 {
		return nil // an empty list is nil, whatever is left of the block
	}
	if n > slabCap {
		return make([]*value, 0, n)
	}
	if len(c.lists) < n {
		c.lists = make([]*value, 1024)
	}
	s := c.lists[:0:n]
	c.lists = c.lists[n:]
	return s
}

// mapEntries returns an empty slice with room for n entries. A map that
// grows past n (through a merge key) moves to a slice of its own.
func (c *yamlConv) mapEntries(n int) []mapEntry {
	if n == 0 {
		return nil // as list
	}
	if n > slabCap {
		return make([]mapEntry, 0, n)
	}
	if len(c.entries) < n {
		c.entries = make([]mapEntry, 512)
	}
	s := c.entries[:0:n]
	c.entries = c.entries[n:]
	return s
}

// val returns a pointer to a copy of v, allocated from the slab.
func (c *yamlConv) val(v value) *value {
	if len(c.slab) == 0 {
		c.slab = make([]value, 256)
	}
	p := &c.slab[0]
	*p = v
	c.slab = c.slab[1:]
	return p
}

func (c *yamlConv) conv(n *yaml.Node, depth int) (*value, *parseError) {
	pos := Pos{n.Line, n.Column}
	c.count++
	if len(c.active) > 0 {
		c.expanded++
		if c.expanded > MaxAliasValues {
			return nil, &parseError{c.aliasAt, fmt.Sprintf("aliases expand to more than %d values (an alias bomb?); write the values out or use fewer nested aliases", MaxAliasValues)}
		}
	}
	if c.count > MaxValues {
		return nil, &parseError{pos, fmt.Sprintf("the file expands to more than %d values (too many aliases?)", MaxValues)}
	}
	if depth > MaxDepth {
		return nil, &parseError{pos, fmt.Sprintf("nesting is deeper than %d levels", MaxDepth)}
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return c.scalar(n, pos)
	case yaml.AliasNode:
		return c.alias(n, pos, depth)
	case yaml.SequenceNode:
		v := c.val(value{kind: vList, pos: pos, list: c.list(len(n.Content))})
		for _, e := range n.Content {
			ev, err := c.conv(e, depth+1)
			if err != nil {
				return nil, err
			}
			v.list = append(v.list, ev)
		}
		return v, nil
	case yaml.MappingNode:
		v := c.val(value{kind: vMap, pos: pos, keys: c.mapEntries(len(n.Content) / 2)})
		if len(n.Content) > 0 {
			v.pos = Pos{n.Content[0].Line, n.Content[0].Column}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := c.entry(v, n.Content[i], n.Content[i+1], depth); err != nil {
				return nil, err
			}
		}
		return v, nil
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return c.val(value{kind: vNull, pos: pos}), nil
		}
		return c.conv(n.Content[0], depth)
	}
	return nil, &parseError{pos, "YAML: unsupported construct"}
}

func (c *yamlConv) alias(n *yaml.Node, pos Pos, depth int) (*value, *parseError) {
	target := n.Alias
	if target == nil {
		return nil, &parseError{pos, fmt.Sprintf("YAML: alias *%s names no anchor defined before it", n.Value)}
	}
	if c.active == nil {
		c.active = map[*yaml.Node]bool{}
	}
	if len(c.active) == 0 {
		c.aliasAt = pos
	}
	if c.active[target] {
		return nil, &parseError{pos, fmt.Sprintf("YAML: alias *%s refers to itself", n.Value)}
	}
	c.active[target] = true
	v, err := c.conv(target, depth)
	delete(c.active, target)
	if err != nil {
		return nil, err
	}
	cp := c.val(*v)
	cp.pos = pos
	cp.style = 0 // the text is the anchor's, not written here
	return cp, nil
}

// scalar resolves a scalar by its tag: the implicit one of a plain scalar
// (YAML 1.2 core schema as yaml/v3 resolves it) or an explicit !!tag.
func (c *yamlConv) scalar(n *yaml.Node, pos Pos) (*value, *parseError) {
	tag := n.ShortTag()
	switch tag {
	case "!!null":
		return c.val(value{kind: vNull, pos: pos}), nil
	case "!!bool":
		b, err := strconv.ParseBool(n.Value)
		if err != nil {
			return nil, &parseError{pos, fmt.Sprintf("YAML: %q is not a boolean", n.Value)}
		}
		return c.val(value{kind: vBool, pos: pos, b: b}), nil
	case "!!int", "!!float":
		var x any
		if err := n.Decode(&x); err != nil {
			what := "an integer"
			if tag == "!!float" {
				what = "a number"
			}
			return nil, &parseError{pos, fmt.Sprintf("YAML: %q is not %s", n.Value, what)}
		}
		switch x := x.(type) {
		case int:
			return c.val(value{kind: vInt, pos: pos, i: int64(x)}), nil
		case int64:
			return c.val(value{kind: vInt, pos: pos, i: x}), nil
		case uint64:
			if x > math.MaxInt64 {
				return c.val(value{kind: vFloat, pos: pos, f: float64(x)}), nil
			}
			return c.val(value{kind: vInt, pos: pos, i: int64(x)}), nil
		case float64:
			if math.IsInf(x, 0) || math.IsNaN(x) {
				return nil, &parseError{pos, "YAML: " + NonFinite(n.Value)}
			}
			return c.val(value{kind: vFloat, pos: pos, f: x}), nil
		}
	}
	// Strings, and what Skein reads as text: timestamps, binary, custom tags.
	return c.val(value{kind: vString, pos: pos, s: n.Value, style: c.style(n)}), nil
}

// NonFinite is the problem of a number written as text that is infinite
// or not a number (YAML's .inf, .nan): a run records its values as JSON,
// which has neither. The test-file loader says it in the same words.
func NonFinite(text string) string {
	return fmt.Sprintf("%s is not a number a run can record (JSON has no infinity or NaN); write a finite number, or quote it to mean the text", text)
}

// style tells whether byte offsets in a string scalar map one to one onto
// its source (see value.style): the source at the scalar's position must
// spell its value exactly, on one line, closed by its quote if quoted.
func (c *yamlConv) style(n *yaml.Node) byte {
	var q byte
	switch n.Style {
	case 0, yaml.FlowStyle:
		q = 'p'
	case yaml.DoubleQuotedStyle:
		q = '"'
	case yaml.SingleQuotedStyle:
		q = '\''
	default:
		return 0
	}
	if strings.ContainsAny(n.Value, "\n\r") {
		return 0
	}
	off, ok := c.offset(n.Line, n.Column)
	if !ok {
		return 0
	}
	if q != 'p' {
		if off >= len(c.src) || c.src[off] != q {
			return 0
		}
		off++
	}
	end := off + len(n.Value)
	if end > len(c.src) || string(c.src[off:end]) != n.Value {
		return 0
	}
	if q != 'p' && (end >= len(c.src) || c.src[end] != q) {
		return 0
	}
	return q
}

// offset converts a line and a column (in characters) to a byte offset.
func (c *yamlConv) offset(line, col int) (int, bool) {
	if c.lineStart == nil {
		c.lineStart = lineStarts(c.src)
	}
	if line < 1 || line > len(c.lineStart) || col < 1 {
		return 0, false
	}
	off := c.lineStart[line-1]
	if line == 1 && bytes.HasPrefix(c.src, []byte("\ufeff")) {
		off += 3
	}
	for ; col > 1; col-- {
		if off >= len(c.src) || c.src[off] == '\n' || c.src[off] == '\r' {
			return 0, false
		}
		_, size := utf8.DecodeRune(c.src[off:])
		off += size
	}
	return off, true
}

// entry adds one key/value pair to a map value, honouring merge keys and
// refusing duplicate keys.
func (c *yamlConv) entry(m *value, kn, vn *yaml.Node, depth int) *parseError {
	if kn.Kind == yaml.ScalarNode && kn.ShortTag() == "!!merge" {
		src, err := c.conv(vn, depth+1)
		if err != nil {
			return err
		}
		var maps []*value
		switch src.kind {
		case vMap:
			maps = []*value{src}
		case vList:
			maps = src.list
		default:
			return &parseError{Pos{vn.Line, vn.Column}, "YAML: a merge key (<<) takes a map or a list of maps"}
		}
		for _, sm := range maps {
			if sm.kind != vMap {
				return &parseError{Pos{vn.Line, vn.Column}, "YAML: a merge key (<<) takes a map or a list of maps"}
			}
			for _, e := range sm.keys {
				if m.find(e.key) < 0 {
					e.merged = true
					m.add(e)
				}
			}
		}
		return nil
	}
	kv, err := c.conv(kn, depth+1)
	if err != nil {
		return err
	}
	key, ok := kv.text()
	kpos := Pos{kn.Line, kn.Column}
	if kv.kind == vNull {
		// yaml/v3 itself disagrees with itself on null keys (it keeps one
		// written in place, drops one it merges, and takes an empty one
		// for ""): a workflow file has no use for them.
		return &parseError{kpos, `YAML: a map key is null (~, null or nothing); write the key's name, quoted if it is "null"`}
	}
	if !ok {
		if kn.Kind == yaml.MappingNode && kn.Style&yaml.FlowStyle != 0 {
			// text: {{ x }} is a map whose key is the map {x}.
			if c.lineStart == nil {
				c.lineStart = lineStarts(c.src)
			}
			if hint, ok := templateHint(string(lineText(c.src, c.lineStart, kn.Line))); ok {
				return &parseError{Pos{kn.Line, max(kn.Column-1, 1)}, "YAML: " + hint}
			}
		}
		return &parseError{kpos, "YAML: map keys must be strings"}
	}
	val, err := c.conv(vn, depth+1)
	if err != nil {
		return err
	}
	if val.kind == vNull && vn.Kind == yaml.ScalarNode && vn.Value == "" && vn.Style == 0 {
		// Nothing written after "key:": the key's position.
		val.pos = kpos
	}
	if i := m.find(key); i >= 0 {
		if m.keys[i].merged {
			// Merged keys are overridden by explicit ones.
			m.keys[i] = mapEntry{key: key, keyPos: kpos, val: val}
			return nil
		}
		prev := m.keys[i].keyPos
		return &parseError{kpos, fmt.Sprintf("YAML: duplicate key: mapping key %q already defined at [%d:%d]; remove one of them", key, prev.Line, prev.Col)}
	}
	m.add(mapEntry{key: key, keyPos: kpos, val: val})
	return nil
}

// looksLikeJSON reports whether src starts (after white space) with "{".
func looksLikeJSON(src []byte) bool {
	t := bytes.TrimLeft(src, " \t\r\n\ufeff")
	return len(t) > 0 && t[0] == '{'
}
