package edit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"go.yaml.in/yaml/v3"
)

// A tnode is a value of the file with the byte span of its text: the
// library gives where each value starts (yaml/v3 its line and column,
// jsontext its byte offset); where it ends is worked out here from its
// style.
type tnode struct {
	kind  byte // 'm' map, 'l' list, 's' scalar
	start int  // first byte of the value (its anchor or tag, if any)
	end   int  // just past its last byte
	flow  bool // a {…} or […] collection (every JSON collection)
	col   int  // column of start, counted from 0 in characters
	// fixed is set for an anchored, aliased or tagged value: writing it
	// over would change what aliases elsewhere expand to, or its type.
	fixed   bool
	entries []*entry
	items   []*item
	// text is a scalar's value; null tells a null scalar, empty one
	// written as nothing at all.
	text        string
	null, empty bool
	y           *yaml.Node // the YAML node (nil in a JSON file)
}

// An entry is one key of a map and its value.
type entry struct {
	key          string
	kstart, kend int
	colon        int // offset of the ':' after the key
	val          *tnode
}

// An item is one element of a list; dash is the offset of its "- " in a
// block list, -1 in a flow list.
type item struct {
	dash int
	val  *tnode
}

func (n *tnode) get(key string) *entry {
	if n == nil || n.kind != 'm' {
		return nil
	}
	for _, e := range n.entries {
		if e.key == key {
			return e
		}
	}
	return nil
}

// doc is a parsed file.
type doc struct {
	src   []byte
	json  bool
	root  *tnode
	lines []int // byte offset of each line's start
	step  int   // indentation step of nested block collections
}

// errLayout is what the editor cannot rewrite in place.
var errLayout = errors.New("layout")

func parse(src []byte, name string) (*doc, error) {
	d := &doc{src: src, lines: lineStarts(src), step: 2}
	isJSON := strings.EqualFold(filepath.Ext(name), ".json")
	if isJSON || looksLikeJSON(src) {
		root, err := d.parseJSON()
		if err == nil {
			d.json, d.root = true, root
			d.step = d.jsonStep()
			return d, nil
		}
		if isJSON {
			return nil, err
		}
	}
	if err := d.parseYAML(); err != nil {
		return nil, err
	}
	return d, nil
}

func looksLikeJSON(src []byte) bool {
	t := bytes.TrimLeft(src, " \t\r\n\ufeff")
	return len(t) > 0 && t[0] == '{'
}

// lineStarts returns the byte offset of the start of each line.
func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, c := range src {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// lineOf returns the line (from 0) holding byte off.
func (d *doc) lineOf(off int) int {
	lo, hi := 0, len(d.lines)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if d.lines[mid] <= off {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// lineEnd returns the offset just past the newline of the line holding
// off (or the end of the file).
func (d *doc) lineEnd(off int) int {
	if i := bytes.IndexByte(d.src[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(d.src)
}

// atLineStart reports whether only spaces come before off on its line.
func (d *doc) atLineStart(off int) bool {
	for i := d.lines[d.lineOf(off)]; i < off; i++ {
		if d.src[i] != ' ' && d.src[i] != '\t' {
			return false
		}
	}
	return true
}

// indentOf returns the white space that starts the line holding off.
func (d *doc) indentOf(off int) string {
	s := d.lines[d.lineOf(off)]
	e := s
	for e < len(d.src) && (d.src[e] == ' ' || d.src[e] == '\t') {
		e++
	}
	return string(d.src[s:e])
}

// --- YAML ---

func (d *doc) parseYAML() error {
	var y yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(d.src))
	if err := dec.Decode(&y); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the file holds no workflow (it is empty)")
		}
		return fmt.Errorf("the file does not parse: %w", err)
	}
	if y.Kind != yaml.DocumentNode || len(y.Content) == 0 {
		return errors.New("the file holds no workflow (it is empty)")
	}
	root, err := d.yamlNode(y.Content[0], -1, false)
	if err != nil {
		return err
	}
	d.root = root
	d.step = d.yamlStep(root)
	return nil
}

// offset converts yaml/v3's line and column (from 1, in characters).
func (d *doc) offset(line, col int) (int, error) {
	if line < 1 || line > len(d.lines) {
		return 0, errLayout
	}
	off := d.lines[line-1]
	if line == 1 && bytes.HasPrefix(d.src, []byte("\ufeff")) {
		off += 3
	}
	for ; col > 1; col-- {
		if off >= len(d.src) || d.src[off] == '\n' {
			return 0, errLayout
		}
		_, size := utf8.DecodeRune(d.src[off:])
		off += size
	}
	return off, nil
}

// yamlNode builds the tree of n; owner is the column of the key or dash
// that holds it (a block scalar's lines are indented past it), inFlow
// tells a value inside a flow collection.
func (d *doc) yamlNode(n *yaml.Node, owner int, inFlow bool) (*tnode, error) {
	start, err := d.offset(n.Line, n.Column)
	if err != nil {
		return nil, err
	}
	t := &tnode{start: start, col: n.Column - 1, y: n}
	t.fixed = n.Anchor != "" || n.Kind == yaml.AliasNode || n.Style&yaml.TaggedStyle != 0
	body := start
	if t.fixed && n.Kind != yaml.AliasNode {
		body = d.skipProps(start)
	}
	switch n.Kind {
	case yaml.AliasNode:
		t.kind = 's'
		t.end = start + 1 + len(n.Value)
	case yaml.ScalarNode:
		t.kind, t.text = 's', n.Value
		t.null = n.ShortTag() == "!!null"
		t.empty = t.null && n.Value == "" && n.Style == 0 && !t.fixed
		if t.empty {
			t.end = start
			break
		}
		t.end, err = d.scalarEnd(n, body, owner, inFlow)
	case yaml.MappingNode:
		t.kind = 'm'
		t.flow = n.Style&yaml.FlowStyle != 0
		err = d.yamlMap(t, n, inFlow)
	case yaml.SequenceNode:
		t.kind = 'l'
		t.flow = n.Style&yaml.FlowStyle != 0
		err = d.yamlList(t, n, body, inFlow)
	default:
		err = errLayout
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// skipProps skips an anchor (&a) and a tag (!t) written before a value.
func (d *doc) skipProps(off int) int {
	for off < len(d.src) && (d.src[off] == '&' || d.src[off] == '!') {
		for off < len(d.src) && !isSpace(d.src[off]) {
			off++
		}
		off = d.skipBlank(off)
	}
	return off
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipBlank skips white space, line breaks and comments.
func (d *doc) skipBlank(off int) int {
	for off < len(d.src) {
		switch c := d.src[off]; {
		case isSpace(c):
			off++
		case c == '#':
			off = d.lineEnd(off)
		default:
			return off
		}
	}
	return off
}

func (d *doc) yamlMap(t *tnode, n *yaml.Node, inFlow bool) error {
	flow := inFlow || t.flow
	var last int
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if kn.Kind != yaml.ScalarNode {
			return errLayout // a complex key ("? ")
		}
		k, err := d.yamlNode(kn, -1, flow)
		if err != nil {
			return err
		}
		colon := d.skipBlankLine(k.end)
		if colon >= len(d.src) || d.src[colon] != ':' {
			return errLayout
		}
		v, err := d.yamlNode(vn, kn.Column-1, flow)
		if err != nil {
			return err
		}
		if v.empty {
			v.start, v.end = colon+1, colon+1
		}
		t.entries = append(t.entries, &entry{key: kn.Value, kstart: k.start, kend: k.end, colon: colon, val: v})
		last = max(v.end, colon+1)
	}
	if t.flow {
		if len(t.entries) == 0 {
			last = t.start + 1
		}
		return d.closeFlow(t, last, '}')
	}
	t.end = last
	return nil
}

// skipBlankLine skips spaces and tabs.
func (d *doc) skipBlankLine(off int) int {
	for off < len(d.src) && (d.src[off] == ' ' || d.src[off] == '\t') {
		off++
	}
	return off
}

func (d *doc) yamlList(t *tnode, n *yaml.Node, body int, inFlow bool) error {
	flow := inFlow || t.flow
	last := body + 1
	for _, c := range n.Content {
		dash := -1
		owner := -1
		if !t.flow {
			// yaml/v3 puts a block list at its first dash and each element
			// at its own text: the element's dash is the last one before it.
			start, err := d.offset(c.Line, c.Column)
			if err != nil {
				return err
			}
			dash = d.dashBefore(start)
			if dash < 0 {
				return errLayout
			}
			owner = d.colOf(dash)
		}
		v, err := d.yamlNode(c, owner, flow)
		if err != nil {
			return err
		}
		if v.empty && dash >= 0 {
			v.start, v.end = dash+1, dash+1
		}
		t.items = append(t.items, &item{dash: dash, val: v})
		last = max(v.end, dash+1)
	}
	if t.flow {
		return d.closeFlow(t, last, ']')
	}
	t.end = last
	return nil
}

// dashBefore finds the "-" of the block list element starting at off,
// across white space and line breaks; -1 when something else comes first
// (a comment, say).
func (d *doc) dashBefore(off int) int {
	i := off - 1
	for i >= 0 && isSpace(d.src[i]) {
		i--
	}
	if i >= 0 && d.src[i] == '-' && (i+1 == off || isSpace(d.src[i+1])) {
		return i
	}
	return -1
}

// colOf is the column of off, counted from 0 in characters.
func (d *doc) colOf(off int) int {
	return utf8.RuneCount(d.src[d.lines[d.lineOf(off)]:off])
}

// closeFlow finds the bracket that closes a flow collection after its last
// element.
func (d *doc) closeFlow(t *tnode, from int, closer byte) error {
	for off := from; off < len(d.src); {
		off = d.skipBlank(off)
		if off < len(d.src) && d.src[off] == ',' {
			off++
			continue
		}
		if off < len(d.src) && d.src[off] == closer {
			t.end = off + 1
			return nil
		}
		break
	}
	return errLayout
}

// scalarEnd finds where a scalar's text ends.
func (d *doc) scalarEnd(n *yaml.Node, off, owner int, inFlow bool) (int, error) {
	src := d.src
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		for i := off + 1; i < len(src); i++ {
			switch src[i] {
			case '\\':
				i++
			case '"':
				return i + 1, nil
			}
		}
	case n.Style&yaml.SingleQuotedStyle != 0:
		for i := off + 1; i < len(src); i++ {
			if src[i] == '\'' {
				if i+1 < len(src) && src[i+1] == '\'' {
					i++
					continue
				}
				return i + 1, nil
			}
		}
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		// The header line, then every line that is blank or indented past
		// the owner; the value ends with its last line that is not blank.
		end := d.lineEnd(off)
		last := end
		for l := d.lineOf(off) + 1; l < len(d.lines); l++ {
			s := d.lines[l]
			if s >= len(src) {
				break
			}
			e := d.lineEnd(s)
			line := src[s:e]
			text := bytes.TrimLeft(line, " ")
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if len(line)-len(text) <= owner {
				break
			}
			last = e
		}
		return trimLineBreak(src, last), nil
	default:
		return d.plainEnd(n, off, owner, inFlow)
	}
	return 0, errLayout
}

func trimLineBreak(src []byte, end int) int {
	for end > 0 && (src[end-1] == '\n' || src[end-1] == '\r') {
		end--
	}
	return end
}

// plainEnd finds the end of a plain (unquoted) scalar: at a comment, a
// ": ", the end of its line (block) or a flow indicator (flow); a block
// scalar folded over several lines takes the lines indented past its owner.
func (d *doc) plainEnd(n *yaml.Node, off, owner int, inFlow bool) (int, error) {
	src := d.src
	scan := func(i int) int {
		for ; i < len(src); i++ {
			c := src[i]
			if c == '\n' || c == '\r' && !inFlow {
				break
			}
			if c == '#' && i > off && isSpace(src[i-1]) {
				break
			}
			if c == ':' && (i+1 == len(src) || isSpace(src[i+1]) || inFlow && strings.IndexByte(",[]{}", src[i+1]) >= 0) {
				break
			}
			if inFlow && strings.IndexByte(",[]{}", c) >= 0 {
				break
			}
			if c == '\n' {
				break
			}
		}
		for i > off && isSpace(src[i-1]) {
			i--
		}
		return i
	}
	end := scan(off)
	if string(src[off:end]) == n.Value {
		return end, nil
	}
	if inFlow {
		// Across lines: scan on past line breaks.
		i := end
		for i < len(src) && isSpace(src[i]) {
			i++
		}
		for i < len(src) && i > end {
			next := scan(i)
			if next == i {
				break
			}
			end = next
			i = end
			for i < len(src) && isSpace(src[i]) {
				i++
			}
		}
		return end, nil
	}
	for l := d.lineOf(off) + 1; l < len(d.lines); l++ {
		s := d.lines[l]
		if s >= len(src) {
			break
		}
		line := src[s:d.lineEnd(s)]
		text := bytes.TrimLeft(line, " \t")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if len(line)-len(text) <= owner || text[0] == '#' {
			break
		}
		end = scan(s + len(line) - len(text))
	}
	return end, nil
}

// yamlStep is the indentation of the first nested block map of the file.
func (d *doc) yamlStep(root *tnode) int {
	var find func(t *tnode) int
	find = func(t *tnode) int {
		if t.flow {
			return 0
		}
		if t.kind == 'l' {
			for _, it := range t.items {
				if s := find(it.val); s > 0 {
					return s
				}
			}
			return 0
		}
		if t.kind != 'm' {
			return 0
		}
		for _, e := range t.entries {
			if v := e.val; v.kind == 'm' && !v.flow && len(v.entries) > 0 && v.col > t.col {
				return v.col - t.col
			}
		}
		for _, e := range t.entries {
			if s := find(e.val); s > 0 {
				return s
			}
		}
		return 0
	}
	if s := find(root); s > 0 {
		return s
	}
	return 2
}

// --- JSON ---

func (d *doc) parseJSON() (*tnode, error) {
	base := 0
	if bytes.HasPrefix(d.src, []byte("\ufeff")) {
		base = 3
	}
	dec := jsontext.NewDecoder(bytes.NewReader(d.src[base:]), jsontext.AllowDuplicateNames(true))
	p := &jsonParser{d: d, dec: dec, base: base}
	t, err := p.value()
	if err != nil {
		return nil, fmt.Errorf("the file does not parse as JSON: %w", err)
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, errors.New("the file does not parse as JSON: text after the end of the document")
	}
	return t, nil
}

type jsonParser struct {
	d    *doc
	dec  *jsontext.Decoder
	base int
}

// next is the offset of the next token: past white space, a comma or a
// colon.
func (p *jsonParser) next() int {
	off := p.base + int(p.dec.InputOffset())
	for off < len(p.d.src) && strings.IndexByte(" \t\r\n,:", p.d.src[off]) >= 0 {
		off++
	}
	return off
}

func (p *jsonParser) value() (*tnode, error) {
	start := p.next()
	tok, err := p.dec.ReadToken()
	if err != nil {
		return nil, err
	}
	t := &tnode{start: start, flow: true, col: p.d.colOf(start)}
	switch tok.Kind() {
	case '{':
		t.kind = 'm'
		for p.dec.PeekKind() != '}' {
			kstart := p.next()
			kt, err := p.dec.ReadToken()
			if err != nil {
				return nil, err
			}
			key := kt.String() // before the next read voids kt
			kend := p.base + int(p.dec.InputOffset())
			colon := bytes.IndexByte(p.d.src[kend:], ':')
			if colon < 0 {
				return nil, errLayout
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			t.entries = append(t.entries, &entry{key: key, kstart: kstart, kend: kend, colon: kend + colon, val: v})
		}
	case '[':
		t.kind = 'l'
		for p.dec.PeekKind() != ']' {
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			t.items = append(t.items, &item{dash: -1, val: v})
		}
	default:
		t.kind = 's'
		t.end = p.base + int(p.dec.InputOffset())
		t.null = tok.Kind() == 'n'
		t.text = tok.String()
		return t, nil
	}
	if _, err := p.dec.ReadToken(); err != nil { // the closing bracket
		return nil, err
	}
	t.end = p.base + int(p.dec.InputOffset())
	return t, nil
}

// jsonStep is the indentation of the first key of a multi-line root.
func (d *doc) jsonStep() int {
	if len(d.root.entries) > 0 {
		e := d.root.entries[0]
		if d.lineOf(e.kstart) != d.lineOf(d.root.start) {
			if n := d.colOf(e.kstart) - d.root.col; n > 0 {
				return n
			}
		}
	}
	return 2
}
