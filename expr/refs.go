package expr

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
)

// Ref is a free name an expression reads: a node id or a scope root, and the
// constant member path read from it.
//
// Path holds the names of the member accesses that follow the root, as long
// as they are constant (`a.b` and `a["b"]` both give "b"); it stops at the
// first index that is not a string literal, so `fetch.body.items[0].name`
// gives Root "fetch" and Path ["body", "items"]. Offset is the byte offset of
// the root in the expression.
type Ref struct {
	Root   string
	Path   []string
	Offset int
}

// Names the guarded programs use internally; user code may not use the
// prefix.
const (
	internalPrefix = "$__"
	guardName      = "$__guard"
	tickName       = "$__tick"
	addName        = "$__add"
	envName        = "$env"
)

// keywords are the words expr-lang's lexer reads as operators or literals;
// a name spelled like one cannot be referenced.
var keywords = map[string]bool{
	"true": true, "false": true, "nil": true,
	"not": true, "in": true, "and": true, "or": true, "let": true, "if": true, "else": true,
	"matches": true, "contains": true, "startsWith": true, "endsWith": true,
}

// IsKeyword reports whether name is an expression keyword (in, not, and,
// or, let, if, else, matches, contains, startsWith, endsWith, true, false,
// nil). A node with such an id could not be referenced in expressions.
func IsKeyword(name string) bool { return keywords[name] }

// nodeLimitMsg is the message expr-lang's parser fails with when an
// expression has more than the configured number of nodes.
const nodeLimitMsg = "compilation failed: expression exceeds maximum allowed nodes"

// parseConfig makes the parser see the AST Compile will see: the guarded
// builtins are calls of functions rather than builtin nodes. The parser only
// reads it. It is made on first use.
var parseConfig = sync.OnceValue(func() *conf.Config {
	c := &conf.Config{
		MaxNodes:  MaxNodes,
		Functions: conf.FunctionsTable{},
		Disabled:  map[string]bool{},
	}
	for _, name := range append(guardedNames[:len(guardedNames):len(guardedNames)], nowName) {
		c.Functions[name] = &builtin.Function{Name: name}
		c.Disabled[name] = true
	}
	return c
})

// References returns the free names code reads, in source order, one Ref per
// occurrence. Names bound inside the expression (let variables, the
// predicate pointers #, #acc, #index and .field) and function names are not
// references. Syntax errors, unknown functions and exceeded length or node
// budgets are returned as *Error.
//
// References only parses; it neither type-checks nor compiles.
func References(code string) ([]Ref, error) {
	if r, ok := simplePath(code); ok {
		return []Ref{r}, nil
	}
	a, err := analyze(code)
	if err != nil {
		return nil, err
	}
	return a.refs, nil
}

// Warning is something about an expression that is likely a mistake
// although it compiles, such as a division by the constant 0. Offset is a
// byte offset into the expression.
type Warning struct {
	Offset int
	Msg    string
}

// Inspect returns what References returns, plus warnings about the
// expression: a division (/) by a literal 0, whose NaN or infinity is an
// error once it is (part of) the value, and a remainder (%) by a literal 0,
// which always fails. An expression that calls a function is compiled, so
// a call with arguments the function does not take is an error wrapping
// ErrCall; the references and warnings come with that one.
func Inspect(code string) ([]Ref, []Warning, error) {
	if r, ok := simplePath(code); ok {
		return []Ref{r}, nil, nil
	}
	a, err := analyze(code)
	if err != nil {
		return nil, nil, err
	}
	if a.calls {
		// The type checker sees what a call's arguments are (upper(1, 2),
		// now("UTC")): compile it now, as its first evaluation would.
		// The program is cached, so the run does not compile it again.
		if _, err := Compile(code); err != nil {
			var e *Error
			if errors.As(err, &e) && e.Err == nil {
				c := *e
				c.Err = ErrCall
				return a.refs, a.warnings, &c
			}
			return nil, nil, err
		}
	}
	for _, z := range a.zones {
		if _, err := time.LoadLocation(z.Root); err != nil {
			return a.refs, a.warnings, errorAt(code, z.Offset, ErrCall,
				fmt.Sprintf(`timezone(%q): no such timezone on this machine; write an IANA name such as "Europe/Paris", "America/New_York" or "UTC"`, z.Root))
		}
	}
	return a.refs, a.warnings, nil
}

// analysis is what one pass over an expression's AST finds.
type analysis struct {
	refs  []Ref
	env   bool // reads $env, so needs the whole scope
	loops bool // has predicates, which loop
	// shadowed holds the rune offsets of the free names spelled like a
	// built-in function that are read, not called (`join.text`): they name
	// a node, and compile reads them from the environment.
	shadowed map[int]bool
	warnings []Warning
	calls    bool // calls a function or a method
	// zones are the timezone("…") calls with a literal name: Inspect
	// looks each up.
	zones []Ref
}

// analyze checks the length budget, parses code and walks its AST.
func analyze(code string) (a *analysis, err error) {
	if len(code) > MaxExprLen {
		return nil, errorAt(code, MaxExprLen, ErrBudget,
			fmt.Sprintf("expression is %d bytes; the limit is %d", len(code), MaxExprLen))
	}
	pos := newPositions(code)
	defer func() {
		if r := recover(); r != nil {
			a, err = nil, errorAt(code, -1, nil, fmt.Sprintf("internal error while parsing: %v", r))
		}
	}()
	// A fresh parser each time: expr-lang's Parser does not fully reset its
	// state between parses.
	tree, perr := parser.ParseWithConfig(code, parseConfig())
	if perr != nil {
		return nil, parseError(code, pos, perr)
	}
	w := walker{pos: pos, a: &analysis{}}
	w.walk(tree.Node)
	if w.err != nil {
		return nil, w.err
	}
	return w.a, nil
}

// otherFunctions says what to write for functions other template and
// expression languages have under another name.
var otherFunctions = map[string]string{
	"default":   "write x ?? fallback (?? gives its right side when its left is nil)",
	"length":    "write len(x)",
	"size":      "write len(x)",
	"str":       "write string(x)",
	"tostring":  "write string(x)",
	"to_string": "write string(x)",
	"tojson":    "write toJSON(x)",
	"to_json":   "write toJSON(x)",
	"from_json": "write fromJSON(x)",
	"lowercase": "write lower(x)",
	"uppercase": "write upper(x)",
	"strip":     "write trim(x)",
	"range":     "write a..b for the whole numbers from a to b (1..5)",
}

// pipedName matches a pipe into a bare name, as template languages write
// filters ("x | upper", "x|length"), not an || : group 1 is the name.
var pipedName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[^|])\|\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:$|\|(?:[^|]|$))`)
})

// parseError converts an error of expr-lang's parser or compiler.
func parseError(code string, pos positions, err error) *Error {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return errorAt(code, -1, err, err.Error())
	}
	off := pos.byteOffset(fe.From)
	if fe.Message == nodeLimitMsg {
		return errorAt(code, off, ErrBudget,
			fmt.Sprintf("expression has more than %d nodes; the limit is %d", MaxNodes, MaxNodes))
	}
	if m := pipedName().FindStringSubmatchIndex(code); m != nil && strings.HasPrefix(fe.Message, "unexpected token") {
		// inputs.name | upper, a template language's filter: a pipe here
		// passes its left side to a call.
		name := code[m[2]:m[3]]
		msg := fmt.Sprintf("a pipe passes its left side to a call: write | %s()", name)
		if alt, ok := otherFunctions[name]; ok {
			msg = fmt.Sprintf("a pipe passes its left side to a call, and there is no function %s: %s", name, alt)
		}
		return errorAt(code, m[2], fe.Prev, msg)
	}
	if t, ok := strings.CutPrefix(fe.Message, "cannot use "); ok && strings.Contains(t, " as argument (type *time.Location) to call now") {
		t, _, _ = strings.Cut(t, " ")
		return errorAt(code, off, fe.Prev, fmt.Sprintf(`now() takes a timezone, not a value of type %s: now(timezone("Europe/Paris"))`, t))
	}
	return errorAt(code, off, fe.Prev, strings.TrimSpace(fe.Message))
}

// walker collects the free names of an AST.
type walker struct {
	pos  positions
	a    *analysis
	lets []string // let variables in scope, innermost last
	err  *Error
}

func (w *walker) bound(name string) bool {
	for i := len(w.lets) - 1; i >= 0; i-- {
		if w.lets[i] == name {
			return true
		}
	}
	return false
}

func (w *walker) fail(loc file.Location, msg string) {
	if w.err == nil {
		w.err = errorAt(w.pos.code, w.pos.byteOffset(loc.From), nil, msg)
	}
}

func (w *walker) ident(n *ast.IdentifierNode) bool {
	if strings.HasPrefix(n.Value, internalPrefix) {
		w.fail(n.Location(), fmt.Sprintf("the name %s is reserved", n.Value))
		return false
	}
	return true
}

func (w *walker) walk(node ast.Node) {
	if w.err != nil {
		return
	}
	switch n := node.(type) {
	case *ast.IdentifierNode:
		if !w.ident(n) {
			return
		}
		if n.Value == envName {
			w.a.env = true
			return
		}
		if !w.bound(n.Value) {
			w.shadow(n)
			w.add(n.Value, nil, n.Location())
		}
	case *ast.MemberNode, *ast.ChainNode:
		w.member(n)
	case *ast.SliceNode:
		w.walk(n.Node)
		w.walk(n.From)
		w.walk(n.To)
	case *ast.CallNode:
		w.a.calls = true
		switch callee := n.Callee.(type) {
		case *ast.IdentifierNode:
			if !w.ident(callee) {
				return
			}
			if _, ok := parseConfig().Functions[callee.Value]; !ok {
				msg := fmt.Sprintf("unknown function %s", callee.Value)
				if alt, ok := otherFunctions[callee.Value]; ok {
					msg += "; " + alt
				}
				w.fail(callee.Location(), msg)
				return
			}
		case *ast.MemberNode:
			if callee.Method {
				// A method call: the method name is not part of the path.
				w.member(callee.Node)
				break
			}
			w.walk(callee)
		default:
			w.walk(callee)
		}
		for _, arg := range n.Arguments {
			w.walk(arg)
		}
	case *ast.BuiltinNode:
		w.a.calls = true
		if n.Name == "timezone" && len(n.Arguments) == 1 {
			if name, ok := n.Arguments[0].(*ast.StringNode); ok {
				w.a.zones = append(w.a.zones, Ref{Root: name.Value, Offset: w.pos.byteOffset(name.Location().From)})
			}
		}
		for _, arg := range n.Arguments {
			w.walk(arg)
		}
	case *ast.PredicateNode:
		w.a.loops = true
		w.walk(n.Node)
	case *ast.UnaryNode:
		w.walk(n.Node)
	case *ast.BinaryNode:
		if (n.Operator == "/" || n.Operator == "%") && isZero(n.Right) {
			msg := "divides by the constant 0, which gives NaN or an infinity: an error when it ends up in the expression's value"
			if n.Operator == "%" {
				msg = "takes a remainder by the constant 0, which fails when it is evaluated"
			}
			w.a.warnings = append(w.a.warnings, Warning{Offset: w.pos.byteOffset(n.Right.Location().From), Msg: msg})
		}
		w.walk(n.Left)
		w.walk(n.Right)
	case *ast.ConditionalNode:
		w.walk(n.Cond)
		w.walk(n.Exp1)
		w.walk(n.Exp2)
	case *ast.VariableDeclaratorNode:
		w.walk(n.Value)
		w.lets = append(w.lets, n.Name)
		w.walk(n.Expr)
		w.lets = w.lets[:len(w.lets)-1]
	case *ast.SequenceNode:
		for _, x := range n.Nodes {
			w.walk(x)
		}
	case *ast.ArrayNode:
		for _, x := range n.Nodes {
			w.walk(x)
		}
	case *ast.MapNode:
		for _, x := range n.Pairs {
			w.walk(x)
		}
	case *ast.PairNode:
		w.walk(n.Key)
		w.walk(n.Value)
	}
	// Literals and pointers (#, #acc, .field) name nothing free.
}

// member walks a chain of member accesses: the base, then the properties.
// When the base is a free name the chain's constant prefix is its path.
func (w *walker) member(node ast.Node) {
	var props []ast.Node // outermost first
	base := node
loop:
	for {
		switch n := base.(type) {
		case *ast.ChainNode:
			base = n.Node
		case *ast.MemberNode:
			props = append(props, n.Property)
			base = n.Node
		default:
			break loop
		}
	}
	i := len(props) - 1 // the innermost property
	if id, ok := base.(*ast.IdentifierNode); ok && w.ident(id) && !w.bound(id.Value) {
		root, loc := id.Value, id.Location()
		if root == envName {
			w.a.env = true
			// $env.fetch.body reads fetch: the first property is the root.
			s, ok := stringProp(props, i)
			if !ok {
				w.walkProps(props)
				return
			}
			root, loc = s.Value, s.Location()
			i--
		}
		if root == id.Value {
			w.shadow(id)
		}
		var path []string
		for ; i >= 0; i-- {
			s, ok := stringProp(props, i)
			if !ok {
				break
			}
			path = append(path, s.Value)
		}
		w.add(root, path, loc)
	} else {
		w.walk(base)
	}
	w.walkProps(props)
}

// isZero reports whether n is the literal 0 (or 0.0).
func isZero(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.IntegerNode:
		return n.Value == 0
	case *ast.FloatNode:
		return n.Value == 0
	}
	return false
}

func stringProp(props []ast.Node, i int) (*ast.StringNode, bool) {
	if i < 0 {
		return nil, false
	}
	s, ok := props[i].(*ast.StringNode)
	return s, ok
}

func (w *walker) walkProps(props []ast.Node) {
	for i := len(props) - 1; i >= 0; i-- {
		w.walk(props[i])
	}
}

// shadow records a free name that is read rather than called when a
// built-in function has the same name.
func (w *walker) shadow(id *ast.IdentifierNode) {
	if !isFunction(id.Value) {
		return
	}
	if w.a.shadowed == nil {
		w.a.shadowed = make(map[int]bool)
	}
	w.a.shadowed[id.Location().From] = true
}

func (w *walker) add(root string, path []string, loc file.Location) {
	w.a.refs = append(w.a.refs, Ref{Root: root, Path: path, Offset: w.pos.byteOffset(loc.From)})
}
