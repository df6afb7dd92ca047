package expr

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

var (
	// ErrBudget is wrapped by every error that reports a budget being
	// exceeded: expression length, AST nodes, vm memory, bytes built.
	ErrBudget = errors.New("expression budget exceeded")

	// ErrTimeout is wrapped by the error of an evaluation stopped because it
	// ran longer than its wall budget.
	ErrTimeout = errors.New("expression timed out")

	// ErrNotFinite is wrapped by the error of an evaluation whose value is,
	// or holds, NaN or an infinity (1 / 0, 0.0 / 0): they are not data a
	// run can record.
	ErrNotFinite = errors.New("expression value is not a finite number")

	// ErrCall is wrapped by the error Inspect returns for an expression
	// that parses but calls a function with arguments it does not take
	// (upper(1, 2), now("UTC")): what its evaluation would fail with.
	ErrCall = errors.New("a function is called with arguments it does not take")
)

// Error is an expression error: a syntax error, an unknown function, a
// budget exceeded, or a failure while evaluating.
//
// Expr is the source the error is about: the bare expression, or the whole
// template string for an error inside a template. Offset is the byte offset
// into Expr where the error happened, or -1 when it is not known.
//
// Missing and AvailableFields say, for an error caused by a value the
// expression read and its scope did not hold (`upper(fetch.body.nope)`),
// what was read — the path, fetch.body.nope — and the keys, sorted, at most
// MaxAvailableFields, of the object that lacked it (fetch.body's). Both are
// empty otherwise, and when a whole root name is missing.
type Error struct {
	Expr   string
	Offset int
	Msg    string
	Err    error

	Missing         string
	AvailableFields []string

	template bool // Expr is a template rather than a bare expression
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.template {
		b.WriteString("template ")
	} else {
		b.WriteString("expression ")
	}
	b.WriteString(strconv.Quote(excerpt(e.Expr, e.Offset)))
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Offset >= 0 {
		b.WriteString(" (at offset ")
		b.WriteString(strconv.Itoa(e.Offset))
		b.WriteByte(')')
	}
	return b.String()
}

// Unwrap returns the underlying cause, such as ErrBudget or ErrTimeout.
func (e *Error) Unwrap() error { return e.Err }

// errorAt builds an *Error about code at byte offset off.
func errorAt(code string, off int, err error, msg string) *Error {
	return &Error{Expr: code, Offset: off, Msg: msg, Err: err}
}

// inTemplate returns a copy of e about the template src, in which the
// expression e is about starts at byte offset base.
func (e *Error) inTemplate(src string, base int) *Error {
	c := *e
	c.Expr = src
	c.template = true
	if c.Offset >= 0 {
		c.Offset += base
	}
	return &c
}

// budgetError is the error a guarded evaluation fails with when it runs out
// of a budget; kind is ErrBudget or ErrTimeout.
type budgetError struct {
	msg  string
	kind error
}

func (e *budgetError) Error() string { return e.msg }
func (e *budgetError) Unwrap() error { return e.kind }

// excerpt shortens long sources for error messages, keeping the part
// around off.
func excerpt(s string, off int) string {
	const max, before = 80, 30
	if len(s) <= max {
		return s
	}
	start := 0
	if off > before {
		start = off - before
	}
	if start > len(s)-max {
		start = len(s) - max
	}
	end := start + max
	for start > 0 && !utf8.RuneStart(s[start]) {
		start--
	}
	for end < len(s) && !utf8.RuneStart(s[end]) {
		end++
	}
	out := s[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(s) {
		out += "…"
	}
	return out
}

// positions converts the rune offsets expr-lang reports into byte offsets.
type positions struct {
	code  string
	ascii bool
}

func newPositions(code string) positions {
	ascii := true
	for i := 0; i < len(code); i++ {
		if code[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	return positions{code: code, ascii: ascii}
}

// byteOffset returns the byte offset of the rune with index r, clamped to
// the code.
func (p positions) byteOffset(r int) int {
	if r <= 0 {
		return 0
	}
	if p.ascii {
		return min(r, len(p.code))
	}
	n := 0
	for i := range p.code {
		if n == r {
			return i
		}
		n++
	}
	return len(p.code)
}
