package workflow

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// parseJSON parses a JSON document into a value tree. It is a small strict
// parser of its own because encoding/json does not report positions of
// values, and every diagnostic needs one.
func parseJSON(src []byte) (*value, *parseError) {
	p := &jsonParser{src: src, line: 1, lineStart: 0}
	if len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF {
		p.i = 3
	}
	p.space()
	if p.i >= len(p.src) {
		return nil, &parseError{Pos{1, 1}, "the file holds no workflow (it is empty)"}
	}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.src) {
		return nil, p.errf("JSON: unexpected %s after the end of the document", p.what())
	}
	return v, nil
}

type jsonParser struct {
	src       []byte
	i         int
	line      int
	lineStart int
	count     int
	// colAt and col cache the last column computed on the current line, so
	// long one-line documents cost linear time.
	colAt, col int
}

func (p *jsonParser) pos() Pos {
	if p.colAt < p.lineStart || p.colAt > p.i {
		p.colAt, p.col = p.lineStart, 0
	}
	p.col += utf8.RuneCount(p.src[p.colAt:p.i])
	p.colAt = p.i
	return Pos{p.line, p.col + 1}
}

func (p *jsonParser) errf(format string, args ...any) *parseError {
	return &parseError{p.pos(), fmt.Sprintf(format, args...)}
}

func (p *jsonParser) what() string {
	if p.i >= len(p.src) {
		return "end of file"
	}
	r, _ := utf8.DecodeRune(p.src[p.i:])
	return strconv.QuoteRune(r)
}

func (p *jsonParser) space() {
	for p.i < len(p.src) {
		switch p.src[p.i] {
		case '\n':
			p.i++
			p.line++
			p.lineStart = p.i
		case ' ', '\t', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (*value, *parseError) {
	p.count++
	if p.count > MaxValues {
		return nil, p.errf("the file has more than %d values", MaxValues)
	}
	if depth > MaxDepth {
		return nil, p.errf("nesting is deeper than %d levels", MaxDepth)
	}
	if p.i >= len(p.src) {
		return nil, p.errf("JSON: unexpected end of file")
	}
	pos := p.pos()
	switch c := p.src[p.i]; {
	case c == '{':
		return p.object(pos, depth)
	case c == '[':
		return p.array(pos, depth)
	case c == '"':
		start := p.i
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		v := &value{kind: vString, pos: pos, s: s}
		if p.i-start == len(s)+2 { // no escapes: offsets map onto the source
			v.style = '"'
		}
		return v, nil
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if len(p.src)-p.i >= len(lit) && string(p.src[p.i:p.i+len(lit)]) == lit {
				p.i += len(lit)
				switch lit {
				case "true":
					return &value{kind: vBool, pos: pos, b: true}, nil
				case "false":
					return &value{kind: vBool, pos: pos}, nil
				}
				return &value{kind: vNull, pos: pos}, nil
			}
		}
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(pos)
	}
	return nil, p.errf("JSON: unexpected %s; expected a value", p.what())
}

func (p *jsonParser) object(pos Pos, depth int) (*value, *parseError) {
	p.i++
	v := &value{kind: vMap, pos: pos}
	p.space()
	if p.i < len(p.src) && p.src[p.i] == '}' {
		p.i++
		return v, nil
	}
	for {
		p.space()
		if p.i >= len(p.src) || p.src[p.i] != '"' {
			return nil, p.errf("JSON: unexpected %s; expected a key in double quotes", p.what())
		}
		kpos := p.pos()
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		if prev, dup := v.get(key); dup {
			_ = prev
			for _, e := range v.keys {
				if e.key == key {
					return nil, &parseError{kpos, fmt.Sprintf("duplicate key %q (first at %s)", key, e.keyPos)}
				}
			}
		}
		p.space()
		if p.i >= len(p.src) || p.src[p.i] != ':' {
			return nil, p.errf("JSON: unexpected %s; expected ':' after key %q", p.what(), key)
		}
		p.i++
		p.space()
		val, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v.keys = append(v.keys, mapEntry{key: key, keyPos: kpos, val: val})
		p.space()
		if p.i >= len(p.src) {
			return nil, p.errf("JSON: unexpected end of file; expected ',' or '}'")
		}
		switch p.src[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return v, nil
		default:
			return nil, p.errf("JSON: unexpected %s; expected ',' or '}'", p.what())
		}
	}
}

func (p *jsonParser) array(pos Pos, depth int) (*value, *parseError) {
	p.i++
	v := &value{kind: vList, pos: pos}
	p.space()
	if p.i < len(p.src) && p.src[p.i] == ']' {
		p.i++
		return v, nil
	}
	for {
		p.space()
		e, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v.list = append(v.list, e)
		p.space()
		if p.i >= len(p.src) {
			return nil, p.errf("JSON: unexpected end of file; expected ',' or ']'")
		}
		switch p.src[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return v, nil
		default:
			return nil, p.errf("JSON: unexpected %s; expected ',' or ']'", p.what())
		}
	}
}

func (p *jsonParser) number(pos Pos) (*value, *parseError) {
	start := p.i
	isFloat := false
	if p.src[p.i] == '-' {
		p.i++
	}
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch {
		case c >= '0' && c <= '9':
		case c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-':
			isFloat = true
		default:
			goto done
		}
		p.i++
	}
done:
	text := string(p.src[start:p.i])
	if !isFloat {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil && (text == "0" || text == "-0" || (text[0] != '0' && (len(text) < 2 || text[:2] != "-0"))) {
			return &value{kind: vInt, pos: pos, i: n}, nil
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || text[len(text)-1] == '.' || (len(text) > 1 && text[0] == '0' && text[1] != '.' && text[1] != 'e' && text[1] != 'E') {
		return nil, &parseError{pos, fmt.Sprintf("JSON: %q is not a valid number", text)}
	}
	return &value{kind: vFloat, pos: pos, f: f}, nil
}

// str reads a JSON string starting at the opening quote.
func (p *jsonParser) str() (string, *parseError) {
	p.i++
	start := p.i
	// Fast path: no escapes.
	for p.i < len(p.src) {
		c := p.src[p.i]
		if c == '"' {
			s := string(p.src[start:p.i])
			p.i++
			if !utf8.ValidString(s) {
				return "", p.errf("JSON: string is not valid UTF-8")
			}
			return s, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.i++
	}
	buf := append([]byte(nil), p.src[start:p.i]...)
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch {
		case c == '"':
			p.i++
			if !utf8.Valid(buf) {
				return "", p.errf("JSON: string is not valid UTF-8")
			}
			return string(buf), nil
		case c < 0x20:
			return "", p.errf("JSON: control character in string (write it as an escape)")
		case c == '\\':
			if p.i+1 >= len(p.src) {
				return "", p.errf("JSON: unexpected end of file in string")
			}
			e := p.src[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", p.errf("JSON: bad \\u escape")
				}
				if utf16.IsSurrogate(r) {
					r2 := utf8.RuneError
					if p.i+1 < len(p.src) && p.src[p.i] == '\\' && p.src[p.i+1] == 'u' {
						p.i += 2
						if x, ok := p.hex4(); ok {
							r2 = x
						}
					}
					r = utf16.DecodeRune(r, r2)
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return "", p.errf("JSON: unknown escape \\%c", e)
			}
		default:
			buf = append(buf, c)
			p.i++
		}
	}
	return "", p.errf("JSON: unexpected end of file in string")
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.i+4 > len(p.src) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.src[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(n), true
}
