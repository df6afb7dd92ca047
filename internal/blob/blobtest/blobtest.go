// Package blobtest is the conformance suite of blob backends: every
// Backend (the run folder, a shared folder, Postgres) runs it, so each
// keeps and reads back big values alike.
package blobtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
)

// Open returns a new handle on one place that keeps blobs: called twice,
// it gives two handles on the same place, as two workers have.
type Open func() blob.Backend

// Run runs the suite. setup is called once per test and returns the
// opener of a fresh place.
func Run(t *testing.T, setup func(t *testing.T) Open) {
	t.Helper()
	// A reference written by one handle is read through another mounted
	// one (a worker's step read by the server) or by its path.
	read := func(t *testing.T, open Open, v any) any {
		t.Helper()
		b, ok := v.(*blob.Blob)
		require.True(t, ok, "expected a *blob.Blob, got %T", v)
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		back, ok := blob.FromRef(m)
		require.True(t, ok, "the reference %s decodes", raw)
		other := open()
		defer blob.Mount(other)()
		got, err := back.Load()
		require.NoError(t, err)
		return got
	}

	t.Run("TextRoundTrip", func(t *testing.T) {
		t.Parallel()
		open := setup(t)
		st := blob.New(open(), nil)
		text := strings.Repeat("héllo wörld\n", 10_000) + "\x00\xff" // not UTF-8: kept as it is
		v, err := st.Put(text)
		require.NoError(t, err)
		b := v.(*blob.Blob)
		require.Equal(t, blob.Text, b.Type())
		require.Equal(t, int64(len(text)), b.Size())
		require.Equal(t, digest(text), b.Digest())
		got, err := b.Load()
		require.NoError(t, err)
		require.Equal(t, text, got, "the blob reads back as it was written")
		require.Equal(t, text, read(t, open, v), "a decoded reference reads back through another handle")
	})

	t.Run("JSONRoundTrip", func(t *testing.T) {
		t.Parallel()
		open := setup(t)
		st := blob.New(open(), nil)
		items := make([]any, 2000)
		for i := range items {
			items[i] = map[string]any{"n": i, "name": "item <" + strings.Repeat("x", 20) + ">", "ok": i%2 == 0, "f": 1.5}
		}
		val := map[string]any{"items": items, "none": nil}
		v, err := st.PutJSON(val)
		require.NoError(t, err)
		require.Equal(t, blob.JSON, v.(*blob.Blob).Type())
		require.Equal(t, val, read(t, open, v), "a list or object reads back equal")
	})

	t.Run("WriterRoundTrip", func(t *testing.T) {
		t.Parallel()
		open := setup(t)
		st := blob.New(open(), nil)
		w, err := st.Create()
		require.NoError(t, err)
		var want strings.Builder
		for i := range 300 {
			piece := strings.Repeat(string(rune('a'+i%26)), 4096)
			want.WriteString(piece)
			_, err := io.WriteString(w, piece)
			require.NoError(t, err)
		}
		v, err := w.Commit()
		require.NoError(t, err)
		require.Equal(t, want.String(), read(t, open, v), "a text written piece by piece reads back whole")
		rc, err := v.(*blob.Blob).Open()
		require.NoError(t, err)
		defer rc.Close()
		streamed, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.Equal(t, want.String(), string(streamed), "Open streams the same bytes")
	})

	t.Run("ConcurrentPutsOfOneDigest", func(t *testing.T) {
		t.Parallel()
		open := setup(t)
		text := strings.Repeat("same value, many writers ", 50_000)
		const writers = 8
		var wg sync.WaitGroup
		got := make([]any, writers)
		errs := make([]error, writers)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := blob.New(open(), nil) // each its own handle: a worker each
				if i%2 == 0 {
					got[i], errs[i] = st.Put(text)
					return
				}
				w, err := st.Create()
				if err != nil {
					errs[i] = err
					return
				}
				if _, err := io.WriteString(w, text); err != nil {
					errs[i] = err
					return
				}
				got[i], errs[i] = w.Commit()
			}()
		}
		wg.Wait()
		for i := range writers {
			require.NoError(t, errs[i], "writer %d", i)
			require.Equal(t, digest(text), got[i].(*blob.Blob).Digest())
		}
		be := open()
		rc, err := be.Open(t.Context(), digest(text))
		require.NoError(t, err)
		defer rc.Close()
		data, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.True(t, bytes.Equal([]byte(text), data), "one whole blob is kept (%d bytes read, %d written)", len(data), len(text))
	})

	t.Run("MissingBlob", func(t *testing.T) {
		t.Parallel()
		open := setup(t)
		be := open()
		_, err := be.Open(t.Context(), digest("never written"))
		require.ErrorIs(t, err, blob.ErrNotFound)

		st := blob.New(be, nil)
		v, err := st.Put(strings.Repeat("kept ", 1000))
		require.NoError(t, err)
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		// The same reference, naming a digest that was never written.
		raw = bytes.ReplaceAll(raw, []byte(v.(*blob.Blob).Digest()), []byte(digest("never written")))
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		ghost, ok := blob.FromRef(m)
		require.True(t, ok)
		defer blob.Mount(open())()
		_, err = ghost.Load()
		require.ErrorIs(t, err, blob.ErrNotFound, "a reference to a blob that is not kept fails to load, saying so")
	})

	t.Run("SecretsAreNeverKept", func(t *testing.T) {
		t.Parallel()
		open := setup(t)
		const secret = "sk-live-0123456789"
		st := blob.New(open(), func(s string) bool { return strings.Contains(s, secret) })
		text := strings.Repeat("x", 100_000) + secret

		v, err := st.Put(text)
		require.NoError(t, err)
		require.Equal(t, text, v, "Put returns a text holding a secret as it is")

		w, err := st.Create()
		require.NoError(t, err)
		_, err = io.WriteString(w, text)
		require.NoError(t, err)
		v, err = w.Commit()
		require.NoError(t, err)
		require.Equal(t, text, v, "Commit returns a text holding a secret as it is")

		obj := map[string]any{"token": text}
		v, err = st.PutJSON(obj)
		require.NoError(t, err)
		require.Equal(t, obj, v, "PutJSON returns an object holding a secret as it is")

		be := open()
		for _, sum := range []string{digest(text), digest(`{"token":"` + text + `"}`)} {
			_, err := be.Open(t.Context(), sum)
			require.ErrorIs(t, err, blob.ErrNotFound, "nothing holding the secret was kept")
		}
	})

	t.Run("AdoptFromAnotherStore", func(t *testing.T) {
		t.Parallel()
		open := setup(t)
		other, err := blob.NewStore(t.TempDir(), nil)
		require.NoError(t, err)
		text := strings.Repeat("pinned output ", 10_000)
		v, err := other.Put(text)
		require.NoError(t, err)
		st := blob.New(open(), nil)
		nv, err := st.Adopt(v.(*blob.Blob))
		require.NoError(t, err)
		nb := nv.(*blob.Blob)
		require.Equal(t, st.Backend().Kind(), nb.Store())
		require.Equal(t, text, read(t, open, nb), "an adopted blob reads back from this store")
		again, err := st.Adopt(nb)
		require.NoError(t, err)
		require.Same(t, nb, again, "a blob of this store is adopted as it is")
	})
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
