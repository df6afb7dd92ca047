package expr

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Filters and functions of template languages get what to write instead.
func TestOtherLanguagesFilters(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]string{
		`inputs.name | upper`:        `a pipe passes its left side to a call: write | upper()`,
		`inputs.name|length`:         `a pipe passes its left side to a call, and there is no function length: write len(x)`,
		`inputs.name | trim | upper`: `a pipe passes its left side to a call: write | trim()`,
		`default(inputs.name, "x")`:  `unknown function default; write x ?? fallback`,
		`inputs.name | default("x")`: `unknown function default; write x ?? fallback`,
		`length(inputs.tags)`:        `unknown function length; write len(x)`,
		`(inputs.a || inputs.b`:      `unexpected token EOF`,
		`inputs.a || inputs.b || `:   `unexpected token EOF`,
	} {
		_, _, err := Inspect(code)
		require.ErrorContains(t, err, want, code)
	}
	for _, code := range []string{`inputs.name | upper()`, `inputs.a || inputs.b`, `inputs.a ?? "x"`} {
		_, _, err := Inspect(code)
		require.NoError(t, err, code)
	}
}
