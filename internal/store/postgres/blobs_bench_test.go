package postgres_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// BenchmarkBlobs puts and loads a 10 MiB text through the Postgres blob
// backend (a new digest each time, so every put inserts its chunks).
func BenchmarkBlobs(b *testing.B) {
	s := open(b, pgtest.URL(b))
	st := blob.New(s.Blobs(), nil)
	base := strings.Repeat("0123456789abcdef", 10<<20/16)
	var refs []*blob.Blob
	b.Run("Put10MiB", func(b *testing.B) {
		b.SetBytes(int64(len(base)))
		for i := range b.N {
			v, err := st.Put(base[:len(base)-8] + fmt.Sprintf("%08d", i))
			require.NoError(b, err)
			refs = append(refs, v.(*blob.Blob))
		}
	})
	b.Run("Load10MiB", func(b *testing.B) {
		b.SetBytes(int64(len(base)))
		for i := range b.N {
			_, err := refs[i%len(refs)].Load()
			require.NoError(b, err)
		}
	})
}
