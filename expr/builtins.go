package expr

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	exprlang "github.com/expr-lang/expr"
	"github.com/expr-lang/expr/builtin"
)

// guardedNames are the expr-lang builtins that build strings (or lists of
// strings) whose size expr-lang's memory budget does not count. Skein
// replaces each with a function that first counts, against ByteBudget, the
// bytes it is about to build and then calls the original builtin.
//
// Unguarded, `repeat(s, 999999)` builds a million copies of s,
// `replace(s, "x", s)` squares a string, `join(map(1..1000, s))` copies one
// a thousand times and `let s2 = s + s; let s4 = s2 + s2; …` doubles one per
// few nodes, all outside the vm's memory budget.
var guardedNames = []string{
	"repeat", "replace", "join", "split", "splitAfter",
	"toJSON", "string", "toBase64", "fromBase64", "fromJSON",
	"upper", "lower",
}

// estimates give the bytes a guarded builtin is about to build, from its
// arguments. When the arguments are not what the builtin takes, they return
// 0 and the builtin itself reports the error. Built on first use, with
// compileOptions.
var estimates = sync.OnceValue(func() map[string]func(args []any) int {
	return map[string]func(args []any) int{
		"repeat": func(args []any) int {
			s, ok1 := arg[string](args, 0)
			n, ok2 := intArg(args, 1)
			if !ok1 || !ok2 || n <= 0 || n > maxRepeat {
				return 0 // repeat reports bad counts itself
			}
			return mulSat(len(s), n)
		},
		"replace": func(args []any) int {
			s, ok1 := arg[string](args, 0)
			old, ok2 := arg[string](args, 1)
			repl, ok3 := arg[string](args, 2)
			if !ok1 || !ok2 || !ok3 {
				return 0
			}
			grow := len(repl) - len(old)
			if grow <= 0 {
				return len(s)
			}
			count := occurrences(s, old)
			if n, ok := intArg(args, 3); ok && n >= 0 && n < count {
				count = n
			}
			return addSat(len(s), mulSat(count, grow))
		},
		"join": func(args []any) int {
			sep, _ := arg[string](args, 1)
			n := 0
			switch list := argAt(args, 0).(type) {
			case []string:
				for _, s := range list {
					n = addSat(n, len(s)+len(sep))
				}
			case []any:
				for _, x := range list {
					s, _ := x.(string)
					n = addSat(n, len(s)+len(sep))
				}
			}
			return n
		},
		"split":      splitEstimate,
		"splitAfter": splitEstimate,
		"toJSON":     func(args []any) int { return jsonSize(argAt(args, 0), ByteBudget) },
		"string":     func(args []any) int { return jsonSize(argAt(args, 0), ByteBudget) },
		"toBase64": func(args []any) int {
			s, _ := arg[string](args, 0)
			return (len(s) + 2) / 3 * 4
		},
		"fromBase64": stringLen,
		"fromJSON":   stringLen,
		"upper":      stringLen,
		"lower":      stringLen,
	}
})

// maxRepeat is the largest count expr-lang's repeat accepts.
const maxRepeat = 1_000_000

// splitEstimate counts a string header per part.
func splitEstimate(args []any) int {
	s, ok1 := arg[string](args, 0)
	sep, ok2 := arg[string](args, 1)
	if !ok1 || !ok2 {
		return 0
	}
	parts := occurrences(s, sep) + 1
	if n, ok := intArg(args, 2); ok && n >= 0 && n < parts {
		parts = n
	}
	return mulSat(parts, 16)
}

func stringLen(args []any) int {
	s, _ := arg[string](args, 0)
	return len(s)
}

// occurrences counts the matches of sep in s the way strings.Replace and
// strings.Split do: an empty sep matches around every rune.
func occurrences(s, sep string) int {
	if sep == "" {
		return utf8.RuneCountInString(s) + 1
	}
	return strings.Count(s, sep)
}

var guardedSet = func() map[string]bool {
	m := make(map[string]bool, len(guardedNames)+1)
	for _, name := range guardedNames {
		m[name] = true
	}
	m[nowName] = true
	return m
}()

// nowName is the builtin that reads the clock. Skein replaces it with a
// function that reads the scope's clock (Scope.Now) through the guard, so
// that a run's templates read the run's clock: an injected one in tests,
// and in a replay the times the recorded run read.
const nowName = "now"

// nowFunction is now() and now(timezone) reading the evaluation's clock:
// now(guard) and now(guard, location) once patched.
func nowFunction() exprlang.Option {
	fn := func(params ...any) (any, error) {
		g, ok := argAt(params, 0).(*guard)
		if !ok {
			return nil, errors.New("internal error: bad guard call")
		}
		t := time.Now()
		if g.clock != nil {
			t = g.clock()
		}
		switch len(params) {
		case 1:
			return t, nil
		case 2:
			if tz, ok := params[1].(*time.Location); ok {
				return t.In(tz), nil
			}
			return nil, fmt.Errorf("now() takes a timezone (timezone(\"Europe/Paris\")), got %s", typeName(params[1]))
		}
		return nil, fmt.Errorf("invalid number of arguments (expected 0 or 1, got %d)", len(params)-1)
	}
	return exprlang.Function(nowName, fn,
		new(func(any) time.Time),
		new(func(any, *time.Location) time.Time))
}

func isGuarded(name string) bool { return guardedSet[name] }

var anyType = reflect.TypeFor[any]()

// guardedFunction registers the guarded version of the builtin name. Its
// signatures are the builtin's with the guard as a first parameter, so the
// checker still checks the user's arguments.
func guardedFunction(name string) exprlang.Option {
	orig := builtin.Builtins[builtin.Index[name]]
	estimate := estimates()[name]
	fn := func(params ...any) (any, error) {
		g, ok := argAt(params, 0).(*guard)
		if !ok {
			return nil, errors.New("internal error: bad guard call")
		}
		args, err := resolveArgs(name, params[1:], ByteBudget-g.bytes)
		if err != nil {
			return nil, err
		}
		if name == "repeat" {
			// expr-lang's repeat refuses larger counts, with a vaguer message.
			if n, ok := intArg(args, 1); ok && n > maxRepeat {
				return nil, &budgetError{
					msg:  fmt.Sprintf("memory budget exceeded: repeat() takes a count of at most %d, got %d", maxRepeat, n),
					kind: ErrBudget,
				}
			}
		}
		if err := g.account(name+"()", estimate(args)); err != nil {
			return nil, err
		}
		return callBuiltin(orig, args)
	}
	types := make([]any, 0, len(orig.Types))
	for _, t := range orig.Types {
		in := []reflect.Type{anyType}
		for i := range t.NumIn() {
			in = append(in, t.In(i))
		}
		out := make([]reflect.Type, 0, t.NumOut())
		for i := range t.NumOut() {
			out = append(out, t.Out(i))
		}
		types = append(types, reflect.Zero(reflect.FuncOf(in, out, t.IsVariadic())).Interface())
	}
	return exprlang.Function(name, fn, types...)
}

func callBuiltin(f *builtin.Function, args []any) (any, error) {
	switch {
	case f.Func != nil:
		return f.Func(args...)
	case f.Safe != nil:
		out, _, err := f.Safe(args...)
		return out, err
	case f.Fast != nil && len(args) == 1:
		return f.Fast(args[0]), nil
	}
	return nil, fmt.Errorf("invalid number of arguments for %s (got %d)", f.Name, len(args))
}

func argAt(args []any, i int) any {
	if i < len(args) {
		return args[i]
	}
	return nil
}

func arg[T any](args []any, i int) (T, bool) {
	v, ok := argAt(args, i).(T)
	return v, ok
}

func intArg(args []any, i int) (int, bool) {
	switch v := argAt(args, i).(type) {
	case int:
		return v, true
	case int64:
		return int(v), true
	case int32:
		return int(v), true
	case float64:
		return int(v), true
	}
	return 0, false
}

// mulSat and addSat saturate just past ByteBudget instead of overflowing.
func mulSat(a, b int) int {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > ByteBudget/b+1 {
		return ByteBudget + 1
	}
	return a * b
}

func addSat(a, b int) int {
	if a > ByteBudget || b > ByteBudget {
		return ByteBudget + 1
	}
	return a + b
}

// maxDepth is how deeply a value may nest before sizing gives up on it (a
// cyclic value from a Go caller would nest forever).
const maxDepth = 1000

// jsonSize estimates from above the bytes of v's indented JSON encoding; it
// stops counting once the count passes limit, and gives more than limit for
// values nested deeper than maxDepth.
func jsonSize(v any, limit int) int {
	z := sizer{limit: limit}
	z.add(v, 0)
	return z.n
}

type sizer struct {
	n, limit int
}

func (z *sizer) over() bool { return z.n > z.limit }

func (z *sizer) add(v any, depth int) {
	if z.over() {
		return
	}
	if depth > maxDepth {
		z.n = z.limit + 1
		return
	}
	line := 2*depth + 3 // newline, indent, comma
	switch v := v.(type) {
	case nil:
		z.n += 4
	case bool:
		z.n += 5
	case string:
		z.str(v)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		z.n += 24
	case []any:
		z.n += 2
		for _, x := range v {
			z.n += line
			if z.add(x, depth+1); z.over() {
				return
			}
		}
	case map[string]any:
		z.n += 2
		for k, x := range v {
			z.n += line + quotedLen(k) + 2
			if z.add(x, depth+1); z.over() {
				return
			}
		}
	case []string:
		z.n += 2
		for _, s := range v {
			z.n += line
			if z.str(s); z.over() {
				return
			}
		}
	default:
		z.reflected(reflect.ValueOf(v), depth, line)
	}
}

func (z *sizer) reflected(rv reflect.Value, depth, line int) {
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8 {
			z.n += rv.Len()*4/3 + 4 // base64
			return
		}
		z.n += 2
		for i := range rv.Len() {
			z.n += line
			if z.add(valueOf(rv.Index(i)), depth+1); z.over() {
				return
			}
		}
	case reflect.Map:
		z.n += 2
		for it := rv.MapRange(); it.Next(); {
			z.n += line + 2
			z.add(valueOf(it.Key()), depth+1)
			if z.add(valueOf(it.Value()), depth+1); z.over() {
				return
			}
		}
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			z.n += 4
			return
		}
		z.add(valueOf(rv.Elem()), depth+1)
	case reflect.String:
		z.str(rv.String())
	default:
		z.n += 64
	}
}

// str counts a string, scanning it for escapes only when it fits.
func (z *sizer) str(s string) {
	if z.n += len(s) + 2; !z.over() {
		z.n += quotedLen(s) - len(s) - 2
	}
}

func valueOf(rv reflect.Value) any {
	if !rv.IsValid() || !rv.CanInterface() {
		return nil
	}
	return rv.Interface()
}

// quotedLen is the length of s as a JSON string, counting every byte that
// may be escaped as the six bytes of \uXXXX.
func quotedLen(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c == '"', c == '\\', c == '<', c == '>', c == '&':
			n += 5
		}
	}
	return n
}
