package expr

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNonFiniteResultIsAnError(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		code string
		want string
	}{
		{name: "division by zero", code: "1 / 0", want: "the value is +Inf"},
		{name: "negative division by zero", code: "-1 / 0", want: "the value is -Inf"},
		{name: "zero over zero", code: "0.0 / 0", want: "the value is NaN"},
		{name: "in a list", code: "[1, 2 / 0]", want: "the value holds +Inf at [1]"},
		{name: "in a map", code: "{a: {b: [0.0 / 0]}}", want: "the value holds NaN at .a.b[0]"},
		{name: "built by a predicate", code: "map([1, 0], 1 / #)", want: "the value holds +Inf at [1]"},
		{name: "from the scope's data", code: "inputs.days / 0", want: "the value is +Inf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Eval(tt.code, testScope())
			require.Error(t, err)
			require.ErrorIs(t, err, ErrNotFinite)
			require.Contains(t, err.Error(), tt.want)
			var xe *Error
			require.True(t, errors.As(err, &xe))
			require.Equal(t, 0, xe.Offset, "the error points at the expression")
		})
	}
}

func TestFiniteResultsPass(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"1 / 2", "[1.5, {a: 2 / 4}]", "inputs.rate", "fetch.body.items"} {
		v, err := Eval(code, testScope())
		require.NoError(t, err, code)
		_, err = json.Marshal(v)
		require.NoError(t, err, "%s gives a value a run can record", code)
	}
}

func TestNonFiniteInTemplate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		src    string
		offset int
	}{
		{name: "single", src: "{{ 1 / 0 }}", offset: 3},
		{name: "in text", src: "ratio: {{ 0.0 / 0 }}!", offset: 10},
		{name: "second segment", src: "{{ 1 }} and {{  [1 / 0] }}", offset: 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl, err := ParseTemplate(tt.src)
			require.NoError(t, err)
			_, err = tmpl.Render(testScope())
			require.ErrorIs(t, err, ErrNotFinite)
			var xe *Error
			require.True(t, errors.As(err, &xe))
			require.Equal(t, tt.offset, xe.Offset)
			require.Contains(t, err.Error(), `template "`+tt.src+`"`)
		})
	}
}

func TestInspectWarnsOfConstantDivisionByZero(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		code    string
		offsets []int
	}{
		{name: "integer zero", code: "a.n / 0", offsets: []int{6}},
		{name: "float zero", code: "1 + x / 0.0", offsets: []int{8}},
		{name: "remainder", code: "x % 0", offsets: []int{4}},
		{name: "two", code: "[1 / 0, 2 / 0]", offsets: []int{5, 12}},
		{name: "nonzero divisor", code: "x / 2", offsets: nil},
		{name: "variable divisor", code: "x / y", offsets: nil},
		{name: "plain path", code: "a.b", offsets: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, warnings, err := Inspect(tt.code)
			require.NoError(t, err)
			var offsets []int
			for _, w := range warnings {
				require.Contains(t, w.Msg, "by the constant 0")
				offsets = append(offsets, w.Offset)
			}
			require.Equal(t, tt.offsets, offsets)
		})
	}
}
