package workflow

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"sync"

	"go.yaml.in/yaml/v3"
)

// A big workflow file is mostly two long lists, its nodes and its edges,
// and parsing it is most of the time `skein run` spends before the run's
// first node. parseInPieces parses such a file on several cores: each
// long top-level block list is cut between its items into pieces, each
// piece is parsed as a document of its own, and the rest of the file (the
// lists' lines left blank) as another; the lists' items are then put back
// under their keys. Every piece keeps its lines where they are in the
// file (it is parsed behind as many empty lines as precede it), so every
// position is the file's.
//
// The pieces give the values the whole file gives, or parseInPieces
// declines and the file is parsed whole (FuzzYAMLDifferential checks both
// against each other): it cuts only a list whose key line is a plain key
// at column 0 with nothing after the colon, whose items start with "- "
// at one indentation, in a file whose lines all end with LF; and any
// problem in a piece (an alias of an anchor in another piece, a quote or
// a bracket left open where it was cut, an error of any kind) makes it
// decline, so that the whole file's parse reports the error as always.

// splitting says when and how finely parseInPieces cuts.
type splitting struct {
	min   int // the smallest file cut into pieces, in bytes
	piece int // the smallest piece, in bytes
	most  int // the most pieces a list is cut into
}

// bigFiles is how parseYAML cuts: files of 16 KiB or more (about 250
// nodes and their edges; below, the pieces' goroutines cost more than
// they save), pieces of at least 8 KiB, a list in as many pieces as the
// process has cores.
func bigFiles() splitting {
	return splitting{min: 16 << 10, piece: 8 << 10, most: runtime.GOMAXPROCS(0)}
}

// topList is a top-level key whose value is a block list, as the lines
// of the file show it.
type topList struct {
	key     string
	keyLine int   // the key's line
	start   int   // byte offset of the line after the key's: the list's lines begin
	end     int   // byte offset after its last line
	indent  int   // the items' indentation, in spaces
	items   []int // byte offset of each line that starts an item
	itemsAt []int // the line number of each
}

// piece is a run of a list's items parsed on its own.
type piece struct {
	list     int // index of the topList
	start    int // byte offsets in the file
	end      int
	line     int // line number of start
	v        *value
	count    int // values converted (yamlConv.count)
	expanded int // values produced by aliases
	ok       bool
}

// parseInPieces parses src as described above, or reports false.
func parseInPieces(src []byte, s splitting) (*value, bool) {
	if len(src) < s.min || s.most < 2 || bytes.IndexByte(src, '\r') >= 0 || hasUnicodeBreak(src) {
		return nil, false
	}
	lists, ok := topLists(src)
	if !ok {
		return nil, false
	}
	var pieces []*piece
	var cut []topList
	for _, l := range lists {
		if l.end-l.start < s.piece {
			continue // a short list stays in the rest of the file
		}
		n := min(s.most, (l.end-l.start)/s.piece)
		li := len(cut)
		cut = append(cut, l)
		// n pieces of about equal size, each starting at an item (the
		// first at the list's first line, comments before the item too).
		from, fromLine := l.start, l.keyLine+1
		for k := 1; k < n; k++ {
			target := l.start + (l.end-l.start)*k/n
			i := firstAtOrAfter(l.items, target)
			if i >= len(l.items) || l.items[i] <= from {
				continue
			}
			pieces = append(pieces, &piece{list: li, start: from, end: l.items[i], line: fromLine})
			from, fromLine = l.items[i], l.itemsAt[i]
		}
		pieces = append(pieces, &piece{list: li, start: from, end: l.end, line: fromLine})
	}
	if len(pieces) < 2 {
		return nil, false
	}

	// The file's line starts, for the scalars' styles (yamlConv.offset):
	// found once, read by every piece.
	starts := lineStarts(src)
	var wg sync.WaitGroup
	for _, p := range pieces {
		wg.Go(func() { p.parse(src, starts, cut[p.list]) })
	}
	rest, restCount, restExpanded, restOK := parseRest(src, starts, cut)
	wg.Wait()
	if !restOK {
		return nil, false
	}
	count, expanded := restCount, restExpanded
	items := make([][]*value, len(cut))
	first := make([]*value, len(cut))
	for _, p := range pieces {
		if !p.ok {
			return nil, false
		}
		count += p.count
		expanded += p.expanded
		if first[p.list] == nil {
			first[p.list] = p.v
		}
		items[p.list] = append(items[p.list], p.v.list...)
	}
	// The limits the whole file's parse enforces: near them, it decides.
	if count+len(pieces) > MaxValues || expanded > MaxAliasValues {
		return nil, false
	}
	for i, l := range cut {
		e := rest.find(l.key)
		if e < 0 {
			return nil, false
		}
		entry := &rest.keys[e]
		if entry.keyPos != (Pos{l.keyLine, 1}) || entry.val.kind != vNull || entry.val.pos != entry.keyPos || entry.merged {
			return nil, false
		}
		list := first[i]
		list.list = items[i]
		entry.val = list
	}
	return rest, true
}

// parse parses the piece: its lines behind as many empty ones as precede
// it in the file, one document holding a block list whose first item is
// at the piece's first item.
func (p *piece) parse(src []byte, starts []int, l topList) {
	text := make([]byte, 0, p.line-1+p.end-p.start)
	for range p.line - 1 {
		text = append(text, '\n')
	}
	text = append(text, src[p.start:p.end]...)
	n, ok := oneDocument(text)
	if !ok || n.Kind != yaml.SequenceNode || n.Style&yaml.FlowStyle != 0 || len(n.Content) == 0 {
		return
	}
	i := firstAtOrAfter(l.items, p.start)
	if i >= len(l.items) || n.Line != l.itemsAt[i] || n.Column != l.indent+1 {
		return
	}
	// The file's bytes for the scalars' styles: the positions are the file's.
	c := &yamlConv{src: src, lineStart: starts}
	// The list is a value of the file's top-level map: its items are
	// nested as deep as in the whole file.
	v, perr := c.conv(n, 1)
	if perr != nil || v.kind != vList {
		return
	}
	p.v, p.count, p.expanded, p.ok = v, c.count, c.expanded, true
}

// parseRest parses src with the lists' lines left empty: their keys then
// hold nothing, and every other value is where it was.
func parseRest(src []byte, starts []int, lists []topList) (*value, int, int, bool) {
	text := make([]byte, 0, len(src))
	at := 0
	for _, l := range lists {
		text = append(text, src[at:l.start]...)
		for range bytes.Count(src[l.start:l.end], []byte{'\n'}) {
			text = append(text, '\n')
		}
		at = l.end
	}
	text = append(text, src[at:]...)
	n, ok := oneDocument(text)
	if !ok || n.Kind != yaml.MappingNode || n.Style&yaml.FlowStyle != 0 {
		return nil, 0, 0, false
	}
	c := &yamlConv{src: src, lineStart: starts}
	v, perr := c.conv(n, 0)
	if perr != nil || v.kind != vMap {
		return nil, 0, 0, false
	}
	return v, c.count, c.expanded, true
}

// oneDocument parses text, which must hold one YAML document, and returns
// its root node.
func oneDocument(text []byte) (*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, false
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return doc.Content[0], true
}

// topLists finds the top-level keys of src whose values are block lists
// indented under them. ok is false when a line is indented with a tab,
// or a list's lines are not as parseInPieces needs them.
func topLists(src []byte) (lists []topList, ok bool) {
	var cur *topList
	indent := -1 // the items' indentation in cur; -1 before its first item
	line := 0
	for at := 0; at < len(src); {
		line++
		end := bytes.IndexByte(src[at:], '\n')
		next := len(src)
		if end >= 0 {
			end += at
			next = end + 1
		} else {
			end = len(src)
		}
		text := src[at:end]
		sp := 0
		for sp < len(text) && text[sp] == ' ' {
			sp++
		}
		body := text[sp:]
		switch {
		case len(body) > 0 && body[0] == '\t':
			return nil, false
		case sp == 0 && len(body) > 0 && body[0] != '#':
			// A line at column 0 ends the list before it and may start one.
			if cur != nil {
				if len(cur.items) > 0 {
					cur.end = at
					lists = append(lists, *cur)
				}
				cur = nil
			}
			if key, ok := listKey(body); ok {
				cur, indent = &topList{key: key, keyLine: line, start: next}, -1
			}
		case cur == nil || len(body) == 0 || body[0] == '#':
			// A blank or comment line, or one under a key that is not cut.
		case indent < 0:
			if !isItem(body) {
				cur = nil // not a block list under the key: left whole
				break
			}
			indent, cur.indent = sp, sp
			cur.items, cur.itemsAt = append(cur.items, at), append(cur.itemsAt, line)
		case sp == indent && isItem(body):
			cur.items, cur.itemsAt = append(cur.items, at), append(cur.itemsAt, line)
		case sp <= indent:
			return nil, false // less indented than the items: the whole parse says what it is
		}
		at = next
	}
	if cur != nil && len(cur.items) > 0 {
		cur.end = len(src)
		lists = append(lists, *cur)
	}
	return lists, true
}

// listKey reports whether line (at column 0) is a plain key with nothing
// after its colon but spaces and a comment, and returns the key.
func listKey(line []byte) (string, bool) {
	i := 0
	for i < len(line) && (line[i] >= 'a' && line[i] <= 'z' || line[i] >= 'A' && line[i] <= 'Z' || line[i] == '_' || i > 0 && (line[i] >= '0' && line[i] <= '9' || line[i] == '-')) {
		i++
	}
	if i == 0 || i >= len(line) || line[i] != ':' {
		return "", false
	}
	rest := bytes.TrimLeft(line[i+1:], " ")
	if len(rest) > 0 && (rest[0] != '#' || len(rest) == len(line[i+1:])) {
		return "", false // a value, or a '#' that is not a comment
	}
	return string(line[:i]), true
}

// isItem reports whether an indented line's text starts a block list item.
func isItem(body []byte) bool {
	return body[0] == '-' && (len(body) == 1 || body[1] == ' ')
}

// hasUnicodeBreak reports whether src holds a line break yaml/v3 counts
// that is not LF (NEL, LS, PS): the pieces count lines at LF only.
func hasUnicodeBreak(src []byte) bool {
	return bytes.Contains(src, []byte{0xC2, 0x85}) || bytes.Contains(src, []byte{0xE2, 0x80, 0xA8}) || bytes.Contains(src, []byte{0xE2, 0x80, 0xA9})
}

// firstAtOrAfter is the index of the first offset in offs (ascending)
// that is at least target.
func firstAtOrAfter(offs []int, target int) int {
	lo, hi := 0, len(offs)
	for lo < hi {
		m := (lo + hi) / 2
		if offs[m] < target {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
