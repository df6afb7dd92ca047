package blob_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/blob/blobtest"
)

func TestRunFolderConformance(t *testing.T) {
	t.Parallel()
	blobtest.Run(t, func(t *testing.T) blobtest.Open {
		runDir := t.TempDir()
		return func() blob.Backend {
			st, err := blob.NewStore(runDir, nil)
			require.NoError(t, err)
			return st.Backend()
		}
	})
}

func TestSharedFolderConformance(t *testing.T) {
	t.Parallel()
	blobtest.Run(t, func(t *testing.T) blobtest.Open {
		dir := "file://" + t.TempDir()
		return func() blob.Backend {
			be, err := blob.NewShared(dir)
			require.NoError(t, err)
			return be
		}
	})
}

// A shared folder's references name the store and the digest, never a
// path of the machine that wrote them.
//
// Not parallel: it reads a shared reference where no shared folder is
// mounted, and the conformance tests mount theirs for the whole process
// (blob.Mount); a test that is not parallel runs before the parallel ones
// start.
func TestSharedReferenceHasNoPath(t *testing.T) {
	dir := t.TempDir()
	be, err := blob.NewShared(dir)
	require.NoError(t, err)
	v, err := blob.New(be, nil).Put(strings.Repeat("shared ", 20_000))
	require.NoError(t, err)
	b := v.(*blob.Blob)
	raw, err := json.Marshal(b)
	require.NoError(t, err)
	require.JSONEq(t, `{"$skein.blob": {"sha256": "`+b.Digest()+`", "size": 140000, "type": "text", "store": "shared"}}`, string(raw))
	require.FileExists(t, filepath.Join(dir, b.Digest()[:2], b.Digest()))

	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	back, ok := blob.FromRef(m)
	require.True(t, ok)
	_, err = back.Load()
	require.ErrorContains(t, err, "this process has none open", "a process that mounted no shared folder says so")
}

// TestSharedFolderIsAFolder: a URL of another scheme is refused, not
// made into a folder named after it; a file:// URL of another host too.
func TestSharedFolderIsAFolder(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	require.NoError(t, err)
	for dir, want := range map[string]string{
		"s3://bucket/blobs":      `the blob folder "s3://bucket/blobs": s3:// is not a folder`,
		"https://example.com/x":  "https:// is not a folder",
		"file://elsewhere/mnt/x": "a file:// URL names a local path",
		"":                       "no path given",
	} {
		_, err := blob.NewShared(dir)
		require.ErrorContains(t, err, want, dir)
	}
	_, err = os.Stat(filepath.Join(wd, "s3:"))
	require.ErrorIs(t, err, os.ErrNotExist, "no folder named after the URL")
}
