package web_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/web"
)

// TestAssetsFresh: the embedded assets were built from the sources in
// web/ as they are (make web rebuilds them). It hashes the sources as
// web/build.mjs does, without Node.
func TestAssetsFresh(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "web")
	var files []string
	require.NoError(t, filepath.WalkDir(filepath.Join(root, "src"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		files = append(files, filepath.ToSlash(rel))
		return err
	}))
	files = append(files, "build.mjs", "package.json", "package-lock.json")
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		h.Write([]byte(f + "\x00"))
		h.Write(data)
		h.Write([]byte("\x00"))
	}
	raw, err := fs.ReadFile(web.Assets(), "manifest.json")
	require.NoError(t, err, "the assets have no manifest.json: run make web")
	var m struct {
		Sources string   `json:"sources"`
		Files   []string `json:"files"`
	}
	require.NoError(t, json.Unmarshal(raw, &m))
	require.Equal(t, files, m.Files, "the assets were built from other files than web/ holds: run make web")
	require.Equal(t, hex.EncodeToString(h.Sum(nil)), m.Sources, "the embedded assets are stale: web/ changed since they were built; run make web and commit internal/web/assets")
	for _, name := range []string{"index.html", "app.js", "app.css"} {
		data, err := fs.ReadFile(web.Assets(), name)
		require.NoError(t, err)
		require.NotEmpty(t, data, name)
		// Nothing is fetched from elsewhere: no absolute URLs to load.
		require.False(t, bytes.Contains(data, []byte("https://fonts.")), "%s loads a web font", name)
	}
}
