package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

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

// A blob is read while a transaction holds the store's only connection
// (the outputs of a queued run are rendered in the transaction that ends
// it): the blob store has connections of its own, so the read does not
// wait for the transaction.
func TestBlobsReadBesideAnOpenTransaction(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	s, err := postgres.OpenWithOptions(t.Context(), url, postgres.Options{MaxConns: 1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	text := strings.Repeat("read me ", 20_000)
	v, err := blob.New(s.Blobs(), nil).Put(text)
	require.NoError(t, err)

	tx, err := s.Pool().Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(t.Context())) }()
	ref := v.(*blob.Blob)
	raw, err := json.Marshal(ref)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	decoded, ok := blob.FromRef(m)
	require.True(t, ok)
	defer blob.Mount(s.Blobs())()
	done := make(chan error, 1)
	go func() {
		got, err := decoded.Load()
		if err == nil && got != text {
			err = fmt.Errorf("read %d bytes, want %d", len(got.(string)), len(text))
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("reading a blob waited for the transaction that holds the store's connection")
	}
}
