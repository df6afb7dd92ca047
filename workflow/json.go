package workflow

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// parseJSON parses a JSON document into a value tree with
// go-json-experiment/json's jsontext, which reports the byte offset of
// every token; the offsets are turned into lines and columns here. Duplicate
// keys, depth and value count are checked here, so their errors match the
// YAML decoder's.
func parseJSON(src []byte) (*value, *parseError) {
	base := 0
	if bytes.HasPrefix(src, []byte{0xEF, 0xBB, 0xBF}) {
		base = 3
	}
	c := &cursor{src: src, line: 1}
	if len(bytes.TrimLeft(src[base:], " \t\r\n")) == 0 {
		return nil, &parseError{Pos{1, 1}, "the file holds no workflow (it is empty)"}
	}
	p := &textParser{src: src, base: base, c: c, dec: jsontext.NewDecoder(bytes.NewReader(src[base:]), jsontext.AllowDuplicateNames(true))}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	off := p.start()
	if _, err := p.dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, &parseError{c.pos(off), fmt.Sprintf("JSON: unexpected %s after the end of the document", what(src, off))}
	}
	return v, nil
}

type textParser struct {
	src   []byte
	base  int
	c     *cursor
	dec   *jsontext.Decoder
	count int
}

// start is the offset of the next token: past the whitespace, comma or
// colon that follows the last one.
func (p *textParser) start() int {
	off := p.base + int(p.dec.InputOffset())
	for off < len(p.src) {
		switch p.src[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

func (p *textParser) fail(err error) *parseError {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		off := p.base + int(se.ByteOffset)
		if errors.Is(se.Err, io.ErrUnexpectedEOF) {
			return &parseError{p.c.pos(len(p.src)), "JSON: unexpected end of file"}
		}
		if off < len(p.src) && p.src[off] == ',' { // a trailing comma: point at what follows it
			next := off + 1
			for next < len(p.src) && bytes.IndexByte([]byte(" \t\r\n"), p.src[next]) >= 0 {
				next++
			}
			if next < len(p.src) && p.src[next] == ']' {
				return &parseError{p.c.pos(next), "JSON: unexpected ']'; expected a value"}
			}
			if next < len(p.src) && p.src[next] == '}' {
				return &parseError{p.c.pos(next), "JSON: unexpected '}'; expected a key in double quotes"}
			}
		}
		return &parseError{p.c.pos(off), "JSON: " + se.Err.Error()}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &parseError{p.c.pos(len(p.src)), "JSON: unexpected end of file"}
	}
	return &parseError{p.c.pos(p.start()), "JSON: " + err.Error()}
}

func (p *textParser) value(depth int) (*value, *parseError) {
	p.count++
	off := p.start()
	if p.count > MaxValues {
		return nil, &parseError{p.c.pos(off), fmt.Sprintf("the file has more than %d values", MaxValues)}
	}
	if depth > MaxDepth {
		return nil, &parseError{p.c.pos(off), fmt.Sprintf("nesting is deeper than %d levels", MaxDepth)}
	}
	tok, err := p.dec.ReadToken()
	if err != nil {
		return nil, p.fail(err)
	}
	pos := p.c.pos(off)
	switch tok.Kind() {
	case 'n':
		return &value{kind: vNull, pos: pos}, nil
	case 't', 'f':
		return &value{kind: vBool, pos: pos, b: tok.Bool()}, nil
	case '"':
		s := tok.String()
		v := &value{kind: vString, pos: pos, s: s}
		if p.base+int(p.dec.InputOffset())-off == len(s)+2 { // no escapes: offsets map onto the source
			v.style = '"'
		}
		return v, nil
	case '0':
		text := string(p.src[off : p.base+int(p.dec.InputOffset())])
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return &value{kind: vInt, pos: pos, i: n}, nil
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, &parseError{pos, fmt.Sprintf("JSON: %q is not a valid number", text)}
		}
		return &value{kind: vFloat, pos: pos, f: f}, nil
	case '{':
		v := &value{kind: vMap, pos: pos}
		for p.dec.PeekKind() != '}' {
			koff := p.start()
			ktok, err := p.dec.ReadToken()
			if err != nil {
				return nil, p.fail(err)
			}
			kpos := p.c.pos(koff)
			key := ktok.String()
			if i := v.find(key); i >= 0 {
				return nil, &parseError{kpos, fmt.Sprintf("duplicate key %q (first at %s)", key, v.keys[i].keyPos)}
			}
			val, perr := p.value(depth + 1)
			if perr != nil {
				return nil, perr
			}
			v.add(mapEntry{key: key, keyPos: kpos, val: val})
		}
		if _, err := p.dec.ReadToken(); err != nil {
			return nil, p.fail(err)
		}
		return v, nil
	case '[':
		v := &value{kind: vList, pos: pos}
		for p.dec.PeekKind() != ']' {
			e, perr := p.value(depth + 1)
			if perr != nil {
				return nil, perr
			}
			v.list = append(v.list, e)
		}
		if _, err := p.dec.ReadToken(); err != nil {
			return nil, p.fail(err)
		}
		return v, nil
	}
	return nil, &parseError{pos, fmt.Sprintf("JSON: unexpected %s; expected a value", what(p.src, off))}
}

// cursor turns byte offsets, which only grow, into lines and columns in
// characters, in linear time over the document.
type cursor struct {
	src           []byte
	line          int
	at, lineStart int
	col           int
}

func (c *cursor) pos(off int) Pos {
	off = min(off, len(c.src))
	if off < c.at { // an error can point back: count again from the start
		c.line, c.at, c.lineStart, c.col = 1, 0, 0, 0
	}
	for {
		i := bytes.IndexByte(c.src[c.at:off], '\n')
		if i < 0 {
			break
		}
		c.line++
		c.at += i + 1
		c.lineStart, c.col = c.at, 0
	}
	c.col += utf8.RuneCount(c.src[c.at:off])
	c.at = off
	return Pos{c.line, c.col + 1}
}

func what(src []byte, off int) string {
	if off >= len(src) {
		return "end of file"
	}
	r, _ := utf8.DecodeRune(src[off:])
	return strconv.QuoteRune(r)
}
