package auth_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/auth"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

func setup(t *testing.T) (*auth.Tokens, context.Context) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "skein.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return auth.New(st), t.Context()
}

func TestCreateThenAuthenticate(t *testing.T) {
	t.Parallel()
	tokens, ctx := setup(t)
	for _, sc := range []auth.Scope{auth.Read, auth.Run, auth.Admin} {
		text, rec, err := tokens.Create(ctx, sc, "ci")
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(text, "skn_"+rec.ID+"_"), text)
		require.NotContains(t, string(rec.Hash), text, "the record holds no token text")
		got, err := tokens.Authenticate(ctx, text)
		require.NoError(t, err)
		require.Equal(t, sc, got)
	}
}

func TestAuthenticateRefuses(t *testing.T) {
	t.Parallel()
	tokens, ctx := setup(t)
	text, rec, err := tokens.Create(ctx, auth.Run, "")
	require.NoError(t, err)
	other := "A"
	if strings.HasSuffix(text, other) {
		other = "B"
	}
	for name, bad := range map[string]string{
		"empty":          "",
		"no prefix":      strings.TrimPrefix(text, "skn_"),
		"unknown id":     "skn_000000000000_" + text[len("skn_"+rec.ID+"_"):],
		"wrong secret":   text[:len(text)-1] + other,
		"no secret part": "skn_" + rec.ID,
		"secret only":    "skn__x",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc, err := tokens.Authenticate(ctx, bad)
			require.ErrorIs(t, err, auth.ErrInvalid)
			require.Equal(t, auth.None, sc)
		})
	}
}

func TestScopes(t *testing.T) {
	t.Parallel()
	require.True(t, auth.Admin.Allows(auth.Run))
	require.True(t, auth.Run.Allows(auth.Read))
	require.False(t, auth.Read.Allows(auth.Run))
	require.True(t, auth.Read.Allows(auth.None))
	sc, err := auth.ParseScope("RUN")
	require.NoError(t, err)
	require.Equal(t, auth.Run, sc)
	_, err = auth.ParseScope("root")
	require.ErrorContains(t, err, "use read, run or admin")
}
