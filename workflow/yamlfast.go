package workflow

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/token"
)

// parseYAMLFast parses the common subset of YAML that workflow files are
// written in, much faster than go-yaml. It gives up (ok=false) on anything
// outside that subset, or anything it is unsure of; parseYAML then falls
// back to go-yaml, which also reports every error. When it succeeds, the
// tree is the one parseYAMLGoccy would build (FuzzYAMLFast checks this).
func parseYAMLFast(src []byte) (v *value, ok bool) {
	p := &fastParser{src: src}
	if !p.split() {
		return nil, false
	}
	li := p.next(0)
	if li < 0 {
		return nil, false
	}
	l := p.lines[li]
	if l.indent != 0 {
		return nil, false
	}
	if p.isSeqAt(li, l.start) {
		v, ok = p.seq(li, l.start, 0)
	} else if _, _, isKey, kok := p.key(li, l.start); !kok {
		return nil, false
	} else if isKey {
		v, ok = p.mapping(li, l.start, 0)
	} else if c := src[l.start]; c == '[' || c == '{' {
		v, ok = p.inline(li, l.start, -1, 0)
	} else {
		return nil, false
	}
	if !ok || p.next(p.li) >= 0 {
		return nil, false
	}
	return v, true
}

type fastLine struct {
	start, end int // byte offsets of the line, without its '\n'
	indent     int // leading spaces
	blank      bool
	num        int // 1-based line number
}

type fastParser struct {
	src   []byte
	lines []fastLine
	li    int // first line not consumed by the last parsed node
	count int
}

// split cuts src into lines and refuses bytes and markers outside the subset.
func (p *fastParser) split() bool {
	src := p.src
	if !utf8.Valid(src) {
		return false
	}
	for _, bad := range []string{"\u0085", "\u2028", "\u2029", "\ufeff"} {
		if bytes.Contains(src, []byte(bad)) {
			return false
		}
	}
	p.lines = make([]fastLine, 0, bytes.Count(src, []byte{'\n'})+1)
	seenContent := false
	for start, num := 0, 1; start < len(src); num++ {
		end := start
		for end < len(src) && src[end] != '\n' {
			c := src[end]
			if c < 0x20 || c == 0x7f {
				return false
			}
			end++
		}
		i := start
		for i < end && src[i] == ' ' {
			i++
		}
		l := fastLine{start: start, end: end, indent: i - start, num: num}
		l.blank = i == end || src[i] == '#'
		if l.indent == 0 && !l.blank {
			c := src[start]
			if c == '%' {
				return false
			}
			if end-start >= 3 && (c == '-' || c == '.') && src[start+1] == c && src[start+2] == c {
				if c == '.' || seenContent || end-start != 3 {
					return false
				}
				l.blank = true // the leading document marker
			}
		}
		if !l.blank {
			seenContent = true
		}
		p.lines = append(p.lines, l)
		start = end + 1
	}
	return true
}

// next returns the first non-blank line at or after li, or -1.
func (p *fastParser) next(li int) int {
	for ; li < len(p.lines); li++ {
		if !p.lines[li].blank {
			return li
		}
	}
	return -1
}

func (p *fastParser) pos(li, off int) Pos {
	l := p.lines[li]
	return Pos{l.num, 1 + utf8.RuneCount(p.src[l.start:off])}
}

func (p *fastParser) isSeqAt(li, off int) bool {
	return p.src[off] == '-' && (off+1 == p.lines[li].end || p.src[off+1] == ' ')
}

// tick counts one value and refuses files too deep or too large.
func (p *fastParser) tick(depth int) bool {
	p.count++
	return depth < MaxDepth && p.count < MaxValues
}

// restBlank reports whether only spaces and a comment follow off.
func (p *fastParser) restBlank(li, off int) bool {
	end := p.lines[li].end
	if off < end && p.src[off] != ' ' {
		return false
	}
	for off < end && p.src[off] == ' ' {
		off++
	}
	return off == end || p.src[off] == '#'
}

// key looks for a block mapping key at off. It returns the key value and
// the offset after its colon; isKey is false when the line holds no key,
// ok false when it holds something outside the subset.
func (p *fastParser) key(li, off int) (k *value, after int, isKey, ok bool) {
	src, end := p.src, p.lines[li].end
	c := src[off]
	if c == '"' || c == '\'' {
		v, e, ok := p.quoted(li, off)
		if !ok {
			return nil, 0, false, false
		}
		if e < end && src[e] == ':' {
			if e+1 < end && src[e+1] != ' ' {
				return nil, 0, false, false
			}
			return v, e + 1, true, true
		}
		return nil, 0, false, true
	}
	if c == '[' || c == '{' {
		return nil, 0, false, true
	}
	for i := off; i < end; i++ {
		switch src[i] {
		case ':':
			if i+1 < end && src[i+1] != ' ' {
				continue
			}
			ks := string(src[off:i])
			if !plainKeyOK(ks) {
				return nil, 0, false, false
			}
			return p.plainValue(ks, p.pos(li, off)), i + 1, true, true
		case '#':
			if src[i-1] == ' ' {
				return nil, 0, false, true
			}
		}
	}
	return nil, 0, false, true
}

func plainKeyOK(k string) bool {
	if k == "" || strings.Contains(k, "<<") || k[len(k)-1] == ' ' || strings.ContainsAny(k[:1], "-?:,[]{}#&*!|>'\"%@` ") {
		return false
	}
	return !strings.ContainsAny(k, ":[]{},#")
}

// keyText is the map key a resolved key scalar stands for.
func keyText(k *value) (string, bool) {
	if k.kind == vNull {
		return "", false
	}
	return k.text()
}

func (p *fastParser) mapping(li, off, depth int) (*value, bool) {
	src := p.src
	n := off - p.lines[li].start
	if !p.tick(depth) {
		return nil, false
	}
	m := &value{kind: vMap}
	for {
		k, after, isKey, ok := p.key(li, off)
		if !ok || !isKey || !p.tick(depth+1) {
			return nil, false
		}
		ks, ok := keyText(k)
		if !ok {
			return nil, false
		}
		if len(m.keys) == 0 {
			m.pos = k.pos
		}
		if _, dup := m.get(ks); dup {
			return nil, false
		}
		end := p.lines[li].end
		v := after
		for v < end && src[v] == ' ' {
			v++
		}
		var val *value
		if v == end || (src[v] == '#' && v > after) {
			if v != after && v != after+1 || v == end && v != after {
				return nil, false // go-yaml places such nulls oddly
			}
			nl := p.next(li + 1)
			switch {
			case nl >= 0 && p.lines[nl].indent > n:
				val, ok = p.block(nl, depth+1)
			case nl >= 0 && p.lines[nl].indent == n && p.isSeqAt(nl, p.lines[nl].start+n):
				val, ok = p.seq(nl, p.lines[nl].start+n, depth+1)
			default:
				if ok = p.tick(depth + 1); ok {
					// go-yaml puts the null just after the colon, or
					// one column further at the end of the document.
					val = &value{kind: vNull, pos: p.pos(li, after)}
					if nl < 0 {
						val.pos.Col++
					}
					p.li = li + 1
				}
			}
		} else {
			val, ok = p.inline(li, v, n, depth+1)
		}
		if !ok {
			return nil, false
		}
		m.keys = append(m.keys, mapEntry{key: ks, keyPos: k.pos, val: val})
		nl := p.next(p.li)
		if nl < 0 || p.lines[nl].indent < n {
			return m, true
		}
		if p.lines[nl].indent > n {
			return nil, false
		}
		li, off = nl, p.lines[nl].start+n
		if p.isSeqAt(li, off) {
			return nil, false
		}
	}
}

// block parses a map or a list starting a line of its own.
func (p *fastParser) block(li, depth int) (*value, bool) {
	off := p.lines[li].start + p.lines[li].indent
	if p.isSeqAt(li, off) {
		return p.seq(li, off, depth)
	}
	if _, _, isKey, ok := p.key(li, off); !ok || !isKey {
		return nil, false
	}
	return p.mapping(li, off, depth)
}

func (p *fastParser) seq(li, off, depth int) (*value, bool) {
	src := p.src
	n := off - p.lines[li].start
	if !p.tick(depth) {
		return nil, false
	}
	s := &value{kind: vList, pos: p.pos(li, off)}
	for {
		end := p.lines[li].end
		c := off + 1
		for c < end && src[c] == ' ' {
			c++
		}
		var item *value
		var ok bool
		if c == end || src[c] == '#' {
			nl := p.next(li + 1)
			if nl < 0 || p.lines[nl].indent <= n {
				return nil, false // empty item
			}
			item, ok = p.block(nl, depth+1)
		} else if p.isSeqAt(li, c) {
			item, ok = p.seq(li, c, depth+1)
		} else if _, _, isKey, kok := p.key(li, c); !kok {
			return nil, false
		} else if isKey {
			item, ok = p.mapping(li, c, depth+1)
		} else {
			item, ok = p.inline(li, c, n, depth+1)
		}
		if !ok {
			return nil, false
		}
		s.list = append(s.list, item)
		nl := p.next(p.li)
		if nl < 0 || p.lines[nl].indent < n {
			return s, true
		}
		if p.lines[nl].indent > n {
			return nil, false
		}
		li, off = nl, p.lines[nl].start+n
		if !p.isSeqAt(li, off) {
			return s, true
		}
	}
}

// inline parses a scalar, a one-line flow collection or a block scalar
// at off, the value of a map key or a list item; parent is the indentation
// of the enclosing collection.
func (p *fastParser) inline(li, off, parent, depth int) (*value, bool) {
	src := p.src
	if !p.tick(depth) {
		return nil, false
	}
	var v *value
	e := off
	var ok bool
	switch c := src[off]; c {
	case '|', '>':
		return p.literal(li, off, parent)
	case '[', '{':
		v, e, ok = p.flow(li, off, depth)
	case '"', '\'':
		v, e, ok = p.quoted(li, off)
	default:
		if c == '-' && p.isSeqAt(li, off) || strings.IndexByte("?:,[]{}#&*!|>%@`", c) >= 0 {
			return nil, false
		}
		end := p.lines[li].end
		for e < end && !(src[e] == '#' && src[e-1] == ' ') {
			e++
		}
		s := strings.TrimRight(string(src[off:e]), " ")
		if e == end && len(s) != e-off {
			return nil, false // go-yaml misplaces plain scalars with trailing spaces
		}
		if strings.Contains(s, ": ") || strings.HasSuffix(s, ":") || strings.Contains(s, " #") {
			return nil, false
		}
		v, e, ok = p.plainValue(s, p.pos(li, off)), off+len(s), true
	}
	if !ok || !p.restBlank(li, e) {
		return nil, false
	}
	p.li = li + 1
	return v, true
}

// plainValue resolves a plain scalar the way go-yaml does (YAML 1.2 core).
func (p *fastParser) plainValue(s string, pos Pos) *value {
	switch s {
	case "null", "Null", "NULL", "~":
		return &value{kind: vNull, pos: pos}
	case "true", "True", "TRUE":
		return &value{kind: vBool, pos: pos, b: true}
	case "false", "False", "FALSE":
		return &value{kind: vBool, pos: pos}
	case ".inf", ".Inf", ".INF":
		return &value{kind: vFloat, pos: pos, f: math.Inf(1)}
	case "-.inf", "-.Inf", "-.INF":
		return &value{kind: vFloat, pos: pos, f: math.Inf(-1)}
	case ".nan", ".NaN", ".NAN":
		return &value{kind: vFloat, pos: pos, f: math.NaN()}
	}
	if c := s[0]; c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' {
		if num := token.ToNumber(s); num != nil {
			switch x := num.Value.(type) {
			case float64:
				if num.Type == token.NumberTypeFloat {
					return &value{kind: vFloat, pos: pos, f: x}
				}
			case int64:
				return &value{kind: vInt, pos: pos, i: x}
			case uint64:
				if x > math.MaxInt64 {
					return &value{kind: vFloat, pos: pos, f: float64(x)}
				}
				return &value{kind: vInt, pos: pos, i: int64(x)}
			}
		}
	}
	return &value{kind: vString, pos: pos, s: s, style: styleOf(s, 'p')}
}

// quoted parses a one-line quoted scalar at off; e is the offset after
// its closing quote.
func (p *fastParser) quoted(li, off int) (v *value, e int, ok bool) {
	src, end := p.src, p.lines[li].end
	q := src[off]
	var b strings.Builder
	i := off + 1
	for {
		if i >= end {
			return nil, 0, false
		}
		c := src[i]
		if c == q {
			if q == '\'' && i+1 < end && src[i+1] == '\'' {
				b.WriteByte('\'')
				i += 2
				continue
			}
			break
		}
		if c == '\\' && q == '"' {
			if i+1 >= end {
				return nil, 0, false
			}
			i++
			switch src[i] {
			case '"', '\\', '/':
				b.WriteByte(src[i])
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'u':
				if i+4 >= end {
					return nil, 0, false
				}
				r, err := strconv.ParseUint(string(src[i+1:i+5]), 16, 32)
				if err != nil || r >= 0xd800 && r < 0xe000 || r == 0 {
					return nil, 0, false
				}
				b.WriteRune(rune(r))
				i += 4
			default:
				return nil, 0, false
			}
			i++
			continue
		}
		b.WriteByte(c)
		i++
	}
	s := b.String()
	return &value{kind: vString, pos: p.pos(li, off), s: s, style: styleOf(s, q)}, i + 1, true
}

// flow parses a flow collection that ends on the line it starts on.
func (p *fastParser) flow(li, off, depth int) (*value, int, bool) {
	src, end := p.src, p.lines[li].end
	skip := func(i int) int {
		for i < end && src[i] == ' ' {
			i++
		}
		return i
	}
	open := src[off]
	closer := byte(']')
	v := &value{kind: vList, pos: p.pos(li, off)}
	if open == '{' {
		closer = '}'
		v.kind = vMap
	}
	i := skip(off + 1)
	if i < end && src[i] == closer {
		return v, i + 1, true
	}
	for {
		if i >= end {
			return nil, 0, false
		}
		if open == '[' {
			item, e, ok := p.flowItem(li, i, depth+1, false)
			if !ok {
				return nil, 0, false
			}
			v.list = append(v.list, item)
			i = e
		} else {
			k, e, ok := p.flowItem(li, i, depth+1, true)
			if !ok || e+1 >= end || src[e] != ':' || src[e+1] != ' ' || k.kind == vList || k.kind == vMap {
				return nil, 0, false
			}
			ks, ok := keyText(k)
			if !ok {
				return nil, 0, false
			}
			if _, dup := v.get(ks); dup {
				return nil, 0, false
			}
			if len(v.keys) == 0 {
				v.pos = k.pos
			}
			i = skip(e + 1)
			if i >= end || src[i] == ',' || src[i] == '}' {
				return nil, 0, false
			}
			val, e2, ok := p.flowItem(li, i, depth+1, false)
			if !ok {
				return nil, 0, false
			}
			v.keys = append(v.keys, mapEntry{key: ks, keyPos: k.pos, val: val})
			i = e2
		}
		i = skip(i)
		if i >= end {
			return nil, 0, false
		}
		switch src[i] {
		case closer:
			return v, i + 1, true
		case ',':
			i = skip(i + 1)
			if i >= end || src[i] == closer || src[i] == ',' {
				return nil, 0, false
			}
		default:
			return nil, 0, false
		}
	}
}

// flowItem parses one entry of a flow collection; isKey stops a plain
// scalar before ": ".
func (p *fastParser) flowItem(li, i, depth int, isKey bool) (*value, int, bool) {
	src, end := p.src, p.lines[li].end
	if !p.tick(depth) {
		return nil, 0, false
	}
	switch c := src[i]; c {
	case '[', '{':
		if isKey {
			return nil, 0, false
		}
		return p.flow(li, i, depth)
	case '"', '\'':
		return p.quoted(li, i)
	default:
		if strings.IndexByte("-?:,[]{}#&*!|>%@`<", c) >= 0 && !(c == '-' && i+1 < end && strings.IndexByte(" ,[]{}:#", src[i+1]) < 0) {
			return nil, 0, false
		}
		e := i
		for e < end && strings.IndexByte(",[]{}:#", src[e]) < 0 {
			e++
		}
		s := strings.TrimRight(string(src[i:e]), " ")
		if s == "" || isKey && strings.Contains(s, "<<") || e < end && (src[e] == '#' || src[e] == ':' && !isKey) {
			return nil, 0, false
		}
		return p.plainValue(s, p.pos(li, i)), i + len(s), true
	}
}

// literal parses a block scalar, literal ("|") or folded (">"), with an
// optional chomping indicator, whose indicator is at off.
func (p *fastParser) literal(li, off, parent int) (*value, bool) {
	src := p.src
	folded := src[off] == '>'
	chomp := byte(0)
	h := off + 1
	if h < p.lines[li].end && (src[h] == '-' || src[h] == '+') {
		chomp = src[h]
		h++
	}
	if !p.restBlank(li, h) {
		return nil, false
	}
	// Find the content indentation from the first non-empty line.
	ci, first := -1, li+1
	maxEmpty := 0
	for j := li + 1; j < len(p.lines); j++ {
		l := p.lines[j]
		if l.indent == l.end-l.start {
			maxEmpty = max(maxEmpty, l.indent)
			continue
		}
		ci = l.indent
		break
	}
	if ci <= parent || ci <= 0 || maxEmpty > ci {
		return nil, false
	}
	last := first // one past the last non-empty content line
	j := first
	for ; j < len(p.lines); j++ {
		l := p.lines[j]
		if l.indent == l.end-l.start {
			if l.indent > ci {
				return nil, false
			}
			continue
		}
		if l.indent < ci {
			break
		}
		if p.src[l.end-1] == ' ' {
			return nil, false // go-yaml drops trailing spaces here
		}
		last = j + 1
	}
	var out strings.Builder
	empties := -1 // empty lines since the last text line; -1 before the first
	for k := first; k < last; k++ {
		l := p.lines[k]
		if l.indent == l.end-l.start {
			if !folded {
				out.WriteByte('\n')
			} else if empties >= 0 {
				empties++
			} else {
				return nil, false // leading empty lines
			}
			continue
		}
		if !folded {
			out.Write(src[l.start+ci : l.end])
			out.WriteByte('\n')
			continue
		}
		if l.indent != ci {
			return nil, false // more-indented lines are not folded
		}
		switch {
		case empties == 0:
			out.WriteByte(' ')
		case empties > 0:
			out.WriteString(strings.Repeat("\n", empties))
		}
		empties = 0
		out.Write(src[l.start+ci : l.end])
	}
	if folded {
		out.WriteByte('\n')
	}
	if last == len(p.lines) && (len(src) == 0 || src[len(src)-1] != '\n') {
		return nil, false
	}
	s := out.String()
	switch chomp {
	case '-':
		s = strings.TrimSuffix(s, "\n")
	case '+':
		s += strings.Repeat("\n", j-last)
		if j == len(p.lines) {
			return nil, false // trailing lines at the end of the file
		}
	}
	p.li = j
	return &value{kind: vString, pos: p.pos(li, off), s: s}, true
}
