package postgres_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/blob/blobtest"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

func TestBlobsConformance(t *testing.T) {
	t.Parallel()
	blobtest.Run(t, func(t *testing.T) blobtest.Open {
		url := pgtest.URL(t)
		return func() blob.Backend { return open(t, url).Blobs() }
	})
}

// A value of several chunks is kept in chunks and read back whole, and
// its reference names the database, not a file.
func TestBlobsChunked(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.URL(t))
	text := strings.Repeat("0123456789abcdef", 3*postgres.ChunkSize/16+100)
	v, err := blob.New(s.Blobs(), nil).Put(text)
	require.NoError(t, err)
	b := v.(*blob.Blob)
	require.Equal(t, postgres.KindBlobs, b.Store())
	require.Empty(t, b.Path())
	var chunks int
	require.NoError(t, s.Pool().QueryRow(t.Context(), `SELECT count(*) FROM blob_chunks WHERE digest = $1`, b.Digest()).Scan(&chunks))
	require.Equal(t, 4, chunks)
	got, err := b.Load()
	require.NoError(t, err)
	require.Equal(t, text, got)
}
