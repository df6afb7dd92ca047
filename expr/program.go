package expr

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	exprlang "github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// Budgets of one expression.
const (
	// MaxExprLen is the most bytes an expression's source may have.
	MaxExprLen = 8 << 10
	// MaxNodes is the most AST nodes an expression may have.
	MaxNodes = 2000
	// MemoryBudget is expr-lang's vm memory budget: roughly the number of
	// elements of the ranges, arrays and maps an evaluation may build.
	MemoryBudget = 1_000_000
	// ByteBudget is the most bytes the string-building operations (+ on
	// strings, repeat, replace, join, split, toJSON, string, upper, …) may
	// produce in one evaluation. expr-lang's memory budget does not count
	// them, so without it `repeat` or a chain of `s + s` could exhaust memory.
	ByteBudget = 32 << 20
	// DefaultTimeout is the wall budget of one evaluation.
	DefaultTimeout = 100 * time.Millisecond
)

// Program is a compiled bare expression (a condition, an exit test, a check).
// It is immutable and safe for concurrent use.
type Program struct {
	code    string
	pos     positions
	prog    *vm.Program
	roots   []string // the free top-level names, each once
	whole   bool     // reads $env: give it the whole scope
	guarded bool     // calls guarded functions: give it a guard
	plain   bool     // a plain member chain: its value is data read from the scope
	loops   bool     // has predicates: watch the clock
	timeout time.Duration
	now     func() time.Time
}

// Compile compiles a bare expression, enforcing the length and node
// budgets. Errors are *Error. Compiled programs are cached (they are
// immutable), so compiling the same code again is cheap.
func Compile(code string) (*Program, error) {
	if p, ok := programs.get(code); ok {
		return p, nil
	}
	p, err := compile(code)
	if err != nil {
		return nil, err
	}
	programs.put(code, p)
	return p, nil
}

// Eval compiles code (through the cache) and evaluates it in s.
func Eval(code string, s *Scope) (any, error) {
	p, err := Compile(code)
	if err != nil {
		return nil, err
	}
	return p.Eval(s)
}

// String returns the program's source.
func (p *Program) String() string { return p.code }

// Eval evaluates the program in s within MemoryBudget, ByteBudget and the
// wall budget (DefaultTimeout), and returns its value as it is: a value read
// from s is not copied.
//
// A name s does not hold is nil, and so is a missing map key and a member of
// nil: `later.body.x` is nil while the node later has not run. nil counts as
// false for !, not, &&, ||, and, or and conditions (`!later.success` is
// true). An index out of a list's range is an error.
//
// The wall budget is checked between iterations of predicates (map, filter,
// all, …), the only loops expressions have; a single builtin call is not
// interrupted. Errors are *Error; Eval never panics.
func (p *Program) Eval(s *Scope) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, errorAt(p.code, -1, nil, fmt.Sprintf("internal error: %v", r))
		}
	}()
	env := p.env(s)
	if p.guarded {
		g := &guard{}
		if s != nil {
			g.clock = s.Now
		}
		if p.loops {
			g.now, g.timeout = p.now, p.timeout
			g.deadline = g.now().Add(p.timeout)
		}
		env[guardName] = g
	}
	var machine vm.VM
	machine.MemoryBudget = MemoryBudget
	out, err := machine.Run(p.prog, env)
	if err != nil {
		return nil, p.runError(err, env)
	}
	if !p.plain {
		if where, f, ok := nonFinite(out, 0); ok {
			return nil, errorAt(p.code, codeStart(p.code), ErrNotFinite, notFiniteMsg(where, f))
		}
	}
	return out, nil
}

// EvalBool evaluates the program and requires a bool result; any other
// result, nil included, is an error naming its type (never its value, which
// may be secret). Write `x ?? false` to read nil as false.
func (p *Program) EvalBool(s *Scope) (bool, error) {
	v, err := p.Eval(s)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, errorAt(p.code, -1, nil,
			fmt.Sprintf("the result must be a bool (true or false), got %s", typeName(v)))
	}
	return b, nil
}

// env returns the environment for one evaluation: only the names the
// program reads, unless it reads $env.
func (p *Program) env(s *Scope) map[string]any {
	if p.whole {
		return s.Env()
	}
	env := make(map[string]any, len(p.roots)+1)
	for _, name := range p.roots {
		if v, ok := s.lookup(name); ok {
			env[name] = v
		}
	}
	return env
}

// runError converts an error of expr-lang's vm; env is what the program
// read.
func (p *Program) runError(err error, env map[string]any) *Error {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return errorAt(p.code, -1, err, err.Error())
	}
	off := p.pos.byteOffset(fe.From)
	var be *budgetError
	switch {
	case errors.As(fe.Prev, &be):
		return errorAt(p.code, off, be.kind, be.msg)
	case fe.Message == "memory budget exceeded":
		return errorAt(p.code, off, ErrBudget,
			fmt.Sprintf("memory budget exceeded: the expression built more than %d elements", MemoryBudget))
	}
	msg := fe.Message
	var gap *absent
	switch {
	case strings.HasPrefix(msg, "interface conversion:"):
		msg, gap = p.conversionMsg(msg, env)
	case strings.Contains(msg, "<nil>"):
		var missing []string
		if missing, gap = p.missing(env); len(missing) > 0 {
			msg += ": " + strings.Join(missing, "; ")
		}
	}
	e := errorAt(p.code, off, fe.Prev, msg)
	if gap != nil {
		e.Missing, e.AvailableFields = gap.path, gap.fields
	}
	return e
}

// conversionMsg says, in place of Go's "interface conversion: interface {}
// is nil, not string" (a builtin given a value of another type), what the
// expression was given and which of the values it reads are missing: the
// path, and the keys that were there. It names types and keys, never
// values (one may be secret).
func (p *Program) conversionMsg(goMsg string, env map[string]any) (string, *absent) {
	got, want := "another type", "a value of another type"
	if rest, ok := strings.CutPrefix(goMsg, "interface conversion: interface {} is "); ok {
		if g, w, ok := strings.Cut(rest, ", not "); ok {
			got, want = goTypeName(g), goTypeName(w)
		}
	}
	msg := fmt.Sprintf("a function here takes %s but was given %s", want, got)
	missing, gap := p.missing(env)
	if len(missing) > 0 {
		msg += ": " + strings.Join(missing, "; ")
	}
	return msg, gap
}

// absent is the first key the program read that an object of its scope
// lacked: the path read, and the object's keys (Error.AvailableFields).
type absent struct {
	path   string
	fields []string
}

// MaxAvailableFields bounds Error.AvailableFields.
const MaxAvailableFields = 20

// missing lists the values the program reads that env does not hold: each
// path with the keys that were there. gap is the first of them that an
// object lacked (nil when only a root name is missing).
func (p *Program) missing(env map[string]any) (missing []string, gap *absent) {
	refs, err := References(p.code)
	if err != nil {
		return nil, nil
	}
	seen := map[string]bool{}
	for _, r := range refs {
		cur, ok := env[r.Root]
		where := r.Root
		if !ok {
			if !seen[where] {
				seen[where] = true
				missing = append(missing, where+" is missing")
			}
			continue
		}
		for _, key := range r.Path {
			m, isMap := cur.(map[string]any)
			if !isMap {
				break
			}
			next, has := m[key]
			if !has || next == nil {
				path := where + "." + key
				if !seen[path] {
					seen[path] = true
					if has { // there, and null: not missing, and not a key to suggest
						missing = append(missing, fmt.Sprintf("%s is null", path))
					} else {
						missing = append(missing, fmt.Sprintf("%s is missing (%s has: %s)", path, where, keyList(m)))
						if gap == nil {
							gap = &absent{path: path, fields: sortedKeys(m, MaxAvailableFields)}
						}
					}
				}
				break
			}
			cur, where = next, where+"."+key
		}
	}
	return missing, gap
}

// sortedKeys returns m's keys, sorted, at most n of them.
func sortedKeys(m map[string]any, n int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > n {
		keys = keys[:n]
	}
	return keys
}

// goTypeName names a Go type of a conversion message as a user knows it.
func goTypeName(t string) string {
	switch {
	case t == "nil":
		return "nothing (nil)"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"), strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "a bool"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a map"
	}
	return "a value of another type"
}

// keyList lists a map's keys, sorted, at most 10.
func keyList(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > 10 {
		keys = append(keys[:10], "…")
	}
	if len(keys) == 0 {
		return "nothing"
	}
	return strings.Join(keys, ", ")
}

// withClock returns a copy of p that reads the time from now and stops
// after timeout; tests use it.
func (p *Program) withClock(now func() time.Time, timeout time.Duration) *Program {
	c := *p
	c.now, c.timeout = now, timeout
	return &c
}

// compile compiles code without the cache.
func compile(code string) (_ *Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errorAt(code, -1, nil, fmt.Sprintf("internal error while compiling: %v", r))
		}
	}()
	a, err := analyze(code)
	if err != nil {
		return nil, err
	}
	pt := &patcher{shadowed: a.shadowed}
	base := compileOptions()
	opts := make([]exprlang.Option, 0, len(base)+1)
	opts = append(opts, base...)
	opts = append(opts, exprlang.Patch(pt))
	prog, err := exprlang.Compile(code, opts...)
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, "\ngoroutine ") {
			// expr-lang recovered from a panic of its own and attached the
			// stack: the first line is what a user can act on.
			first, _, _ := strings.Cut(msg, "\n")
			return nil, errorAt(code, -1, nil, "internal error while compiling: "+first)
		}
		return nil, parseError(code, newPositions(code), err)
	}
	p := &Program{
		code:    code,
		pos:     newPositions(code),
		prog:    prog,
		whole:   a.env,
		guarded: pt.guarded || a.loops,
		loops:   a.loops,
		timeout: DefaultTimeout,
		plain:   isPlain(code),
		now:     time.Now,
	}
	seen := make(map[string]bool, len(a.refs))
	for _, r := range a.refs {
		if !seen[r.Root] {
			seen[r.Root] = true
			p.roots = append(p.roots, r.Root)
		}
	}
	return p, nil
}

// compileOptions configure every compilation: a map environment (fast
// loads) where unknown names are nil, the node budget, and the guarded
// builtins in place of expr-lang's. They are made on first use, so that a
// command that compiles no expression does not pay for them.
var compileOptions = sync.OnceValue(func() []exprlang.Option {
	opts := []exprlang.Option{
		exprlang.Env(map[string]any{}),
		exprlang.AllowUndefinedVariables(),
		exprlang.MaxNodes(MaxNodes),
		exprlang.Function(tickName, tick),
		exprlang.Function(addName, add),
		exprlang.Function(loadName, load, new(func(any, any) any)),
	}
	for _, name := range guardedNames {
		opts = append(opts, exprlang.DisableBuiltin(name), guardedFunction(name))
	}
	opts = append(opts, exprlang.DisableBuiltin(nowName), nowFunction())
	return opts
})

// patcher rewrites the AST before it is compiled:
//   - a free name spelled like a built-in function but not called, such as
//     join in `join.text`, reads the node of that name from the environment;
//   - member accesses become optional (`a.b` behaves as `a?.b`), so reading
//     a member of nil, such as the output of a node that has not run, is nil,
//     and what they read is loaded when it is Lazy;
//   - nil is false for !, not, &&, ||, and, or and the condition of ?: and
//     if/else, so `!later.success` holds while later has not run;
//   - the body of every predicate calls the guard first, which stops the loop
//     once the wall budget is spent;
//   - string concatenation and the guarded builtins get the guard as a
//     hidden first argument and count the bytes they build; now() gets it
//     to read the scope's clock.
type patcher struct {
	guarded  bool
	shadowed map[int]bool // see analysis.shadowed
}

func (pt *patcher) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if pt.shadowed[n.Location().From] {
			// A node named like a built-in function: the checker would take
			// the bare name for the function, so read it as $env["name"].
			loc := n.Location()
			prop := &ast.StringNode{Value: n.Value}
			prop.SetLocation(loc)
			m := &ast.MemberNode{Node: identAt(envName, loc), Property: prop}
			m.SetLocation(loc)
			m.SetType(anyType)
			ast.Patch(node, m)
		}
	case *ast.MemberNode:
		if n.Method {
			return
		}
		n.Optional = true
		if inner, ok := n.Node.(*ast.ChainNode); ok {
			n.Node = inner.Node // one chain for the whole access path
		}
		// What a member access reads may be Lazy (a big output kept in a
		// file): load it, the time that takes not counted against the wall
		// budget (the guard, when the program has one).
		chain := &ast.ChainNode{Node: n}
		chain.SetLocation(n.Location())
		call := &ast.CallNode{Callee: identAt(loadName, n.Location()),
			Arguments: []ast.Node{identAt(guardName, n.Location()), chain}}
		ast.Patch(node, call)
	case *ast.ChainNode:
		if inner, ok := n.Node.(*ast.ChainNode); ok {
			*node = inner
		}
	case *ast.PredicateNode:
		loc := n.Node.Location()
		call := &ast.CallNode{
			Callee:    identAt(tickName, loc),
			Arguments: []ast.Node{identAt(guardName, loc), n.Node},
		}
		call.SetLocation(loc)
		n.Node = call
		pt.guarded = true
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok && isGuarded(id.Value) {
			n.Arguments = append([]ast.Node{identAt(guardName, id.Location())}, n.Arguments...)
			// A check before this patch may have picked an overload for
			// the call without the guard (join(l, s) matches join's
			// one-list form when l and s are of unknown type); forget it,
			// so the check after the patch picks one for every argument
			// (the call's type too: a check skips a call that has one).
			id.SetType(nil)
			n.SetType(nil)
			pt.guarded = true
		}
	case *ast.UnaryNode:
		if n.Operator == "!" || n.Operator == "not" {
			nilIsFalse(&n.Node)
		}
	case *ast.ConditionalNode:
		nilIsFalse(&n.Cond)
	case *ast.BinaryNode:
		switch n.Operator {
		case "&&", "||", "and", "or":
			nilIsFalse(&n.Left)
			nilIsFalse(&n.Right)
		}
		if n.Operator == "+" && mayBeString(n.Left) && mayBeString(n.Right) {
			ast.Patch(node, &ast.CallNode{
				Callee:    identAt(addName, n.Location()),
				Arguments: []ast.Node{identAt(guardName, n.Location()), n.Left, n.Right},
			})
			pt.guarded = true
		}
	}
}

// nilIsFalse makes an operand of a boolean operator whose type is unknown
// read nil as false (`x ?? false`), so that `!later.success` is true while
// the node later has not run.
func nilIsFalse(n *ast.Node) {
	if (*n).Type().Kind() != reflect.Interface {
		return
	}
	loc := (*n).Location()
	f := &ast.BoolNode{Value: false}
	f.SetLocation(loc)
	c := &ast.BinaryNode{Operator: "??", Left: *n, Right: f}
	c.SetLocation(loc)
	*n = c
}

func identAt(name string, loc file.Location) *ast.IdentifierNode {
	id := &ast.IdentifierNode{Value: name}
	id.SetLocation(loc)
	return id
}

// mayBeString reports whether the checker left open that n is a string.
func mayBeString(n ast.Node) bool {
	k := n.Type().Kind()
	return k == reflect.String || k == reflect.Interface
}

// typeName names the type of an expression value in user terms.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case string:
		return "a string"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "an integer"
	case float32, float64:
		return "a float"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	}
	switch reflect.TypeOf(v).Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map:
		return "a map"
	}
	return fmt.Sprintf("a value of type %T", v)
}

// programs caches compiled programs by source.
var programs = newSourceCache[*Program]()

// sourceCacheSize bounds a sourceCache: when full it starts over.
const sourceCacheSize = 2048

// sourceCache keeps what was made of a source text (a compiled program, a
// parsed template), which is immutable, for the next use of the same
// text. It is bounded: when full it starts over.
type sourceCache[T any] struct {
	mu sync.RWMutex
	m  map[string]T
}

func newSourceCache[T any]() *sourceCache[T] {
	return &sourceCache[T]{m: make(map[string]T)}
}

func (c *sourceCache[T]) get(src string) (T, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.m[src]
	return v, ok
}

func (c *sourceCache[T]) put(src string, v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= sourceCacheSize {
		clear(c.m)
	}
	c.m[src] = v
}
