// Package expr is Skein's expression and template layer over expr-lang
// (github.com/expr-lang/expr).
//
// Workflow fields hold two kinds of source. Bare expressions (condition:,
// exit:, expr:) are compiled with Compile and evaluated with Program.Eval or
// Program.EvalBool. Every other string is a template: text with
// `{{ expr }}` parts, parsed with ParseTemplate and rendered with
// Template.Render, or rendered in place inside a whole parameter value with
// RenderValue.
//
// Expressions read a Scope: inputs, trigger, vars, secrets, execution, loop,
// and one name per finished node, bound to the node's output object. Tool
// and node results become output objects through Normalize (the
// variable-extraction rule); SplitDirectives takes the "_"-prefixed
// directives out of them. A name the scope does not hold, a missing map key
// and a member of nil are all nil, so reading the output of a node that has
// not run is not an error; workflow validation catches typos statically with
// References (or Inspect, which adds warnings), which only parse and are
// fast.
//
// A node may be named like a built-in function. Read (`join`, `join.text`)
// the name is the node; called (`join(xs, ",")`) it is the function.
// `$env.join` and `::join(…)` say which explicitly.
//
// Values from the scope are data. Rendering evaluates only the template's
// own source: a node output that contains "{{ secrets.X }}" renders as that
// literal text.
//
// Every evaluation is bounded: MaxExprLen bytes of source, MaxNodes AST
// nodes, expr-lang's MemoryBudget, ByteBudget bytes of strings built, and
// DefaultTimeout of wall time, not counting the time a member access takes
// to load a Lazy value. Errors are *Error values carrying the source
// and the byte offset of the problem; errors.Is(err, ErrBudget) and
// errors.Is(err, ErrTimeout) tell budget failures apart. A value that is or
// holds NaN or an infinity is an error too (ErrNotFinite): a run records
// values as JSON, which has no such numbers.
package expr
