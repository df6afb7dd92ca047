package expr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEval(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		code string
		want any
	}{
		{name: "input", code: "inputs.city", want: "Paris"},
		{name: "member chain", code: "fetch.body.items[0].name", want: "first"},
		{name: "index by string", code: `fetch["body"]["items"][1]["name"]`, want: "second"},
		{name: "unknown top-level name is nil", code: "nope", want: nil},
		{name: "member of a node that has not run is nil", code: "nope.body.x", want: nil},
		{name: "missing key is nil", code: "fetch.nope", want: nil},
		{name: "member of a missing key is nil", code: "fetch.nope.deeper[0]", want: nil},
		{name: "success of a node that has not run", code: "nope.success == nil", want: true},
		{name: "loop outside loops is nil", code: "loop == nil && loop.item == nil", want: true},
		{name: "not of nil is true", code: "!later.success && not nope", want: true},
		{name: "nil is false in and", code: "later.success && true", want: false},
		{name: "nil is false in or", code: "later.success || nope or false", want: false},
		{name: "nil is false in a ternary", code: `later.success ? "ran" : "not yet"`, want: "not yet"},
		{name: "nil is false in if", code: `if later.success { 1 } else { 2 }`, want: 2},
		{name: "coalesce", code: "later.text ?? inputs.city", want: "Paris"},
		{name: "empty roots still have a length", code: "len(vars)", want: 0},
		{name: "predicate", code: "any(fetch.body.items, .rain > 0.5)", want: true},
		{name: "map with pointer", code: "map(fetch.body.items, #.name)", want: []any{"first", "second"}},
		{name: "reduce", code: "reduce(inputs.tags, #acc + #, '')", want: "ab"},
		{name: "let", code: "let n = inputs.days; n * 2", want: 6},
		{name: "env", code: `$env.inputs.city + $env["fetch"].body.items[0].name`, want: "Parisfirst"},
		{name: "string concatenation", code: `inputs.city + "!"`, want: "Paris!"},
		{name: "number addition", code: "inputs.days + 1", want: 4},
		{name: "float addition", code: "inputs.rate + inputs.days", want: 5.5},
		{name: "range with a computed end", code: "1..(inputs.days + 1)", want: []int{1, 2, 3, 4}},
		{name: "repeat", code: `repeat("ab", 3)`, want: "ababab"},
		{name: "forced builtin is still guarded", code: `::repeat("ab", 2)`, want: "abab"},
		{name: "replace", code: `replace("a-b-c", "-", "+")`, want: "a+b+c"},
		{name: "join", code: `join(inputs.tags, ",")`, want: "a,b"},
		{name: "split", code: `split("a,b", ",")`, want: []string{"a", "b"}},
		{name: "upper with pipe", code: "inputs.city | upper()", want: "PARIS"},
		{name: "toJSON", code: "toJSON(inputs.tags)", want: "[\n  \"a\",\n  \"b\"\n]"},
		{name: "fromJSON", code: `fromJSON("[1]")`, want: []any{1.0}},
		{name: "string", code: "string(inputs.days)", want: "3"},
		{name: "toBase64", code: `fromBase64(toBase64("hi"))`, want: "hi"},
		{name: "data is not evaluated", code: "a.text", want: "{{ secrets.K }}"},
		{name: "conditional", code: `fetch.status == 200 ? "ok" : "bad"`, want: "ok"},
		{name: "sequence", code: "1; 2", want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Eval(tt.code, testScope())
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestEvalNilScope(t *testing.T) {
	t.Parallel()

	got, err := Eval("inputs.x == nil && nodeid == nil && len(secrets) == 0", nil)
	require.NoError(t, err)
	require.Equal(t, true, got)
}

func TestEvalErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		code       string
		wantMsg    string
		wantOffset int
	}{
		{name: "index out of range", code: "inputs.tags[5]", wantMsg: "index out of range: 5", wantOffset: 11},
		{name: "bad operands", code: "inputs.tags + 1", wantMsg: "invalid operation", wantOffset: 12},
		{name: "bad concatenation", code: `inputs.city + inputs.tags`, wantMsg: "invalid operation", wantOffset: 12},
		{name: "builtin argument type", code: "upper(inputs.days)", wantMsg: "a function here takes a string but was given a number", wantOffset: 0},
		{name: "compile type error", code: `"a" + 1`, wantMsg: "invalid operation: + (mismatched types string and int)", wantOffset: 4},
		{name: "argument count", code: `repeat("x")`, wantMsg: "not enough arguments to call repeat", wantOffset: 0},
		{name: "reduce of empty list", code: "reduce([], #acc)", wantMsg: "reduce of empty array", wantOffset: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Eval(tt.code, testScope())
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Contains(t, e.Msg, tt.wantMsg)
			require.Equal(t, tt.code, e.Expr)
			require.Equal(t, tt.wantOffset, e.Offset)
		})
	}
}

func TestEvalBool(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		code    string
		want    bool
		wantErr string
	}{
		{name: "true", code: "fetch.status == 200", want: true},
		{name: "false", code: "!fetch.success"},
		{name: "string", code: "inputs.city", wantErr: "the result must be a bool (true or false), got a string"},
		{name: "integer", code: "inputs.days", wantErr: "got an integer"},
		{name: "float", code: "inputs.rate", wantErr: "got a float"},
		{name: "list", code: "inputs.tags", wantErr: "got a list"},
		{name: "map", code: "fetch.body", wantErr: "got a map"},
		{name: "nil", code: "fetch.nope", wantErr: "got nil"},
		{name: "evaluation error", code: "inputs.tags[9]", wantErr: "index out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Compile(tt.code)
			require.NoError(t, err)
			got, err := p.EvalBool(testScope())
			if tt.wantErr != "" {
				var e *Error
				require.ErrorAs(t, err, &e)
				require.Contains(t, e.Msg, tt.wantErr)
				require.NotContains(t, err.Error(), "Paris", "errors must not show values, which may be secret")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestBudgets(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		code    string
		wantMsg string
	}{
		{
			name:    "expression too long",
			code:    "1" + strings.Repeat(" ", MaxExprLen),
			wantMsg: "expression is 8193 bytes; the limit is 8192",
		},
		{
			name:    "too many nodes",
			code:    strings.Repeat("[", MaxNodes+1) + strings.Repeat("]", MaxNodes+1),
			wantMsg: "expression has more than 2000 nodes; the limit is 2000",
		},
		{
			name:    "huge range",
			code:    "map(1..10000000, #)",
			wantMsg: "memory budget exceeded: the expression built more than 1000000 elements",
		},
		{
			name:    "repeat count",
			code:    `repeat("x", 10000000)`,
			wantMsg: "repeat() takes a count of at most 1000000, got 10000000",
		},
		{
			name:    "repeat of a long string",
			code:    `repeat(repeat("x", 1000), 1000000)`,
			wantMsg: "memory budget exceeded: repeat() would take the bytes this evaluation built past 33554432",
		},
		{
			name:    "replace squares a string",
			code:    `let s = repeat("ab", 10000); replace(s, "a", s)`,
			wantMsg: "replace() would take the bytes",
		},
		{
			name:    "doubling by concatenation",
			code:    `let a = repeat("x", 1000000); let b = a + a; let c = b + b; let d = c + c; let e = d + d; let f = e + e; let g = f + f; len(g)`,
			wantMsg: "a string concatenation (+) would take the bytes",
		},
		{
			name:    "doubling in a reduce",
			code:    `reduce(1..40, #acc + #acc, "x")`,
			wantMsg: "a string concatenation (+) would take the bytes",
		},
		{
			name:    "join of one string many times",
			code:    `let s = repeat("ab", 100000); join(map(1..1000, s))`,
			wantMsg: "join() would take the bytes",
		},
		{
			name:    "toJSON of one string many times",
			code:    `let s = repeat("ab", 100000); toJSON(map(1..1000, s))`,
			wantMsg: "toJSON() would take the bytes",
		},
		{
			name:    "string of one string many times",
			code:    `let s = repeat("ab", 100000); string(map(1..1000, s))`,
			wantMsg: "string() would take the bytes",
		},
		{
			name:    "split into many parts, many times",
			code:    `let s = repeat("a", 900000); map(1..10, split(s, ""))`,
			wantMsg: "split() would take the bytes",
		},
		{
			name:    "copies in a loop",
			code:    `let s = repeat("A", 100000); map(1..1000, upper(s))`,
			wantMsg: "upper() would take the bytes",
		},
		{
			name:    "nested toBase64",
			code:    `let s = repeat("a", 1000000); toBase64(toBase64(toBase64(toBase64(toBase64(toBase64(toBase64(toBase64(s))))))))`,
			wantMsg: "toBase64() would take the bytes",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := evalTimeless(tt.code, nil)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Contains(t, e.Msg, tt.wantMsg)
			require.ErrorIs(t, err, ErrBudget)
			require.NotErrorIs(t, err, ErrTimeout)
		})
	}
}

// evalTimeless evaluates code on a clock that stands still, so that slow
// machines (or the race detector) cannot turn a budget error into a timeout.
func evalTimeless(code string, s *Scope) (any, error) {
	p, err := compile(code)
	if err != nil {
		return nil, err
	}
	return p.withClock(func() time.Time { return time.Unix(0, 0) }, DefaultTimeout).Eval(s)
}

// slowCode loops a billion times without allocating: only the wall budget
// stops it.
const slowCode = "let r = 1..1000; all(r, all(r, all(r, true)))"

func TestTimeout(t *testing.T) {
	t.Parallel()

	start := time.Now()
	_, err := Eval(slowCode, nil)
	elapsed := time.Since(start)

	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "evaluation took longer than 100ms", e.Msg)
	require.ErrorIs(t, err, ErrTimeout)
	// That it stops once its budget is spent, however busy the machine,
	// is TestTimeoutClock's, on a clock the test controls.
	require.GreaterOrEqual(t, elapsed, DefaultTimeout)
}

// TestTimeoutClock runs the wall budget on a clock the test controls.
func TestTimeoutClock(t *testing.T) {
	t.Parallel()

	p, err := compile(slowCode)
	require.NoError(t, err)
	var reads atomic.Int64
	epoch := time.Unix(0, 0)
	clock := func() time.Time {
		// Every read moves the clock one second on.
		return epoch.Add(time.Duration(reads.Add(1)) * time.Second)
	}
	_, err = p.withClock(clock, 10*time.Second).Eval(nil)
	require.ErrorIs(t, err, ErrTimeout)
	require.ErrorContains(t, err, "evaluation took longer than 10s")
	require.EqualValues(t, 12, reads.Load(), "one read to start, then one per %d iterations until past the deadline", tickEvery)

	// The same program on a clock that stands still finishes quickly when
	// the loop is short.
	p, err = compile("let r = 1..100; all(r, all(r, true))")
	require.NoError(t, err)
	got, err := p.withClock(func() time.Time { return epoch }, time.Nanosecond).Eval(nil)
	require.NoError(t, err)
	require.Equal(t, true, got)
}

func TestCompileCache(t *testing.T) {
	t.Parallel()

	p1, err := Compile("inputs.days * 7")
	require.NoError(t, err)
	p2, err := Compile("inputs.days * 7")
	require.NoError(t, err)
	require.Same(t, p1, p2)
	require.Equal(t, "inputs.days * 7", p1.String())

	_, err = Compile("inputs.days *")
	require.Error(t, err)
}

func TestEvalConcurrently(t *testing.T) {
	t.Parallel()

	p, err := Compile(`join(map(fetch.body.items, upper(.name)), "+") + "/" + string(inputs.days)`)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error)
	for range 8 {
		go func() {
			for range 100 {
				if ctx.Err() != nil {
					break
				}
				v, err := p.Eval(testScope())
				if err == nil && v != "FIRST+SECOND/3" {
					err = errors.New("unexpected result")
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		require.NoError(t, <-errs)
	}
}

// TestGuardedCallsWithUnknownArguments: a guarded builtin whose arguments
// are all read from data (types unknown until the run) compiles and runs;
// join(list, sep) once picked join's one-list form and crashed the
// compiler.
func TestGuardedCallsWithUnknownArguments(t *testing.T) {
	t.Parallel()
	s := &Scope{Nodes: map[string]any{
		"a": map[string]any{"items": []any{"x", "y"}},
		"b": map[string]any{"sep": "-", "n": 3},
	}}
	for _, tc := range []struct{ code, want string }{
		{"join(a.items, b.sep)", "x-y"},
		{"join(['p', 'q'], a.items[0])", "pxq"},
		{"join(a.items)", "xy"},
		{"repeat(b.sep, b.n)", "---"},
		{"replace(join(a.items, b.sep), b.sep, a.items[1])", "xyy"},
	} {
		got, err := Eval(tc.code, s)
		if err != nil {
			t.Fatalf("%s: %v", tc.code, err)
		}
		if got != tc.want {
			t.Fatalf("%s = %v, want %q", tc.code, got, tc.want)
		}
	}
}

// TestMissingValueErrors: a builtin or an operator given a missing value
// fails with what it was given and which path is missing, with the keys
// that were there — never Go's "interface conversion" text, and never a
// value.
func TestMissingValueErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		code        string
		want        []string
		wantMissing string
		wantFields  []string
	}{
		{`upper(fetch.body.nope)`, []string{"a function here takes a string but was given nothing (nil)", "fetch.body.nope is missing (fetch.body has: html, items)"},
			"fetch.body.nope", []string{"html", "items"}},
		{`split(later.text, ",")`, []string{"takes a string but was given nothing (nil)", "later is missing"}, "", nil},
		{`trim(inputs.days)`, []string{"a function here takes a string but was given a number"}, "", nil},
		{`fetch.body.nope + "x"`, []string{"<nil> + string", "fetch.body.nope is missing (fetch.body has: html, items)"},
			"fetch.body.nope", []string{"html", "items"}},
		{`len(inputs.nope)`, []string{"inputs.nope is missing (inputs has: city, days, rate, tags)"},
			"inputs.nope", []string{"city", "days", "rate", "tags"}},
	} {
		t.Run(tt.code, func(t *testing.T) {
			t.Parallel()
			_, err := Eval(tt.code, testScope())
			require.Error(t, err)
			require.NotContains(t, err.Error(), "interface conversion")
			require.NotContains(t, err.Error(), "interface {}")
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
			var xe *Error
			require.ErrorAs(t, err, &xe)
			require.Equal(t, tt.wantMissing, xe.Missing, "the path read that was missing")
			require.Equal(t, tt.wantFields, xe.AvailableFields, "the keys of the object that lacked it")
		})
	}
}

// TestAvailableFieldsAreBounded: an error lists at most MaxAvailableFields
// keys of the object that lacked the one read, the first ones in order,
// and keeps them through a template.
func TestAvailableFieldsAreBounded(t *testing.T) {
	t.Parallel()
	body := map[string]any{}
	for i := range 30 {
		body[fmt.Sprintf("k%02d", i)] = i
	}
	s := &Scope{Nodes: map[string]any{"fetch": map[string]any{"body": body}}}
	tmpl, err := ParseTemplate("n: {{ len(fetch.body.nope) }}")
	require.NoError(t, err)
	_, err = tmpl.Render(s)
	var xe *Error
	require.ErrorAs(t, err, &xe)
	require.Equal(t, "fetch.body.nope", xe.Missing)
	require.Len(t, xe.AvailableFields, MaxAvailableFields)
	require.Equal(t, "k00", xe.AvailableFields[0])
	require.Equal(t, "k19", xe.AvailableFields[MaxAvailableFields-1])
}

// TestNullValueErrors: a key that is there with null is said to be null,
// not missing among the keys that name it.
func TestNullValueErrors(t *testing.T) {
	t.Parallel()
	s := &Scope{Nodes: map[string]any{"p": map[string]any{"nul": nil, "l": 1}}}
	_, err := Eval(`len(p.nul)`, s)
	require.Error(t, err)
	require.Contains(t, err.Error(), "p.nul is null")
	require.NotContains(t, err.Error(), "is missing")
	var xe *Error
	require.ErrorAs(t, err, &xe)
	require.Empty(t, xe.Missing, "no key is missing")
}
