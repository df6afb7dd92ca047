package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// testTokens checks API tokens.
func testTokens(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()

	t.Run("RoundTripAndUniqueID", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		hash := make([]byte, 32)
		hash[0], hash[31] = 0xff, 0x01
		tok := &store.Token{ID: "abc123", Name: "ci", Scope: "run", Hash: hash}
		require.NoError(t, b.s.CreateToken(b.ctx, tok))
		require.False(t, tok.CreatedAt.IsZero(), "CreatedAt is written back")

		got, err := b.s.Token(b.ctx, "abc123")
		require.NoError(t, err)
		require.Equal(t, "ci", got.Name)
		require.Equal(t, "run", got.Scope)
		require.Equal(t, hash, got.Hash, "the hash comes back byte for byte")
		require.True(t, got.CreatedAt.Equal(tok.CreatedAt.Truncate(time.Microsecond)))

		err = b.s.CreateToken(b.ctx, &store.Token{ID: "abc123", Scope: "admin", Hash: hash})
		require.ErrorIs(t, err, store.ErrExists)
		got, err = b.s.Token(b.ctx, "abc123")
		require.NoError(t, err)
		require.Equal(t, "run", got.Scope, "a second token with the id changes nothing")

		_, err = b.s.Token(b.ctx, "nope")
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("ListAndRevoke", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		all, err := b.s.Tokens(b.ctx)
		require.NoError(t, err)
		require.Empty(t, all)
		for i, id := range []string{"t2", "t1", "t3"} {
			require.NoError(t, b.s.CreateToken(b.ctx, &store.Token{ID: id, Name: "n" + id, Scope: "read",
				Hash: []byte{byte(i + 1)}, CreatedAt: base.Add(time.Duration(i) * time.Second)}))
		}
		all, err = b.s.Tokens(b.ctx)
		require.NoError(t, err)
		var ids []string
		for _, tk := range all {
			ids = append(ids, tk.ID)
		}
		require.Equal(t, []string{"t2", "t1", "t3"}, ids, "oldest first")
		require.Equal(t, "nt1", all[1].Name)
		require.Equal(t, []byte{2}, all[1].Hash)
		require.True(t, all[1].CreatedAt.Equal(base.Add(time.Second)))

		require.NoError(t, b.s.DeleteToken(b.ctx, "t1"))
		_, err = b.s.Token(b.ctx, "t1")
		require.ErrorIs(t, err, store.ErrNotFound, "a revoked token is gone")
		require.ErrorIs(t, b.s.DeleteToken(b.ctx, "t1"), store.ErrNotFound)
		all, err = b.s.Tokens(b.ctx)
		require.NoError(t, err)
		require.Len(t, all, 2)
	})
}
