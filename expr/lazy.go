package expr

import "fmt"

// Lazy is a value of the scope kept out of memory, such as a node's big
// output held in a file of its run. An expression gets it loaded wherever
// it reads it: through a member or an index (`n.stdout`,
// `fetch.body.items`, `n.stdout[0:80]`, so `len(n.stdout)` is the text's
// length), as an argument of a built-in that builds text (`toJSON(n)`,
// `upper(…)`), and when a template turns it into text. A one-expression
// template that returns a list or object whole (`{{ n }}`) returns it with
// its Lazy parts; the host resolves them before a kind sees them.
type Lazy interface {
	Load() (any, error)
}

// loadName is the function the patcher wraps around every member access.
const loadName = internalPrefix + "load"

// load(guard, value) returns value, loaded when it is Lazy. The wall
// budget is for the expression's own work: the time a load takes (reading
// a file or the blob store, slow on a busy machine) moves the guard's
// deadline on by as much. guard is nil in a program without one.
func load(args ...any) (any, error) {
	v := argAt(args, 1)
	l, ok := v.(Lazy)
	if !ok {
		return v, nil
	}
	g, _ := argAt(args, 0).(*guard)
	if g == nil || g.now == nil {
		return loadLazy(l)
	}
	start := g.now()
	out, err := loadLazy(l)
	g.deadline = g.deadline.Add(g.now().Sub(start))
	return out, err
}

func loadLazy(l Lazy) (any, error) {
	v, err := l.Load()
	if err != nil {
		return nil, fmt.Errorf("reading a big value: %w", err)
	}
	return v, nil
}

// ResolveLazy returns v with its Lazy parts loaded, copying the maps and
// lists on the way to one; v is never modified, and is returned as it is
// when it holds none. Hosts call it before a kind sees a value.
func ResolveLazy(v any) (any, error) {
	out, _, err := resolveLazy(v, 0)
	return out, err
}

// resolveLazy is ResolveLazy, reporting whether anything was loaded.
func resolveLazy(v any, depth int) (any, bool, error) {
	if depth > maxDepth {
		return v, false, nil
	}
	switch x := v.(type) {
	case Lazy:
		l, err := loadLazy(x)
		if err != nil {
			return nil, false, err
		}
		out, _, err := resolveLazy(l, depth+1)
		return out, true, err
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			r, changed, err := resolveLazy(e, depth+1)
			if err != nil {
				return nil, false, err
			}
			if changed {
				if out == nil {
					out = make(map[string]any, len(x))
					for k2, e2 := range x {
						out[k2] = e2
					}
				}
				out[k] = r
			}
		}
		if out == nil {
			return v, false, nil
		}
		return out, true, nil
	case []any:
		var out []any
		for i, e := range x {
			r, changed, err := resolveLazy(e, depth+1)
			if err != nil {
				return nil, false, err
			}
			if changed {
				if out == nil {
					out = append([]any(nil), x...)
				}
				out[i] = r
			}
		}
		if out == nil {
			return v, false, nil
		}
		return out, true, nil
	}
	return v, false, nil
}

// lazyBytes adds up the sizes of the Lazy values in v that say their size
// (a Size() int64 method), stopping past limit.
func lazyBytes(v any, limit, depth int) int {
	if depth > maxDepth {
		return 0
	}
	switch x := v.(type) {
	case Lazy:
		if s, ok := x.(interface{ Size() int64 }); ok {
			return int(min(s.Size(), int64(limit)+1))
		}
	case map[string]any:
		n := 0
		for _, e := range x {
			if n += lazyBytes(e, limit, depth+1); n > limit {
				return n
			}
		}
		return n
	case []any:
		n := 0
		for _, e := range x {
			if n += lazyBytes(e, limit, depth+1); n > limit {
				return n
			}
		}
		return n
	}
	return 0
}

// resolveArgs loads the Lazy parts of a text-building built-in's
// arguments, refusing more than room bytes of them.
func resolveArgs(name string, args []any, room int) ([]any, error) {
	var out []any
	for i, a := range args {
		if n := lazyBytes(a, room, 0); n > room {
			return nil, &budgetError{
				msg:  fmt.Sprintf("memory budget exceeded: %s() would read more than %d bytes of big values", name, room),
				kind: ErrBudget,
			}
		} else if n == 0 {
			continue
		}
		r, changed, err := resolveLazy(a, 0)
		if err != nil {
			return nil, err
		}
		if changed {
			if out == nil {
				out = append([]any(nil), args...)
			}
			out[i] = r
		}
	}
	if out == nil {
		return args, nil
	}
	return out, nil
}
