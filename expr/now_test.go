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
