package expr

import (
	"errors"
	"fmt"
	"time"

	"github.com/expr-lang/expr/vm/runtime"
)

// guard is the per-evaluation state the patched program reaches through the
// hidden name $__guard: the clock and the bytes built so far.
type guard struct {
	now      func() time.Time
	clock    func() time.Time // what now() reads (Scope.Now); nil: time.Now
	timeout  time.Duration
	deadline time.Time
	ticks    uint32
	bytes    int
}

// tickEvery is how many predicate iterations pass between clock reads.
const tickEvery = 32

// tick is called by every predicate iteration: tick(guard, value) returns
// value, or fails once the wall budget is spent.
func tick(args ...any) (any, error) {
	g, ok := argAt(args, 0).(*guard)
	if !ok || len(args) != 2 {
		return nil, errors.New("internal error: bad guard call")
	}
	g.ticks++
	if g.ticks%tickEvery == 0 && g.now != nil && g.now().After(g.deadline) {
		return nil, &budgetError{
			msg:  fmt.Sprintf("evaluation took longer than %v", g.timeout),
			kind: ErrTimeout,
		}
	}
	return args[1], nil
}

// account counts n bytes about to be built by what, and fails instead when
// they would take the evaluation past ByteBudget.
func (g *guard) account(what string, n int) error {
	if n < 0 || n > ByteBudget-g.bytes {
		return &budgetError{
			msg:  fmt.Sprintf("memory budget exceeded: %s would take the bytes this evaluation built past %d", what, ByteBudget),
			kind: ErrBudget,
		}
	}
	g.bytes += n
	return nil
}

// add is `+` for operands that may be strings: add(guard, a, b).
func add(args ...any) (any, error) {
	g, ok := argAt(args, 0).(*guard)
	if !ok || len(args) != 3 {
		return nil, errors.New("internal error: bad guard call")
	}
	if x, ok := args[1].(string); ok {
		if y, ok := args[2].(string); ok {
			if err := g.account("a string concatenation (+)", len(x)+len(y)); err != nil {
				return nil, err
			}
			return x + y, nil
		}
	}
	return runtime.Add(args[1], args[2]), nil
}
