package redact_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/redact"
)

func TestCacheSharesARedactorPerSetOfSecrets(t *testing.T) {
	t.Parallel()
	var c redact.Cache
	require.Nil(t, c.For(nil), "no secrets, nothing to mask")
	a := c.For(map[string]string{"A": "alpha-secret", "B": "beta-secret"})
	b := c.For(map[string]string{"X": "beta-secret", "Y": "alpha-secret"})
	require.Same(t, a, b, "the same values, under any names, share one Redactor")
	require.Equal(t, "*** and ***", a.String("alpha-secret and beta-secret"))
	other := c.For(map[string]string{"A": "gamma-secret"})
	require.NotSame(t, a, other)
	require.Equal(t, "alpha-secret ***", other.String("alpha-secret gamma-secret"))
}

func TestCacheStaysBounded(t *testing.T) {
	t.Parallel()
	var c redact.Cache
	first := c.For(map[string]string{"S": "secret-0"})
	for i := 1; i <= redact.MaxCached; i++ {
		red := c.For(map[string]string{"S": fmt.Sprintf("secret-%d", i)})
		require.Equal(t, "***", red.String(fmt.Sprintf("secret-%d", i)))
	}
	again := c.For(map[string]string{"S": "secret-0"})
	require.NotSame(t, first, again, "a full cache forgot what it held")
	require.Equal(t, "***", again.String("secret-0"), "and still masks")
}
