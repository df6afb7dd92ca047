package expr

import (
	"strings"
	"sync"

	"github.com/expr-lang/expr/builtin"
)

// builtinNames are expr-lang's built-in function names, gathered on first
// use.
var builtinNames = sync.OnceValue(func() map[string]bool {
	m := make(map[string]bool, len(builtin.Builtins))
	for _, f := range builtin.Builtins {
		m[f.Name] = true
	}
	return m
})

// simplePath recognises the most common expression, a plain member chain
// such as `fetch.body.items` with optional spaces around it, without the
// parser. It reports false for anything else, which then takes the full
// path; FuzzReferences checks both agree.
func simplePath(code string) (Ref, bool) {
	i, n := 0, len(code)
	if n > MaxExprLen {
		return Ref{}, false
	}
	for i < n && (code[i] == ' ' || code[i] == '\t' || code[i] == '\n' || code[i] == '\r') {
		i++
	}
	end := n
	for end > i && (code[end-1] == ' ' || code[end-1] == '\t' || code[end-1] == '\n' || code[end-1] == '\r') {
		end--
	}
	if i == end {
		return Ref{}, false
	}
	start := i
	parts := make([]string, 0, strings.Count(code[i:end], ".")+1)
	for {
		j := i
		if j >= end || !identStart(code[j]) {
			return Ref{}, false
		}
		for j < end && identPart(code[j]) {
			j++
		}
		parts = append(parts, code[i:j])
		if j == end {
			break
		}
		if code[j] != '.' {
			return Ref{}, false
		}
		i = j + 1
	}
	for _, p := range parts {
		if IsKeyword(p) {
			return Ref{}, false
		}
	}
	r := Ref{Root: parts[0], Offset: start}
	if len(parts) > 1 {
		r.Path = parts[1:]
	}
	return r, true
}

func identStart(c byte) bool { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

func identPart(c byte) bool { return identStart(c) || (c >= '0' && c <= '9') }

// IsBuiltin reports whether name is a function or a keyword expressions
// know. A node may still have the name of a function: read without a call
// (`join.text`, `join`) the name is the node, called (`join(xs, ",")`) it is
// the function. Keywords cannot name anything.
func IsBuiltin(name string) bool { return isFunction(name) || IsKeyword(name) }

// isFunction reports whether name is a built-in function.
func isFunction(name string) bool { return builtinNames()[name] || isGuarded(name) }
