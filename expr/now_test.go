package expr

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// now() reads the scope's clock, in every form that calls it, so that a
// run's templates read the run's clock (a test's, a replay's recorded one).
func TestNowReadsTheScopesClock(t *testing.T) {
	t.Parallel()
	at := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	s := &Scope{
		Now:   func() time.Time { return at },
		Nodes: map[string]any{"now": map[string]any{"text": "a node named now"}},
	}
	tests := []struct {
		code string
		want any
	}{
		{code: "now()", want: at},
		{code: "::now()", want: at},
		{code: "now().Year()", want: 2031},
		{code: `now(timezone("Asia/Tokyo")).Hour()`, want: 16},
		{code: `now().Format("2006-01-02")`, want: "2031-05-06"},
		{code: "now() - now()", want: time.Duration(0)},
		{code: "map([1, 2], now().Day() + #)", want: []any{7, 8}},
		{code: "now.text", want: "a node named now"},
	}
	for _, tt := range tests {
		got, err := Eval(tt.code, s)
		require.NoError(t, err, tt.code)
		require.Equal(t, tt.want, got, tt.code)
	}

	tmpl, err := ParseTemplate(`{{ now().Format("15:04") }} {{ now.text }}`)
	require.NoError(t, err)
	got, err := tmpl.Render(s)
	require.NoError(t, err)
	require.Equal(t, "07:08 a node named now", got)

	_, err = Eval(`now("UTC")`, s)
	require.ErrorContains(t, err, "now")
}

// A call of now() with what is not a timezone is refused when the
// expression is compiled (by skein validate), not when a run reaches it;
// so is one of a guarded builtin with an argument of the wrong type.
func TestNowArgumentsAreChecked(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]string{
		`now("UTC")`:              `now() takes a timezone, not a value of type string: now(timezone("Europe/Paris"))`,
		`now(1)`:                  `now() takes a timezone, not a value of type int`,
		`now(timezone("UTC"), 1)`: `too many arguments to call now`,
		`upper(1, 2)`:             `too many arguments to call upper`,
	} {
		_, err := Compile(code)
		require.ErrorContains(t, err, want, code)
	}
	for _, code := range []string{`now(x)`, `now(timezone(inputs.tz))`, `upper(x)`, `join(l, s)`, `repeat("a", n)`} {
		_, err := Compile(code)
		require.NoError(t, err, code)
	}

	// Inspect, validate's, also looks up a timezone named by a literal.
	_, _, err := Inspect(`now(timezone("Europe/Pariss")).Hour()`)
	require.ErrorIs(t, err, ErrCall)
	require.ErrorContains(t, err, `timezone("Europe/Pariss"): no such timezone on this machine`)
	var xe *Error
	require.ErrorAs(t, err, &xe)
	require.Equal(t, 13, xe.Offset, "at the name")
	for _, code := range []string{`now(timezone("UTC"))`, `now(timezone("Asia/Tokyo"))`, `now(timezone(inputs.tz))`} {
		_, _, err := Inspect(code)
		require.NoError(t, err, code)
	}
}

// Without a clock in the scope, now() is the machine's time.
func TestNowWithoutAClock(t *testing.T) {
	t.Parallel()
	before := time.Now()
	got, err := Eval("now()", &Scope{})
	require.NoError(t, err)
	require.False(t, got.(time.Time).Before(before))
	got, err = Eval("now()", nil)
	require.NoError(t, err)
	require.False(t, got.(time.Time).Before(before))
}
