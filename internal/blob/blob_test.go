package blob_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
)

type bundle struct {
	runDir string
	st     *blob.Store
}

func setup(t *testing.T, holdsSecret func(string) bool) *bundle {
	t.Helper()
	runDir := t.TempDir()
	st, err := blob.NewStore(runDir, holdsSecret)
	require.NoError(t, err)
	return &bundle{runDir: runDir, st: st}
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// files lists the blobs folder, temporary files included.
func (b *bundle) files(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(b.runDir, blob.Folder))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestPutKeepsOneFilePerContent(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	text := strings.Repeat("abc\x00\xff", 100_000) // not UTF-8: kept as it is
	v1, err := b.st.Put(text)
	require.NoError(t, err)
	v2, err := b.st.Put(text)
	require.NoError(t, err)
	b1, ok := v1.(*blob.Blob)
	require.True(t, ok)
	require.Equal(t, digest(text), b1.Digest())
	require.Equal(t, int64(len(text)), b1.Size())
	require.Equal(t, blob.Text, b1.Type())
	require.Equal(t, b1.Path(), v2.(*blob.Blob).Path())
	require.Equal(t, []string{digest(text)}, b.files(t), "one file, no temporary file left")

	got, err := b1.Load()
	require.NoError(t, err)
	require.Equal(t, text, got)
	raw, err := os.ReadFile(b1.Path())
	require.NoError(t, err)
	require.Equal(t, text, string(raw), "the file holds the text's bytes")
}

func TestReferenceRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	v, err := b.st.PutJSON(map[string]any{"items": []any{1, 2.5, "x", nil, true}})
	require.NoError(t, err)
	bl := v.(*blob.Blob)
	data, err := json.Marshal(map[string]any{"body": bl})
	require.NoError(t, err)
	require.Contains(t, string(data), `"$skein.blob":{"sha256":"`+bl.Digest()+`","size":`)
	require.Contains(t, string(data), `"type":"json","path":"`+bl.Path()+`"`)

	var decoded map[string]any
	require.NoError(t, json.Unmarshal(data, &decoded))
	back, ok := blob.FromRef(decoded["body"].(map[string]any))
	require.True(t, ok)
	require.Equal(t, bl.Path(), back.Path())
	got, err := back.Load()
	require.NoError(t, err)
	require.Equal(t, map[string]any{"items": []any{1, 2.5, "x", nil, true}}, got)

	for name, m := range map[string]map[string]any{
		"another key beside": {blob.Key: decoded["body"].(map[string]any)[blob.Key], "x": 1},
		"bad digest":         {blob.Key: map[string]any{"sha256": "abc", "size": 1, "type": "text", "path": "/p"}},
		"unknown type":       {blob.Key: map[string]any{"sha256": bl.Digest(), "size": 1, "type": "gif", "path": "/p"}},
		"no path":            {blob.Key: map[string]any{"sha256": bl.Digest(), "size": 1, "type": "text"}},
	} {
		_, ok := blob.FromRef(m)
		require.False(t, ok, name)
	}
}

func TestASecretNeverGoesToAFile(t *testing.T) {
	t.Parallel()
	b := setup(t, func(s string) bool { return strings.Contains(s, "hunter2hunter2") })
	text := strings.Repeat("x", 1<<20) + "hunter2hunter2"
	v, err := b.st.Put(text)
	require.NoError(t, err)
	require.Equal(t, text, v, "the value stays in memory")
	v, err = b.st.PutJSON([]any{text})
	require.NoError(t, err)
	require.Equal(t, []any{text}, v)

	w, err := b.st.Create()
	require.NoError(t, err)
	_, err = io.WriteString(w, text)
	require.NoError(t, err)
	v, err = w.Commit()
	require.NoError(t, err)
	require.Equal(t, text, v)
	require.Empty(t, b.files(t), "nothing of it is left on disk")
}

func TestWriterStreamsAndAborts(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	w, err := b.st.Create()
	require.NoError(t, err)
	var all strings.Builder
	for i := range 100 {
		part := strings.Repeat(string(rune('a'+i%26)), 10_000)
		all.WriteString(part)
		_, err := io.WriteString(w, part)
		require.NoError(t, err)
	}
	v, err := w.Commit()
	require.NoError(t, err)
	require.Equal(t, digest(all.String()), v.(*blob.Blob).Digest())
	got, err := v.(*blob.Blob).Load()
	require.NoError(t, err)
	require.Equal(t, all.String(), got)

	w, err = b.st.Create()
	require.NoError(t, err)
	_, err = io.WriteString(w, "dropped")
	require.NoError(t, err)
	w.Abort()
	require.Equal(t, []string{digest(all.String())}, b.files(t))
}

func TestAdoptLinksAnotherRunsBlob(t *testing.T) {
	t.Parallel()
	old := setup(t, nil)
	v, err := old.st.Put(strings.Repeat("pinned ", 100_000))
	require.NoError(t, err)
	cur := setup(t, nil)
	got, err := cur.st.Adopt(v.(*blob.Blob))
	require.NoError(t, err)
	nb := got.(*blob.Blob)
	require.Equal(t, filepath.Join(cur.runDir, blob.Folder, nb.Digest()), nb.Path())
	require.NoError(t, os.RemoveAll(old.runDir), "the old run is pruned")
	text, err := nb.Load()
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("pinned ", 100_000), text)

	same, err := cur.st.Adopt(nb)
	require.NoError(t, err)
	require.Same(t, nb, same, "a blob of this store is itself")
}

func TestResolve(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	text := strings.Repeat("r", blob.InlineLimit+1)
	bl, err := b.st.Put(text)
	require.NoError(t, err)
	in := map[string]any{"a": []any{1, map[string]any{"t": bl}}, "b": "small"}
	out, err := blob.Resolve(in)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"a": []any{1, map[string]any{"t": text}}, "b": "small"}, out)
	require.Same(t, bl, in["a"].([]any)[1].(map[string]any)["t"], "the input is not modified")

	plain := map[string]any{"x": []any{1, "y"}}
	out, err = blob.Resolve(plain)
	require.NoError(t, err)
	require.Equal(t, plain, out)

	require.NoError(t, os.Remove(bl.(*blob.Blob).Path()))
	_, err = blob.Resolve(in)
	require.ErrorContains(t, err, "reading a big value")
}

func TestPreview(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	long, err := b.st.Put(strings.Repeat("é", 100))
	require.NoError(t, err)
	short, err := b.st.Put("short")
	require.NoError(t, err)
	list, err := b.st.PutJSON([]any{1, 2})
	require.NoError(t, err)
	in := map[string]any{"long": long, "nested": []any{short, list}, "n": 1}
	got := blob.Preview(in, 11)
	require.Equal(t, map[string]any{"long": "ééééé … (200 bytes)", "nested": []any{"short", []any{1, 2}}, "n": 1}, got)
	require.Same(t, long, in["long"], "the input is not modified")
	require.Equal(t, map[string]any{"big": list}, blob.Preview(map[string]any{"big": list}, 2), "a longer list stays a reference")
}

func TestReplace(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	long, err := b.st.Put(strings.Repeat("é", 100))
	require.NoError(t, err)
	in := map[string]any{"long": long, "nested": []any{long, "text"}, "n": 1}
	named := func(x *blob.Blob) (any, bool) { return x.RefAt("runs/x/blobs/" + x.Digest()), true }
	got := blob.Replace(in, named)
	ref := map[string]any{"$skein.blob": map[string]any{"sha256": long.(*blob.Blob).Digest(), "size": int64(200), "type": "text", "path": "runs/x/blobs/" + long.(*blob.Blob).Digest()}}
	require.Equal(t, map[string]any{"long": ref, "nested": []any{ref, "text"}, "n": 1}, got)
	require.Same(t, long, in["long"], "the input is not modified")
	require.Same(t, long, in["nested"].([]any)[0], "the input is not modified")

	plain := map[string]any{"n": 1, "list": []any{"a"}}
	require.Equal(t, plain, blob.Replace(plain, named), "nothing to replace")
	require.Nil(t, blob.Replace(map[string]any(nil), named).(map[string]any))
}

func TestRemoveStale(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	require.NoError(t, b.st.RemoveStale(), "no folder yet")
	v, err := b.st.Put(strings.Repeat("kept", 1000))
	require.NoError(t, err)
	stale := filepath.Join(b.st.Dir(), ".tmp-12345")
	require.NoError(t, os.WriteFile(stale, []byte("half a value"), 0o644))
	require.NoError(t, b.st.RemoveStale())
	require.Equal(t, []string{v.(*blob.Blob).Digest()}, b.files(t))

	// A file where the folder goes: nothing stale to remove; writing a
	// blob says what is wrong.
	broken := setup(t, nil)
	require.NoError(t, os.MkdirAll(filepath.Dir(broken.st.Dir()), 0o755))
	require.NoError(t, os.WriteFile(broken.st.Dir(), []byte("a file"), 0o644))
	require.NoError(t, broken.st.RemoveStale())
	_, err = broken.st.Put(strings.Repeat("kept", 1000))
	require.ErrorContains(t, err, "is not a folder")
}
