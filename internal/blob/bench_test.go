package blob_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
)

// BenchmarkBackends puts and loads a 10 MiB text through the run folder
// and a shared folder (a new digest each time: every put writes, syncs
// and renames a file).
func BenchmarkBackends(b *testing.B) {
	base := strings.Repeat("0123456789abcdef", 10<<20/16)
	for _, bc := range []struct {
		name string
		open func(b *testing.B) blob.Backend
	}{
		{"RunFolder", func(b *testing.B) blob.Backend {
			st, err := blob.NewStore(b.TempDir(), nil)
			require.NoError(b, err)
			return st.Backend()
		}},
		{"SharedFolder", func(b *testing.B) blob.Backend {
			be, err := blob.NewShared(b.TempDir())
			require.NoError(b, err)
			return be
		}},
	} {
		st := blob.New(bc.open(b), nil)
		var refs []*blob.Blob
		b.Run(bc.name+"/Put10MiB", func(b *testing.B) {
			b.SetBytes(int64(len(base)))
			for i := range b.N {
				v, err := st.Put(base[:len(base)-8] + fmt.Sprintf("%08d", i))
				require.NoError(b, err)
				refs = append(refs, v.(*blob.Blob))
			}
		})
		b.Run(bc.name+"/Load10MiB", func(b *testing.B) {
			b.SetBytes(int64(len(base)))
			for i := range b.N {
				_, err := refs[i%len(refs)].Load()
				require.NoError(b, err)
			}
		})
	}
}
