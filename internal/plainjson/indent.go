package plainjson

import "io"

// Indenter indents compact JSON on its way to a writer, a piece at a time:
// what it writes for a compact text (encoding/json's, no space outside
// strings) is what json.Indent(dst, text, "", indent) writes, however the
// text is split among calls to Write. A run document of many steps is
// written this way one step at a time (skein run -o json), never indented
// whole in memory. It keeps no more than one Write's output.
type Indenter struct {
	w      io.Writer
	indent string
	out    []byte
	depth  int
	// In a string, and after its backslash.
	inString, escaped bool
	// open is a { or [ not written yet: whether it is empty ({} or [],
	// written so) shows with the next byte.
	open byte
}

// NewIndenter returns an Indenter that writes to w, each level of nesting
// indented by indent.
func NewIndenter(w io.Writer, indent string) *Indenter {
	return &Indenter{w: w, indent: indent}
}

// Write indents p, compact JSON that may begin or end anywhere in a value,
// and writes the result to the underlying writer.
func (in *Indenter) Write(p []byte) (int, error) {
	b := in.out[:0]
	for _, c := range p {
		if in.inString {
			b = append(b, c)
			switch {
			case in.escaped:
				in.escaped = false
			case c == '\\':
				in.escaped = true
			case c == '"':
				in.inString = false
			}
			continue
		}
		if o := in.open; o != 0 {
			in.open = 0
			if o == '{' && c == '}' || o == '[' && c == ']' {
				b = append(b, o, c)
				continue
			}
			b = append(b, o)
			in.depth++
			b = in.newline(b)
		}
		switch c {
		case '{', '[':
			in.open = c
		case '}', ']':
			in.depth--
			b = in.newline(b)
			b = append(b, c)
		case ',':
			b = append(b, c)
			b = in.newline(b)
		case ':':
			b = append(b, ':', ' ')
		case '"':
			in.inString = true
			b = append(b, c)
		default:
			b = append(b, c)
		}
	}
	in.out = b
	if _, err := in.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (in *Indenter) newline(b []byte) []byte {
	b = append(b, '\n')
	for range in.depth {
		b = append(b, in.indent...)
	}
	return b
}
