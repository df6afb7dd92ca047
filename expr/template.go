package expr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Segment is one `{{ expr }}` of a template: Code is the text between the
// braces (spaces included) and Offset the byte offset of Code in the
// template, so that src[Offset:Offset+len(Code)] == Code.
type Segment struct {
	Code   string
	Offset int
}

// Template is a string with `{{ expr }}` parts. It is safe for concurrent
// use.
type Template struct {
	src    string
	segs   []Segment
	lits   []string // the text around the segments: len(segs)+1 pieces
	single bool     // one segment and nothing around it

	once  sync.Once
	progs []*Program
	err   error
}

// HasTemplate reports whether s contains "{{", that is whether it may be a
// template rather than plain text.
func HasTemplate(s string) bool { return strings.Contains(s, "{{") }

// ParseTemplate splits s into text and `{{ expr }}` segments. The closing
// `}}` of a segment is the first one outside the expression's string
// literals ('…', "…", `…`), comments (/* … */) and braces, so
// `{{ {"a": {"b": "}}"}} }}` is one segment.
//
// There is no escape: `\{{` is an error, and so is a `{{` without its `}}`,
// an empty `{{ }}` and an expression longer than MaxExprLen. A literal "{{"
// is written {{ "{{" }}. A `}}` outside any segment is plain text.
//
// ParseTemplate only scans; the expressions are parsed and compiled the first
// time the template is rendered. Errors are *Error with offsets into s.
func ParseTemplate(s string) (*Template, error) {
	t := &Template{src: s}
	if !HasTemplate(s) {
		t.lits = []string{s}
		return t, nil
	}
	// Room for every segment, so that the lists grow once.
	segs := strings.Count(s, "{{")
	t.lits, t.segs = make([]string, 0, segs+1), make([]Segment, 0, segs)
	i := 0 // start of the current text
	for {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			break
		}
		open := i + j
		if open > 0 && s[open-1] == '\\' {
			return nil, templateError(s, open-1,
				`\{{ is not an escape: write {{ "{{" }} for a literal {{`)
		}
		end, err := closing(s, open)
		if err != nil {
			return nil, err
		}
		code := s[open+2 : end]
		switch {
		case strings.TrimSpace(code) == "":
			return nil, templateError(s, open, "empty expression in {{ }}")
		case len(code) > MaxExprLen:
			e := errorAt(code, MaxExprLen, ErrBudget,
				fmt.Sprintf("expression is %d bytes; the limit is %d", len(code), MaxExprLen))
			return nil, e.inTemplate(s, open+2)
		}
		t.lits = append(t.lits, s[i:open])
		t.segs = append(t.segs, Segment{Code: code, Offset: open + 2})
		i = end + 2
	}
	t.lits = append(t.lits, s[i:])
	t.single = len(t.segs) == 1 && t.lits[0] == "" && t.lits[1] == ""
	return t, nil
}

// closing returns the offset of the `}}` closing the segment opened at open.
func closing(s string, open int) (int, error) {
	depth := 0
	for i := open + 2; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'':
			k := i + 1
			for ; k < len(s) && s[k] != c; k++ {
				if s[k] == '\n' {
					break
				}
				if s[k] == '\\' {
					k++
				}
			}
			if k >= len(s) || s[k] != c {
				return 0, templateError(s, i, "string literal is not terminated")
			}
			i = k
		case '`':
			k := strings.IndexByte(s[i+1:], '`')
			if k < 0 {
				return 0, templateError(s, i, "string literal is not terminated")
			}
			i += k + 1
		case '/':
			if i+1 < len(s) && s[i+1] == '*' {
				k := strings.Index(s[i+2:], "*/")
				if k < 0 {
					return 0, templateError(s, i, "comment is not terminated")
				}
				i += k + 3
			}
		case '{':
			depth++
		case '}':
			if depth > 0 {
				depth--
			} else if i+1 < len(s) && s[i+1] == '}' {
				return i, nil
			}
		}
	}
	return 0, templateError(s, open, "unclosed {{: no matching }}")
}

func templateError(s string, off int, msg string) *Error {
	return &Error{Expr: s, Offset: off, Msg: msg, template: true}
}

// String returns the template's source.
func (t *Template) String() string { return t.src }

// Static reports whether the template has no `{{ }}` at all.
func (t *Template) Static() bool { return len(t.segs) == 0 }

// Segments returns the template's expressions in order.
func (t *Template) Segments() []Segment { return t.segs }

// Single reports whether the template is exactly one {{ expr }}, with no
// text around it, not even a space (its value keeps the expression's type).
func (t *Template) Single() bool { return t.single }

// References returns the free names of all the template's expressions, with
// offsets into the template. See References.
func (t *Template) References() ([]Ref, error) {
	var refs []Ref
	for _, seg := range t.segs {
		rs, err := References(seg.Code)
		if err != nil {
			return nil, t.rebase(err, seg)
		}
		for _, r := range rs {
			r.Offset += seg.Offset
			refs = append(refs, r)
		}
	}
	return refs, nil
}

// Render evaluates the template in s. A static template renders to its
// source. A template that is exactly one `{{ expr }}`, with no text around
// it, renders to the expression's value with its type (a list stays a
// list). Otherwise every value is turned into text — nil as "",
// strings as they are, numbers in their shortest form (3, not 3.0), bools as
// true or false, lists and maps as compact JSON — and the pieces are
// concatenated.
//
// Only the template's own source is evaluated: a value that contains "{{"
// is data and is never rendered again. Errors are *Error with offsets into
// the template.
func (t *Template) Render(s *Scope) (any, error) {
	if len(t.segs) == 0 {
		return t.src, nil
	}
	progs, err := t.programs()
	if err != nil {
		return nil, err
	}
	if t.single {
		v, err := progs[0].Eval(s)
		if err != nil {
			return nil, t.rebase(err, t.segs[0])
		}
		return v, nil
	}
	var b strings.Builder
	b.WriteString(t.lits[0])
	for i, p := range progs {
		v, err := p.Eval(s)
		if err != nil {
			return nil, t.rebase(err, t.segs[i])
		}
		if err := writeText(&b, v); err != nil {
			return nil, textError(err).inTemplate(t.src, t.segs[i].Offset)
		}
		b.WriteString(t.lits[i+1])
	}
	return b.String(), nil
}

// programs compiles the segments once.
func (t *Template) programs() ([]*Program, error) {
	t.once.Do(func() {
		progs := make([]*Program, len(t.segs))
		for i, seg := range t.segs {
			p, err := Compile(seg.Code)
			if err != nil {
				t.err = t.rebase(err, seg)
				return
			}
			progs[i] = p
		}
		t.progs = progs
	})
	return t.progs, t.err
}

// rebase moves an error about a segment's code onto the template.
func (t *Template) rebase(err error, seg Segment) error {
	if e, ok := err.(*Error); ok {
		return e.inTemplate(t.src, seg.Offset)
	}
	return err
}

// writeText appends v as text; it fails rather than build more than
// ByteBudget bytes.
func writeText(b *strings.Builder, v any) error {
	room := ByteBudget - b.Len()
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		return writeBounded(b, v, room)
	case []byte:
		return writeBounded(b, string(v), room)
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case int:
		b.WriteString(strconv.Itoa(v))
	case int8, int16, int32, int64:
		b.WriteString(strconv.FormatInt(reflect.ValueOf(v).Int(), 10))
	case uint, uint8, uint16, uint32, uint64:
		b.WriteString(strconv.FormatUint(reflect.ValueOf(v).Uint(), 10))
	case float64:
		b.WriteString(formatFloat(v, 64))
	case float32:
		b.WriteString(formatFloat(float64(v), 32))
	case json.Number:
		b.WriteString(v.String())
	case time.Time:
		b.WriteString(v.Format(time.RFC3339Nano))
	case time.Duration:
		b.WriteString(v.String())
	case Lazy:
		if lazyBytes(v, room, 0) > room {
			return errTextBudget
		}
		l, err := loadLazy(v)
		if err != nil {
			return err
		}
		return writeText(b, l)
	default:
		if lazyBytes(v, room, 0) > room {
			return errTextBudget
		}
		if r, changed, err := resolveLazy(v, 0); err != nil {
			return err
		} else if changed {
			v = r
		}
		if jsonSize(v, room) > room {
			return errTextBudget
		}
		text, err := compactJSON(v)
		if err != nil {
			return fmt.Errorf("cannot render %s as text: %w", typeName(v), err)
		}
		return writeBounded(b, text, room)
	}
	return nil
}

var errTextBudget = &budgetError{
	msg:  fmt.Sprintf("memory budget exceeded: the rendered text would be longer than %d bytes", ByteBudget),
	kind: ErrBudget,
}

func writeBounded(b *strings.Builder, s string, room int) error {
	if len(s) > room {
		return errTextBudget
	}
	b.WriteString(s)
	return nil
}

// textError converts an error of writeText into an *Error about the start of
// the expression whose value could not be written.
func textError(err error) *Error {
	e := &Error{Offset: 0, Msg: err.Error(), Err: errors.Unwrap(err)}
	if be, ok := err.(*budgetError); ok {
		e.Err = be.kind
	}
	return e
}

// formatFloat writes f in its shortest form: 3 rather than 3.0, and an
// exponent only for very large or very small numbers, as JSON does.
func formatFloat(f float64, bits int) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, bits)
	}
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return strconv.FormatFloat(f, 'g', -1, bits)
	}
	return strconv.FormatFloat(f, 'f', -1, bits)
}

// compactJSON encodes v without HTML escaping. Maps with keys JSON cannot
// encode (groupBy builds map[any]any) get their keys as text.
func compactJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		buf.Reset()
		if err := enc.Encode(textKeys(v, 0)); err != nil {
			return "", err
		}
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// textKeys copies the maps in v whose keys are not strings into
// map[string]any.
func textKeys(v any, depth int) any {
	if depth > maxDepth {
		return nil
	}
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = textKeys(x, depth+1)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = textKeys(x, depth+1)
		}
		return out
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map {
		return v
	}
	out := make(map[string]any, rv.Len())
	for it := rv.MapRange(); it.Next(); {
		out[fmt.Sprint(valueOf(it.Key()))] = textKeys(valueOf(it.Value()), depth+1)
	}
	return out
}

// RenderValue renders every template in v: a string containing "{{" is
// parsed and rendered, maps and lists (map[string]any, []any,
// map[string]string, []string) are rendered element by element into new
// ones, and anything else is returned unchanged. Map keys are not rendered.
// In a map[string]string or []string every rendered value is turned into
// text. Errors name the path of the failing value.
func RenderValue(v any, s *Scope) (any, error) {
	return renderValue(v, s, nil)
}

func renderValue(v any, s *Scope, path []string) (any, error) {
	switch v := v.(type) {
	case string:
		if !HasTemplate(v) {
			return v, nil
		}
		out, err := renderString(v, s)
		if err != nil {
			return nil, pathError(path, err)
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			r, err := renderValue(x, s, append(path, k))
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			r, err := renderValue(x, s, append(path, "["+strconv.Itoa(i)+"]"))
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]string:
		out := make(map[string]string, len(v))
		for k, x := range v {
			r, err := renderText(x, s)
			if err != nil {
				return nil, pathError(append(path, k), err)
			}
			out[k] = r
		}
		return out, nil
	case []string:
		out := make([]string, len(v))
		for i, x := range v {
			r, err := renderText(x, s)
			if err != nil {
				return nil, pathError(append(path, "["+strconv.Itoa(i)+"]"), err)
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

func renderString(v string, s *Scope) (any, error) {
	t, ok := templates.get(v)
	if !ok {
		var err error
		if t, err = ParseTemplate(v); err != nil {
			return nil, err
		}
		templates.put(v, t)
	}
	return t.Render(s)
}

// templates caches the templates renderString parsed, by source, with
// their compiled programs: the strings rendered are a workflow's
// parameters, rendered again at each visit of their node (each item of a
// foreach).
var templates = newSourceCache[*Template]()

// renderText renders v and turns the result into text.
func renderText(v string, s *Scope) (string, error) {
	if !HasTemplate(v) {
		return v, nil
	}
	out, err := renderString(v, s)
	if err != nil {
		return "", err
	}
	if str, ok := out.(string); ok {
		return str, nil
	}
	var b strings.Builder
	if err := writeText(&b, out); err != nil {
		e := textError(err)
		e.Expr, e.Offset, e.template = v, -1, true
		return "", e
	}
	return b.String(), nil
}

func pathError(path []string, err error) error {
	if len(path) == 0 {
		return err
	}
	var b strings.Builder
	for i, p := range path {
		if i > 0 && !strings.HasPrefix(p, "[") {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return fmt.Errorf("%s: %w", b.String(), err)
}
