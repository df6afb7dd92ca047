package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// testCheckpoints checks checkpoints.
func testCheckpoints(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()

	t.Run("SaveReplaces", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createRun(t, b.s, "r1", "w", base)

		_, err := b.s.Checkpoint(b.ctx, "r1")
		require.ErrorIs(t, err, store.ErrNotFound, "no checkpoint yet")

		require.NoError(t, b.s.SaveCheckpoint(b.ctx, "r1", []byte(`{"v":1}`)))
		require.NoError(t, b.s.SaveCheckpoint(b.ctx, "r1", []byte{0, 1, 2, 0xff}))

		got, err := b.s.Checkpoint(b.ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, []byte{0, 1, 2, 0xff}, got, "the last checkpoint is kept, byte for byte")
	})

	t.Run("UnknownRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		err := b.s.SaveCheckpoint(b.ctx, "nope", []byte("x"))
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}
