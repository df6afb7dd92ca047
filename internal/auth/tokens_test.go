package auth_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/auth"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
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
	for _, sc := range []auth.Scope{auth.Read, auth.Run, auth.Edit, auth.Admin} {
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
	require.ErrorContains(t, err, "use read, run, edit or admin")
}

// A token is stored with its scope's name, not its number: the tokens made
// before the edit scope came between run and admin keep their powers.
// Both dialects keep it as text.
func TestStoredScopesKeepTheirPowers(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T) store.Store{
		"sqlite": func(t *testing.T) store.Store {
			st, err := sqlite.Open(filepath.Join(t.TempDir(), "skein.db"))
			require.NoError(t, err)
			return st
		},
		"postgres": func(t *testing.T) store.Store {
			st, err := postgres.Open(t.Context(), pgtest.URL(t))
			require.NoError(t, err)
			return st
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			t.Cleanup(func() { _ = st.Close() })
			storedScopes(t, st)
		})
	}
}

func storedScopes(t *testing.T, st store.Store) {
	tokens, ctx := auth.New(st), t.Context()
	for _, tc := range []struct {
		scope    auth.Scope
		stored   string
		mayEdit  bool
		mayAdmin bool
	}{
		{auth.Run, "run", false, false},
		{auth.Edit, "edit", true, false},
		{auth.Admin, "admin", true, true},
	} {
		text, rec, err := tokens.Create(ctx, tc.scope, "")
		require.NoError(t, err)
		stored, err := st.Token(ctx, rec.ID)
		require.NoError(t, err)
		require.Equal(t, tc.stored, stored.Scope, "the store keeps the scope's name")
		got, err := tokens.Authenticate(ctx, text)
		require.NoError(t, err)
		require.Equal(t, tc.mayEdit, got.Allows(auth.Edit), "%s may edit", tc.stored)
		require.Equal(t, tc.mayAdmin, got.Allows(auth.Admin), "%s may administer", tc.stored)
	}
	require.True(t, auth.Edit.Allows(auth.Run), "edit may do what run may")
	require.False(t, auth.Run.Allows(auth.Edit))
	sc, err := auth.ParseScope("edit")
	require.NoError(t, err)
	require.Equal(t, auth.Edit, sc)
}
