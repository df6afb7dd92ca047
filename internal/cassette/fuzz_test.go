package cassette_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/cassette"
)

// FuzzRead: any file is read without a panic, and a cassette that reads
// is written and read back the same.
func FuzzRead(f *testing.F) {
	for _, seed := range []string{
		"{\"cassette\":1,\"workflow\":\"w\",\"run_id\":\"r\",\"started_at\":\"2026-11-24T07:00:00Z\"}\n",
		"{\"cassette\":1}\n{\"kind\":\"http\",\"node\":\"a\",\"visit\":1,\"attempt\":1,\"hash\":\"h\",\"request\":{\"method\":\"GET\"},\"response\":{\"status\":200}}\n",
		"{\"cassette\":1}\n{\"kind\":\"shell\",\"hash\":\"h\",\"request\":null,\"error\":{\"message\":\"boom\",\"permanent\":true}}\n\n",
		"{\"cassette\":2}\n",
		"",
		"nope",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "c.jsonl")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		c, err := cassette.Read(path)
		if err != nil {
			return
		}
		again := filepath.Join(dir, "again.jsonl")
		require.NoError(t, c.Write(again))
		back, err := cassette.Read(again)
		require.NoError(t, err)
		require.Equal(t, len(c.Entries), len(back.Entries))
		for i := range c.Entries {
			require.Equal(t, c.Entries[i].Hash, back.Entries[i].Hash)
			require.Equal(t, c.Entries[i].Kind, back.Entries[i].Kind)
		}
	})
}
